// Several accounts in one emulator (`--account NAME=KEY`, the `accounts` option), over HTTP with
// the real client: a key sees its own account's resources only (another account's id answers as
// an unknown id does), uniqueness rules hold per account, each account has its own request
// budget, simulated agents and admin plane, and the data file keeps the accounts apart.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collect, type EdgeClient } from '../../src/api/client.ts';
import type { ApiError } from '../../src/api/errors.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { scratchDir } from '../support/scratch.ts';
import { accountClient, raw, sshPublicKey } from './harness.ts';

const KEYS = { blue: 'blue-key', green: 'green-key' };
const EDGECTL = join(import.meta.dirname, '../../src/cli/edgectl.ts');

const ids = async (items: AsyncIterable<{ id: string }>) => (await collect(items)).map((x) => x.id).sort();

/** An answer as a client sees it: status and body, less the operation id every answer has anew. */
async function answer(emu: Emulator, key: string, method: string, path: string, body?: unknown) {
  const r = await raw(emu, method, path, {
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { details, ...rest } = (r.json ?? {}) as { details?: Record<string, unknown> };
  return { status: r.status, ...rest, details: { ...details, operation_id: undefined } };
}

/** The emulator's own endpoints, with its admin key. */
const adminCall = (emu: Emulator, method: string, path: string, body?: unknown) =>
  raw(emu, method, `/_emulator${path}`, {
    headers: {
      authorization: `Bearer ${emu.adminKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** The HTTP status a client call ended with. */
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: ApiError) => e.status,
  );

describe('two accounts in one emulator', () => {
  let emu: Emulator;
  let blue: EdgeClient;
  let green: EdgeClient;
  let main: EdgeClient;
  beforeAll(async () => {
    emu = await startEmulator({
      accounts: KEYS,
      agents: [
        { name: 'web', account: 'blue', tunnels: [{ labels: { app: 'web' }, forwards_to: 'localhost:80' }] },
        { name: 'api', tunnels: [{ forwards_to: 'localhost:81' }] },
      ],
    });
    blue = accountClient(emu, 'blue');
    green = accountClient(emu, 'green');
    main = accountClient(emu, 'default');
  });
  afterAll(async () => {
    await Promise.all([blue.close(), green.close(), main.close()]);
    await emu.close();
  });

  it('lists hold each account its own resources', async () => {
    const p = await blue.ipPolicies.create({ description: 'blue' });
    const q = await green.ipPolicies.create({ description: 'green' });
    expect(await ids(blue.ipPolicies.list())).toEqual([p.id]);
    expect(await ids(green.ipPolicies.list())).toEqual([q.id]);
    expect(await ids(main.ipPolicies.list())).toEqual([]);
    expect(
      emu
        .storeOf('blue')
        .all('ipPolicies')
        .map((r) => r.id),
    ).toEqual([p.id]);
    expect(emu.store.all('ipPolicies')).toEqual([]);
    await blue.ipPolicies.delete(p.id);
    await green.ipPolicies.delete(q.id);
  });

  it("get, update, delete and references of another account's id answer exactly as an unknown id", async () => {
    const p = await blue.ipPolicies.create({ description: 'blue policy' });
    const rule = await blue.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '10.0.0.0/8', action: 'allow' });
    const tg = await blue.tunnelGroupBackends.create({ labels: { app: 'web' } });
    const edge = await blue.httpsEdges.create({ hostports: ['blue.example.com:443'] });
    const route = await blue.httpsEdgeRoutes.create(edge.id, { match_type: 'path_prefix', match: '/' });
    const requests: [string, string, unknown?][] = [
      ['GET', `/ip_policies/${p.id}`],
      ['PATCH', `/ip_policies/${p.id}`, { description: 'taken over' }],
      ['DELETE', `/ip_policies/${p.id}`],
      ['GET', `/ip_policy_rules/${rule.id}`],
      ['DELETE', `/ip_policy_rules/${rule.id}`],
      ['POST', '/ip_policy_rules', { ip_policy_id: p.id, cidr: '192.168.0.0/16', action: 'deny' }],
      ['GET', `/backends/tunnel_group/${tg.id}`],
      ['POST', '/backends/weighted', { backends: { [tg.id]: 1 } }],
      ['GET', `/edges/https/${edge.id}`],
      ['PATCH', `/edges/https/${edge.id}`, { hostports: ['green.example.com:443'] }],
      ['GET', `/edges/https/${edge.id}/routes/${route.id}`],
      ['DELETE', `/edges/https/${edge.id}/routes/${route.id}`],
    ];
    const fromGreen = [];
    for (const [method, path, body] of requests)
      fromGreen.push(await answer(emu, KEYS.green, method, path, body));
    for (const [i, a] of fromGreen.entries())
      expect(a.status, requests[i]!.join(' ')).toBeGreaterThanOrEqual(400);
    // nothing of blue's changed
    expect(await blue.ipPolicies.get(p.id)).toMatchObject({ description: 'blue policy' });
    expect(await blue.ipPolicyRules.get(rule.id)).toMatchObject({ cidr: '10.0.0.0/8' });
    expect(await blue.httpsEdges.get(edge.id)).toMatchObject({ hostports: ['blue.example.com:443'] });
    expect(await blue.httpsEdgeRoutes.get(edge.id, route.id)).toMatchObject({ match: '/' });
    expect(await ids(green.weightedBackends.list())).toEqual([]);
    // the same requests once the ids are unknown to every account: blue deletes them
    await blue.httpsEdges.delete(edge.id);
    await blue.tunnelGroupBackends.delete(tg.id);
    await blue.ipPolicies.delete(p.id);
    const unknown = [];
    for (const [method, path, body] of requests)
      unknown.push(await answer(emu, KEYS.blue, method, path, body));
    expect(fromGreen).toEqual(unknown);
  });

  it('uniqueness rules hold within an account, not across accounts', async () => {
    const key = sshPublicKey('shared@ci');
    for (const c of [blue, green]) {
      await c.httpsEdges.create({ hostports: ['app.example.com:443'] });
      await c.sshCredentials.create({ public_key: key });
      const p = await c.ipPolicies.create({});
      await c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '10.0.0.0/8', action: 'allow' });
      await c.ipRestrictions.create({ type: 'dashboard', ip_policy_ids: [p.id] });
    }
    const [p] = await collect(blue.ipPolicies.list());
    await expect(blue.httpsEdges.create({ hostports: ['app.example.com:443'] })).rejects.toMatchObject({
      details: { code: 'ERR_HOSTPORT_IN_USE' },
    });
    await expect(blue.sshCredentials.create({ public_key: key })).rejects.toMatchObject({
      details: { code: 'ERR_SSH_KEY_EXISTS' },
    });
    await expect(
      blue.ipRestrictions.create({ type: 'dashboard', ip_policy_ids: [p!.id] }),
    ).rejects.toMatchObject({ details: { code: 'ERR_IP_RESTRICTION_TYPE_EXISTS' } });
  });

  it('a key no account has answers as a wrong key does on a single-account emulator', async () => {
    const single = await startEmulator();
    try {
      for (const key of ['nobody-key-0123', 'x']) {
        const here = await answer(emu, key, 'GET', '/ip_policies');
        expect(here.status).toBe(403);
        expect(here).toEqual(await answer(single, key, 'GET', '/ip_policies'));
      }
      // an account's key is nothing to an emulator without that account
      expect((await answer(single, KEYS.blue, 'GET', '/ip_policies')).status).toBe(403);
    } finally {
      await single.close();
    }
  });

  it('simulated agents run in their account: sessions, tunnels and the admin plane per account', async () => {
    const admin = (method: string, path: string, body?: unknown) => adminCall(emu, method, path, body);
    const [blueSession] = await collect(blue.tunnelSessions.list());
    const [mainSession] = await collect(main.tunnelSessions.list());
    expect(blueSession).toBeDefined();
    expect(mainSession!.id).not.toBe(blueSession!.id);
    expect(await ids(green.tunnelSessions.list())).toEqual([]);
    expect(await ids(green.tunnels.list())).toEqual([]);
    expect((await collect(blue.tunnels.list())).map((t) => t.forwards_to)).toEqual(['localhost:80']);
    // a labelled tunnel backs a tunnel-group backend of its own account only
    const blueTg = await blue.tunnelGroupBackends.create({ labels: { app: 'web' } });
    const greenTg = await green.tunnelGroupBackends.create({ labels: { app: 'web' } });
    expect((await blue.tunnelGroupBackends.get(blueTg.id)).tunnels).toHaveLength(1);
    expect((await green.tunnelGroupBackends.get(greenTg.id)).tunnels).toEqual([]);
    // another account's session answers as an unknown one, also to an agent command
    const restart = ['POST', `/tunnel_sessions/${blueSession!.id}/restart`, {}] as const;
    const greenAsks = await answer(emu, KEYS.green, 'GET', `/tunnel_sessions/${blueSession!.id}`);
    const greenRestarts = await answer(emu, KEYS.green, ...restart);
    expect(greenAsks.status).toBe(404);
    expect(greenRestarts.status).toBe(404);

    const agentNames = async (query: string) =>
      (await admin('GET', `/agents${query}`)).json.agents.map((a: { name: string }) => a.name);
    expect(await agentNames('?account=blue')).toEqual(['web']);
    expect(await agentNames('')).toEqual(['api']);
    expect((await admin('POST', '/agents?account=green', { name: 'late' })).status).toBe(201);
    expect(await ids(green.tunnelSessions.list())).toHaveLength(1);
    expect((await admin('GET', '/state?account=green')).json.tunnelGroupBackends).toHaveLength(1);
    expect(await admin('GET', '/agents?account=nope')).toMatchObject({ status: 404 });
    // reset of one account leaves the others
    expect((await admin('POST', '/reset?account=green')).status).toBe(204);
    expect(await ids(green.tunnelGroupBackends.list())).toEqual([]);
    expect(await ids(blue.tunnelGroupBackends.list())).toEqual([blueTg.id]);

    // the removed agent's session is unknown to blue now, in the same words green got
    expect((await admin('DELETE', '/agents/web?account=blue')).status).toBe(204);
    expect(await answer(emu, KEYS.blue, 'GET', `/tunnel_sessions/${blueSession!.id}`)).toEqual(greenAsks);
    expect(await answer(emu, KEYS.blue, ...restart)).toEqual(greenRestarts);
  });

  it('faults can be aimed at one account; counters say what each account spent', async () => {
    const admin = (method: string, path: string, body?: unknown) => adminCall(emu, method, path, body);
    expect(await admin('PUT', '/faults', { errorRate: 1, accounts: ['nope'] })).toMatchObject({
      status: 400,
    });
    expect(
      (await admin('PUT', '/faults', { errorRate: 1, errorStatuses: [503], accounts: ['green'] })).status,
    ).toBe(200);
    try {
      expect(await statusOf(collect(green.ipPolicies.list()))).toBe(503);
      expect(await statusOf(collect(blue.ipPolicies.list()))).toBe(200);
      expect(await statusOf(collect(main.ipPolicies.list()))).toBe(200);
    } finally {
      expect((await admin('DELETE', '/faults')).status).toBe(204);
    }
    const before = emu.counters.of('blue').total('sshCredentials.list');
    await collect(blue.sshCredentials.list());
    expect(emu.counters.of('blue').total('sshCredentials.list')).toBe(before + 1);
    const res = await fetch(`${emu.url}/_emulator/metrics`, {
      headers: { authorization: `Bearer ${emu.adminKey}` },
    });
    const text = await res.text();
    expect(text).toMatch(
      new RegExp(
        `^emulator_account_requests_total\\{account="blue",operation="sshCredentials.list",status="200"\\} ${before + 1}$`,
        'm',
      ),
    );
    expect(text).toMatch(
      /^emulator_account_requests_total\{account="green",operation="ipPolicies.list",status="503"\} 1$/m,
    );
  });
});

it("each account has its own request budget: one account's 429s leave the others' budgets whole", async () => {
  const emu = await startEmulator({ accounts: KEYS, rateLimitPerMinute: 3 });
  const clients = Object.fromEntries(
    ['blue', 'green', 'default'].map((n) => [n, accountClient(emu, n)] as const),
  );
  try {
    const spend = async (c: EdgeClient, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(await statusOf(collect(c.ipPolicies.list())));
      return out;
    };
    expect(await spend(clients.blue!, 6)).toEqual([200, 200, 200, 429, 429, 429]);
    // the same budget, whole, for each of the others, however much blue asked
    expect(await spend(clients.green!, 4)).toEqual([200, 200, 200, 429]);
    expect(await spend(clients.default!, 4)).toEqual([200, 200, 200, 429]);
  } finally {
    for (const c of Object.values(clients)) await c.close();
    await emu.close();
  }
});

describe('the data file', () => {
  const opened: Emulator[] = [];
  const clients: EdgeClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    for (const e of opened.splice(0)) await e.close();
  });
  const start = async (file: string, accounts: Record<string, string>) => {
    const emu = await startEmulator({ dataFile: file, accounts });
    opened.push(emu);
    return emu;
  };
  const client = (emu: Emulator, account: string) => {
    const c = accountClient(emu, account);
    clients.push(c);
    return c;
  };
  const descriptions = async (c: EdgeClient) =>
    (await collect(c.ipPolicies.list())).map((p) => p.description).sort();

  it('keeps the accounts apart across restarts, by name: a new key reaches the same records', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    let emu = await start(file, KEYS);
    await client(emu, 'blue').ipPolicies.create({ description: 'blue' });
    await client(emu, 'green').ipPolicies.create({ description: 'green' });
    await client(emu, 'default').ipPolicies.create({ description: 'default' });
    for (const n of ['blue', 'green'])
      await client(emu, n).httpsEdges.create({ hostports: ['a.example.com:443'] });
    await opened.pop()!.close();
    // a single-account emulator's lines are as they were: the default account's carry no account
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.c === 'ipPolicies').map((l) => [l.a, l.rec.description])).toEqual([
      ['blue', 'blue'],
      ['green', 'green'],
      [undefined, 'default'],
    ]);

    emu = await start(file, KEYS);
    expect(await descriptions(client(emu, 'blue'))).toEqual(['blue']);
    expect(await descriptions(client(emu, 'green'))).toEqual(['green']);
    expect(await descriptions(client(emu, 'default'))).toEqual(['default']);
    // loaded into its own account: the hostport is taken in green again
    await expect(
      client(emu, 'green').httpsEdges.create({ hostports: ['a.example.com:443'] }),
    ).rejects.toMatchObject({
      details: { code: 'ERR_HOSTPORT_IN_USE' },
    });
    await opened.pop()!.close();

    // green's key rotated: the account is its name
    emu = await start(file, { ...KEYS, green: 'green-key-2' });
    expect(await descriptions(client(emu, 'green'))).toEqual(['green']);
    expect((await answer(emu, KEYS.green, 'GET', '/ip_policies')).status).toBe(403);
    await opened.pop()!.close();

    // started without green: its records are kept, not served, and back once it is given again
    emu = await start(file, { blue: KEYS.blue });
    expect(await descriptions(client(emu, 'blue'))).toEqual(['blue']);
    expect((await answer(emu, KEYS.green, 'GET', '/ip_policies')).status).toBe(403);
    await opened.pop()!.close();
    emu = await start(file, KEYS);
    expect(await descriptions(client(emu, 'green'))).toEqual(['green']);
  });

  it('refuses a line whose account is not an account name, naming the line', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      file,
      `${JSON.stringify({ a: 'Not A Name', c: 'ipPolicies', id: 'ipp_1', rec: { id: 'ipp_1', created_at: '2026-01-01T00:00:00Z', description: '', metadata: '' } })}\n`,
    );
    await expect(startEmulator({ dataFile: file, accounts: KEYS })).rejects.toThrow(
      /line 1 .*a: must be an account name/,
    );
  });
});

const run = promisify(execFile);
const edgectl = (...args: string[]) =>
  run(process.execPath, [EDGECTL, ...args], { encoding: 'utf8', timeout: 20_000 }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );

describe('edgectl emulator --account', () => {
  let proc: ChildProcess | undefined;
  afterAll(() => {
    proc?.kill();
  });

  it.each([
    ['a value without "="', ['blue'], /expected NAME=KEY/],
    ['an empty name', ['=s3cret-a'], /name is empty/],
    ['a name that is not a DNS label', ['Blue_1=s3cret-a'], /--account Blue_1: the name must be lowercase/],
    ['the default account by name', ['default=s3cret-a'], /"default" is the account of --api-key/],
    ['a name given twice', ['blue=s3cret-a', 'blue=s3cret-b'], /--account blue: the name is given twice/],
    [
      'a key given twice',
      ['blue=s3cret-a', 'green=s3cret-a'],
      /--account green: its key is already the key of account blue/,
    ],
    [
      'the default account key',
      ['blue=emulator-key'],
      /--account blue: its key is already the key of account default/,
    ],
    ['an empty key', ['blue='], /--account blue: the key is empty/],
    [
      'a key with a space',
      ['blue=s3cret a'],
      /--account blue: the key must be printable ASCII without spaces/,
    ],
  ])(
    'refuses %s with one line on stderr and exit 2, never quoting the key',
    async (_what, values, message) => {
      const r = await edgectl('emulator', '--port', '0', ...values.flatMap((v) => ['--account', v]));
      expect(r.code).toBe(2);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toMatch(message);
      expect(r.err).not.toContain('s3cret');
    },
  );

  it('serves each account with its key, and says which accounts it has', async () => {
    proc = spawn(process.execPath, [EDGECTL, 'emulator', '--port', '0', '--account', 'blue=blue-key'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`emulator did not start: ${out}`)), 15_000);
      proc!.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /emulator listening on (http:\/\/\S+)[\s\S]*agents:/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
    });
    expect(out).toContain('accounts: default, blue');
    expect(out).not.toContain('blue-key');
    // the admin endpoints reach every account: no tenant's key opens them, none given means off
    expect(out).toContain('admin endpoints: off (give --admin-key)');
    for (const key of ['emulator-key', 'blue-key'])
      expect(
        (await fetch(`${url}/_emulator/state?account=blue`, { headers: { authorization: `Bearer ${key}` } }))
          .status,
        key,
      ).toBe(401);
    const post = (key: string) =>
      fetch(`${url}/ip_policies`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'service-version': '2',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ description: key }),
      });
    expect((await post('blue-key')).status).toBe(201);
    const list = async (key: string) =>
      (
        (await (
          await fetch(`${url}/ip_policies`, {
            headers: { authorization: `Bearer ${key}`, 'service-version': '2' },
          })
        ).json()) as { ip_policies: { description: string }[] }
      ).ip_policies.map((p) => p.description);
    expect(await list('blue-key')).toEqual(['blue-key']);
    expect(await list('emulator-key')).toEqual([]);
  });
});
