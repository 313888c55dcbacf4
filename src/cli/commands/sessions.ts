import { Command, Option } from 'commander';
import { collect } from '../../api/client.ts';
import type { TunnelSession } from '../../api/schemas/agents.ts';
import { parseDuration } from '../../operator/config.ts';
import { agentCommand, explain, upgrade } from '../agent-commands.ts';
import { clientFrom, nonEmptyId, withApiOptions } from '../api-options.ts';
import { CliError, type CliIO, EXIT } from '../io.ts';
import { age, type Column, parseFormat, render } from '../output.ts';

const columns = (now: number): Column<TunnelSession>[] => [
  { name: 'ID', value: (s) => s.id },
  { name: 'VERSION', value: (s) => s.agent_version },
  { name: 'OS', value: (s) => s.os },
  { name: 'REGION', value: (s) => s.region },
  { name: 'IP', value: (s) => s.ip },
  { name: 'TRANSPORT', value: (s) => s.transport, wide: true },
  { name: 'CREDENTIAL', value: (s) => s.credential.id, wide: true },
  { name: 'STARTED', value: (s) => s.started_at, wide: true },
  { name: 'AGE', value: (s) => age(s.started_at, now) },
];

const output = () => new Option('-o, --output <format>', 'table, wide, json or yaml').default('table');

export function sessionsCommand(io: CliIO): Command {
  const cmd = new Command('sessions').description('Online agent sessions and the commands agents take');
  withApiOptions(cmd.command('list').description('list online sessions'))
    .addOption(output())
    .action(async (o) => {
      const format = parseFormat(o.output);
      const client = clientFrom(o);
      const items = await collect(client.tunnelSessions.list()).catch((e) => {
        throw explain(e, 'list sessions');
      });
      io.out(render(items, columns(io.now()), format, 'tunnel_sessions'));
    });
  withApiOptions(
    cmd.command('get').argument('<id>', 'session id (ts_...)', nonEmptyId).description('show one session'),
  )
    .addOption(output())
    .action(async (id: string, o) => {
      const format = parseFormat(o.output);
      const s = await clientFrom(o)
        .tunnelSessions.get(id)
        .catch((e) => {
          throw explain(e, `get ${id}`);
        });
      io.out(
        format === 'table' || format === 'wide'
          ? render([s], columns(io.now()), format, 'tunnel_session')
          : render([s], [], format, 'tunnel_sessions'),
      );
    });
  const simple: [string, string, 'restart' | 'stop' | 'update', string][] = [
    [
      'restart',
      'restart the agent (it reconnects under a new session id; not on Windows)',
      'restart',
      'restart requested',
    ],
    ['stop', 'make the agent exit', 'stop', 'stop requested'],
    [
      'update',
      'update the agent to the newest version of its major (restart it afterwards)',
      'update',
      'update started; restart the agent in 10s or more to use it',
    ],
  ];
  for (const [name, desc, verb, done] of simple) {
    withApiOptions(
      cmd.command(name).argument('<id>', 'session id (ts_...)', nonEmptyId).description(desc),
    ).action(async (id: string, o) => {
      await agentCommand(clientFrom(o), verb, id);
      io.out(`${id}: ${done}\n`);
    });
  }
  withApiOptions(
    cmd
      .command('upgrade')
      .argument('[id]', 'session id (ts_...)', nonEmptyId)
      .description('update, wait 10s, restart, and confirm the agent is back under a new session id'),
  )
    .option('--timeout <duration>', 'how long to wait for the agent to reconnect', '2m')
    .option('--all', 'upgrade every session matching the selectors')
    .option('--agent-version <version>', 'with --all: only agents on this version')
    .option('--region <region>', 'with --all: only agents in this region')
    .option('--os <os>', 'with --all: only agents on this OS')
    .option('--concurrency <n>', 'with --all: agents upgraded at once', '4')
    .action(async (id: string | undefined, o, command: Command) => {
      let timeoutMs: number;
      try {
        timeoutMs = parseDuration(o.timeout, '--timeout');
      } catch (err) {
        throw new CliError((err as Error).message, EXIT.usage);
      }
      // the agent is restarted before the wait: a wait of nothing would fail after it
      if (timeoutMs < 1000) throw new CliError(`--timeout: "${o.timeout}" is less than 1s`, EXIT.usage);
      if (!/^[1-9]\d{0,2}$/.test(String(o.concurrency)))
        throw new CliError(
          `--concurrency: "${o.concurrency}" is not a whole number from 1 to 999`,
          EXIT.usage,
        );
      if (!o.all) {
        const given = ['agentVersion', 'region', 'os', 'concurrency'].find(
          (k) => command.getOptionValueSource(k) === 'cli',
        );
        if (given)
          throw new CliError(
            `upgrade: --${given.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} works with --all only`,
            EXIT.usage,
          );
      }
      const client = clientFrom(o);
      const drawn = io.errIsTTY;
      const progress = (s: string) => io.err(drawn ? `\r\x1b[K${s}` : `${s}\n`);
      if (!o.all) {
        if (!id) throw new CliError('upgrade: give a session id, or --all with selectors', EXIT.usage);
        try {
          const r = await upgrade(client, io, id, { timeoutMs, progress });
          io.out(`${r.from.id} (${r.from.agent_version}) -> ${r.to.id} (${r.to.agent_version})\n`);
        } finally {
          // the progress line ends before the result, or the error, follows it
          if (drawn) io.err('\n');
        }
        return;
      }
      if (id) throw new CliError('upgrade: give either a session id or --all', EXIT.usage);
      const all = await collect(client.tunnelSessions.list()).catch((e) => {
        throw explain(e, 'list sessions');
      });
      const targets = all.filter(
        (s) =>
          (!o.agentVersion || s.agent_version === o.agentVersion) &&
          (!o.region || s.region === o.region) &&
          (!o.os || s.os === o.os),
      );
      if (!targets.length) {
        io.out('no sessions match\n');
        return;
      }
      const results: { id: string; from: string; result: string; ok: boolean; code?: number }[] = [];
      const queue = [...targets];
      const claimed = new Set<string>();
      const worker = async () => {
        for (let s = queue.shift(); s; s = queue.shift()) {
          try {
            const r = await upgrade(client, io, s.id, {
              timeoutMs,
              progress: (m) => io.err(`${m}\n`),
              claimed,
            });
            results.push({
              id: s.id,
              from: s.agent_version,
              result: `${r.to.id} (${r.to.agent_version})`,
              ok: true,
            });
          } catch (err) {
            const e = explain(err, '');
            results.push({
              id: s.id,
              from: s.agent_version,
              result: e.message.replace(/^: /, ''),
              ok: false,
              code: e.code,
            });
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(Number(o.concurrency), targets.length) }, worker));
      results.sort((a, b) => a.id.localeCompare(b.id));
      io.out(
        render(
          results,
          [
            { name: 'SESSION', value: (r) => r.id },
            { name: 'FROM', value: (r) => r.from },
            { name: 'RESULT', value: (r) => (r.ok ? `upgraded: ${r.result}` : `failed: ${r.result}`) },
          ],
          'table',
          'results',
        ),
      );
      const failed = results.filter((r) => !r.ok).length;
      io.out(`${results.length - failed} upgraded, ${failed} failed\n`);
      // every one refused by its agent: 3, as for one session; any other failure: 1
      if (failed)
        throw new CliError(
          '',
          results.every((r) => r.ok || r.code === EXIT.refused) ? EXIT.refused : EXIT.failed,
        );
    });
  return cmd;
}
