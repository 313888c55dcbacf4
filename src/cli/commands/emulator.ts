import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import type { ApiKey } from '../../emulator/accounts.ts';
import { DEFAULT_API_KEY } from '../../emulator/defaults.ts';
import { CliError, EXIT } from '../io.ts';

/** KEY, KEY:OWNER or KEY:OWNER:admin */
function parseKey(spec: string): ApiKey {
  const [key, ownerId = 'usr_emulator', flag] = spec.split(':');
  if (!key) throw new CliError(`--api-key: "${spec}" has an empty key`, EXIT.usage);
  return { key, ownerId, admin: flag === 'admin' || ownerId === 'usr_emulator' };
}

/** How the emulator words what is wrong with a value (validation.ts's firstIssue), loaded with it. */
type Explain = (err: z.ZodError) => string;

/** A flag's YAML or JSON file read and checked; what is wrong is one line naming the flag and the file. */
function readSpecFile<T>(flag: string, path: string, schema: z.ZodType<T>, firstIssue: Explain): T {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `${flag} ${path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      EXIT.usage,
    );
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (err) {
    throw new CliError(
      `${flag} ${path}: not YAML or JSON: ${(err as Error).message.split('\n')[0]}`,
      EXIT.usage,
    );
  }
  const r = schema.safeParse(value);
  if (!r.success) throw new CliError(`${flag} ${path}: ${firstIssue(r.error)}`, EXIT.usage);
  return r.data;
}

/** --faults' JSON, checked as the emulator's admin endpoint checks it. */
function parseFaults<T>(json: string, schema: z.ZodType<T>, firstIssue: Explain): T {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new CliError(`--faults: not JSON: ${(err as Error).message}`, EXIT.usage);
  }
  const r = schema.safeParse(value);
  if (!r.success) throw new CliError(`--faults: ${firstIssue(r.error)}`, EXIT.usage);
  return r.data;
}

export function emulatorCommand(): Command {
  return new Command('emulator')
    .description('Run a local emulator of the Edge and Tunnel Management API')
    .addOption(
      new Option('--host <host>', 'address to listen on').default('127.0.0.1').env('EDGE_EMULATOR_HOST'),
    )
    .addOption(
      new Option('--port <port>', 'port to listen on (0: any free port)')
        .default('8787')
        .env('EDGE_EMULATOR_PORT'),
    )
    .option(
      '--api-key <key>',
      `accepted API key as KEY, KEY:OWNER_ID or KEY:OWNER_ID:admin (repeatable; default ${DEFAULT_API_KEY}; a KEY without OWNER_ID is an admin key)`,
      (v: string, prev: string[] = []) => prev.concat(v),
    )
    .option(
      '--account <name=key>',
      'another account: its own resources and its own --rate-limit budget, reached with KEY (repeatable; NAME: lowercase letters, digits, -; the keys of --api-key and --keys-file are the account "default")',
      (v: string, prev: string[] = []) => prev.concat(v),
    )
    .addOption(
      new Option(
        '--admin-key <key>',
        'key for the /_emulator admin endpoints, which read and reset every account (default: the first API key if it is an admin key and there is one account; else the endpoints are off)',
      ).env('EDGE_EMULATOR_ADMIN_KEY'),
    )
    .addOption(
      new Option('--keys-file <path>', 'YAML or JSON file of API keys: {keys: [{key, owner_id, admin}]}').env(
        'EDGE_EMULATOR_KEYS_FILE',
      ),
    )
    .addOption(
      new Option(
        '--data-file <path>',
        'keep state in this file; every acknowledged write survives kill -9',
      ).env('EDGE_EMULATOR_DATA_FILE'),
    )
    .option(
      '--repair',
      'with a corrupt --data-file: keep every readable record (the original is copied aside)',
    )
    .option(
      '--agents <file>',
      'YAML or JSON file of simulated agents ({agents: [...]}; an agent with account: NAME runs in that account)',
    )
    .option('--faults <json>', 'fault injection as JSON, e.g. {"errorRate":0.2,"seed":7}')
    .addOption(
      new Option(
        '--rate-limit <n>',
        'requests each account (each key owner in it) may make in 60 seconds, a budget of its own; 429 with Retry-After beyond (default: no limit)',
      ).env('EDGE_EMULATOR_RATE_LIMIT'),
    )
    .option('--log', 'log every request (JSON)')
    .action(async (o) => {
      // loaded when used: the operator and the other commands do not carry the server's code
      const { AgentsFile } = await import('../../emulator/agent-spec.ts');
      const { startEmulator } = await import('../../emulator/server.ts');
      const { AccountError, KeysFile, parseAccountFlags } = await import('../../emulator/accounts.ts');
      const { FaultConfig } = await import('../../emulator/faults.ts');
      const { firstIssue } = await import('../../emulator/validation.ts');
      const port = Number(o.port);
      if (!/^\d{1,5}$/.test(String(o.port)) || port > 65535)
        throw new CliError(`--port: "${o.port}" is not a port number (0..65535)`, EXIT.usage);
      const rateLimit = o.rateLimit === undefined ? undefined : Number(o.rateLimit);
      if (rateLimit !== undefined && !(/^[1-9]\d{0,8}$/.test(String(o.rateLimit)) && rateLimit > 0))
        throw new CliError(`--rate-limit: "${o.rateLimit}" is not a whole number > 0`, EXIT.usage);
      const agents = o.agents ? readSpecFile('--agents', o.agents, AgentsFile, firstIssue).agents : [];
      const faults = o.faults ? parseFaults(o.faults, FaultConfig, firstIssue) : undefined;
      const apiKeys = [
        ...((o.apiKey as string[] | undefined) ?? []).map(parseKey),
        ...(o.keysFile
          ? readSpecFile('--keys-file', o.keysFile, KeysFile, firstIssue).keys.map((k) => ({
              key: k.key,
              ownerId: k.owner_id,
              admin: k.admin,
            }))
          : []),
      ];
      let accounts: Record<string, string>;
      try {
        accounts = parseAccountFlags(
          (o.account as string[] | undefined) ?? [],
          apiKeys.length ? apiKeys.map((k) => k.key) : [DEFAULT_API_KEY],
        );
      } catch (err) {
        if (err instanceof AccountError) throw new CliError(err.message, EXIT.usage);
        throw err;
      }
      let emu: Awaited<ReturnType<typeof startEmulator>>;
      try {
        emu = await startEmulator({
          host: o.host,
          port,
          apiKeys,
          accounts,
          adminKey: o.adminKey,
          dataFile: o.dataFile,
          repair: !!o.repair,
          rateLimitPerMinute: rateLimit,
          agents,
          faults,
          logger: !!o.log,
        });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES')
          throw new CliError(
            `--host ${o.host} --port ${port}: ${code === 'EADDRINUSE' ? 'address already in use' : code === 'EACCES' ? 'permission denied' : 'no such address on this machine'}`,
            EXIT.usage,
          );
        throw err;
      }
      process.stdout.write(
        `emulator listening on ${emu.url}\n  EDGE_API_URL=${emu.url}\n  API key: ${emu.apiKey === DEFAULT_API_KEY ? DEFAULT_API_KEY : '(as given)'}\n` +
          `${Object.keys(accounts).length ? `  accounts: default, ${Object.keys(accounts).join(', ')}\n` : ''}` +
          `${!o.adminKey && emu.adminKey !== emu.apiKey ? '  admin endpoints: off (give --admin-key)\n' : ''}` +
          `  agents: ${agents.length}${o.dataFile ? `\n  data file: ${o.dataFile}` : ''}${rateLimit ? `\n  rate limit: ${rateLimit} requests a minute per account` : ''}\n`,
      );
      // a reader of stdout that went away (edgectl emulator | head) must not crash the server
      process.stdout.on('error', () => {});
      const stop = async (signal: string) => {
        process.stderr.write(`emulator: ${signal}, stopping\n`);
        await emu.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop('SIGINT'));
      process.once('SIGTERM', () => void stop('SIGTERM'));
    });
}
