// edgectl sessions and tunnels, in-process against the emulator with simulated agents.
// The clock is the emulator's: sleeping advances it, so the upgrade's 10 s take no time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { collect } from '../../src/api/client.ts';
import { runCli } from '../../src/cli/run-cli.ts';
import { capturedIO } from '../support/cli-io.ts';
import { emulatorWithClient, type Harness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await emulatorWithClient({
    agents: [
      {
        name: 'web-1',
        agent_version: '3.5.0',
        region: 'eu',
        update: { available_version: '3.6.1', duration_ms: 3000 },
        tunnels: [{ labels: { app: 'web' }, forwards_to: 'localhost:8080' }],
      },
      {
        name: 'web-2',
        agent_version: '3.5.0',
        region: 'eu',
        ip: '198.51.100.2',
        update: { available_version: '3.6.1' },
      },
      {
        name: 'stuck',
        agent_version: '3.5.0',
        region: 'eu',
        ip: '198.51.100.3',
        update: { checks_disabled: true },
      },
      {
        name: 'kiosk',
        os: 'windows',
        agent_version: '3.4.2',
        region: 'us',
        ip: '203.0.113.9',
        tunnels: [{ proto: 'https', forwards_to: 'localhost:3000' }],
      },
    ],
  });
});
afterAll(() => h.close());

async function run(...args: string[]) {
  let slept = 0;
  const io = capturedIO({
    sleep: async (ms) => {
      slept += ms;
      h.emu.advanceClock(ms);
    },
    now: () => Date.now() + slept,
  });
  const code = await runCli([...args, '--api-url', h.emu.url, '--api-key', h.emu.apiKey], io);
  return { code, out: io.outText(), err: io.errText(), slept };
}
/** The command line as given: no API URL or key added. */
async function runAsGiven(...args: string[]) {
  const io = capturedIO();
  return { code: await runCli(args, io), err: io.errText() };
}
const sessionOf = async (ip: string) =>
  (await collect(h.client.tunnelSessions.list())).find((s) => s.ip === ip)!;

describe('edgectl sessions and tunnels', () => {
  it('lists sessions as a table that fits a narrow terminal, with more columns in -o wide', async () => {
    const r = await run('sessions', 'list');
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+VERSION\s+OS\s+REGION\s+IP\s+AGE$/);
    expect(lines).toHaveLength(5);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(100);
    expect(r.out).not.toContain('\x1b[');
    const wide = await run('sessions', 'list', '-o', 'wide');
    expect(wide.out.split('\n')[0]).toMatch(/TRANSPORT\s+CREDENTIAL\s+STARTED/);
  });

  it('prints JSON and YAML that scripts can parse', async () => {
    const json = JSON.parse((await run('sessions', 'list', '-o', 'json')).out);
    expect(json.tunnel_sessions).toHaveLength(4);
    const yaml = parse((await run('tunnels', 'list', '-o', 'yaml')).out);
    expect(yaml.tunnels.map((t: { forwards_to: string }) => t.forwards_to).sort()).toEqual([
      'localhost:3000',
      'localhost:8080',
    ]);
    const one = await sessionOf('203.0.113.9');
    expect(JSON.parse((await run('sessions', 'get', one.id, '-o', 'json')).out).tunnel_sessions[0].os).toBe(
      'windows',
    );
  });

  it('shows tunnels by public URL or labels', async () => {
    const r = await run('tunnels', 'list');
    expect(r.out).toContain('app=web');
    expect(r.out).toMatch(/https:\/\/tn_\w+\.emulator\.test/);
    const t = (await collect(h.client.tunnels.list()))[0]!;
    expect((await run('tunnels', 'get', t.id)).out).toContain(t.id);
  });

  it('says why an agent refused, with exit code 3; unknown ids exit 4; bad flags exit 2', async () => {
    const stuck = await sessionOf('198.51.100.3');
    const u = await run('sessions', 'update', stuck.id);
    expect(u.code).toBe(3);
    expect(u.err).toContain('configuration disables update checks');
    const kiosk = await sessionOf('203.0.113.9');
    const r = await run('sessions', 'restart', kiosk.id);
    expect(r.code).toBe(3);
    expect(r.err).toContain('not supported on Windows');
    const none = await run('sessions', 'update', kiosk.id);
    expect(none.err).toContain('no update is available');
    expect((await run('sessions', 'get', 'ts_missing')).code).toBe(4);
    expect((await run('sessions', 'list', '-o', 'xml')).code).toBe(2);
    expect((await run('sessions', 'frobnicate')).code).toBe(2);
  });

  it('bad API flags and empty ids: one line naming the flag, exit 2, before any request; the key never shown', async () => {
    const url = h.emu.url;
    const key = ['--api-key', h.emu.apiKey];
    const cases: [string[], string][] = [
      [['sessions', 'list', '--api-url', 'notaurl', ...key], '--api-url: "notaurl" is not an http(s) URL'],
      [
        ['tunnels', 'list', '--api-url', 'ftp://127.0.0.1:1', ...key],
        '--api-url: "ftp://127.0.0.1:1" is not',
      ],
      [
        ['sessions', 'list', '--api-url', url, '--api-key', 'sekr\u00eft'],
        '--api-key (EDGE_API_KEY) contains a space or a non-ASCII character',
      ],
      [
        ['sessions', 'list', '--api-url', url, '--api-key-file', '/nonexistent'],
        '--api-key-file: cannot read',
      ],
      [
        ['sessions', 'upgrade', 'ts_1', '--timeout', 'abc', '--api-url', url, ...key],
        '--timeout: not a duration',
      ],
      [
        ['sessions', 'upgrade', '--all', '--concurrency', '0', '--api-url', url, ...key],
        '--concurrency: "0"',
      ],
      [['tunnels', 'get', '', '--api-url', url, ...key], 'an id is required'],
      [['tunnels', 'get', '..', '--api-url', url, ...key], '".." is not an id'],
      [['sessions', 'restart', 'ts_1/../x', '--api-url', url, ...key], '"ts_1/../x" is not an id'],
      [['export', '-n', 'Bad NS', '--api-url', url, ...key], '-n: "Bad NS" is not a namespace name'],
      [['--bogus'], "unknown option '--bogus'"],
    ];
    for (const [args, message] of cases) {
      const r = await runAsGiven(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.err, args.join(' ')).toContain(message);
      expect(r.err).not.toContain('sekr');
    }
  });

  it('a refused API key is an API failure (exit 1), not the agent refusing (3)', async () => {
    const r = await runAsGiven('sessions', 'list', '--api-url', h.emu.url, '--api-key', 'not-a-key-it-knows');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: list sessions: /);
    expect(r.err).not.toContain('not-a-key-it-knows');
  });

  it('update twice: already updating, then updated but not restarted', async () => {
    const s = await sessionOf('198.51.100.2');
    expect((await run('sessions', 'update', s.id)).code).toBe(0);
    expect((await run('sessions', 'update', s.id)).err).toContain('already updating');
    h.emu.advanceClock(60_000);
    expect((await run('sessions', 'update', s.id)).err).toContain('must be restarted');
    const r = await run('sessions', 'restart', s.id);
    expect(r.out).toContain('restart requested');
  });

  it('upgrade waits at least 10 s, restarts, and prints the new session id and version', async () => {
    const s = await sessionOf('203.0.113.10');
    const r = await run('sessions', 'upgrade', s.id);
    expect(r.code).toBe(0);
    expect(r.slept).toBeGreaterThanOrEqual(10_000);
    const [, newId] = /-> (ts_\w+) \(3\.6\.1\)/.exec(r.out) ?? [];
    expect(newId).toBeTruthy();
    expect(newId).not.toBe(s.id);
    expect((await h.client.tunnelSessions.get(newId!)).agent_version).toBe('3.6.1');
    expect(r.err).toContain('restarting in 10s');
  });

  it('upgrade says which step failed and in what state the agent is', async () => {
    const stuck = await sessionOf('198.51.100.3');
    const r = await run('sessions', 'upgrade', stuck.id);
    expect(r.code).toBe(3);
    expect(r.err).toContain('step 1/3 (update) failed');
    expect(r.err).toContain('unchanged on version 3.5.0');
  });

  const addAgent = (spec: Record<string, unknown>) =>
    fetch(`${h.emu.url}/_emulator/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.emu.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    });

  it('upgrade takes as the agent back only a session that was not online before the restart, on a new version', async () => {
    // two agents alike in every way the API shows (one credential behind one address)
    const twin = {
      agent_version: '4.1.0',
      region: 'ap',
      ip: '198.51.100.50',
      update: { available_version: '4.2.0' },
    };
    await addAgent({ name: 'twin-a', ...twin });
    await addAgent({ name: 'twin-b', ...twin });
    const twins = (await collect(h.client.tunnelSessions.list())).filter((s) => s.ip === twin.ip);
    expect(twins).toHaveLength(2);
    const r = await run('sessions', 'upgrade', twins[0]!.id);
    expect(r.code).toBe(0);
    const [, back] = /-> (ts_\w+) \(4\.2\.0\)/.exec(r.out) ?? [];
    // not the other twin, online all along
    expect(back).toBeTruthy();
    expect(back).not.toBe(twins[1]!.id);
    expect((await h.client.tunnelSessions.get(back!)).agent_version).toBe('4.2.0');
  });

  it('upgrade fails, naming the new session, when the agent comes back on its old version', async () => {
    // an update that takes longer than the wait before the restart
    await addAgent({
      name: 'slow',
      agent_version: '5.0.0',
      region: 'sa',
      ip: '198.51.100.60',
      update: { available_version: '5.1.0', duration_ms: 60_000 },
    });
    const s = await sessionOf('198.51.100.60');
    const r = await run('sessions', 'upgrade', s.id);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /step 3\/3 \(reconnect\): the agent is back as ts_\w+ but still on version 5\.0\.0/,
    );
    expect(r.out).toBe('');
  });

  it('upgrade refuses a timeout under 1s and selectors without --all, before any request', async () => {
    const s = await sessionOf('198.51.100.3');
    for (const [args, message] of [
      [['--timeout', '0'], '--timeout: "0" is less than 1s'],
      [['--region', 'eu'], 'upgrade: --region works with --all only'],
      [['--concurrency', '2'], 'upgrade: --concurrency works with --all only'],
    ] as const) {
      const r = await run('sessions', 'upgrade', s.id, ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err.trim()).toBe(`error: ${message}`);
    }
  });

  it("an agent's control characters reach the terminal escaped: no escape sequence, no forged row", async () => {
    await addAgent({
      name: 'evil',
      agent_version: '0.0.1',
      region: 'zz',
      ip: '198.51.100.70',
      tunnels: [{ forwards_to: 'localhost:1\u001b]0;pwned\u0007\u001b[2J\nfake row' }],
    });
    const r = await run('tunnels', 'list', '-o', 'wide');
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('\u001b');
    expect(r.out).not.toMatch(/^fake row/m);
    expect(r.out).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x0afake row');
  });

  it('upgrade --all with a selector upgrades many and reports a partial failure', async () => {
    await fetch(`${h.emu.url}/_emulator/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.emu.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'web-3',
        agent_version: '3.5.0',
        region: 'eu',
        ip: '198.51.100.4',
        update: { available_version: '3.5.7' },
      }),
    });
    const r = await run(
      'sessions',
      'upgrade',
      '--all',
      '--agent-version',
      '3.5.0',
      '--region',
      'eu',
      '--concurrency',
      '2',
    );
    // the one failure is the agent refusing (update checks disabled): 3, not an API failure
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/upgraded: ts_\w+ \(3\.5\.7\)/);
    expect(r.out).toMatch(/failed: .*update checks/);
    expect(r.out).toContain('1 upgraded, 1 failed');
  });
});
