// With --data-file, every acknowledged write survives kill -9 of the emulator process, and
// a record start-up cannot serve (not JSON, or not of its collection's shape) stops it, or
// is dropped by --repair.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, createClient } from '../../src/api/client.ts';
import { STORED_RECORDS } from '../../src/emulator/records.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { selfSignedCaPem } from '../../src/util/x509.ts';
import { scratchDir } from '../support/scratch.ts';
import { emulatorWithClient, sshPublicKey } from './harness.ts';

const EDGECTL = join(import.meta.dirname, '../../src/cli/edgectl.ts');
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
});

function start(dataFile: string, args: string[] = []): Promise<{ url: string; proc: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [EDGECTL, 'emulator', '--port', '0', '--data-file', dataFile, ...args],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child = proc;
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, proc });
    });
    proc.once('exit', (code) => reject(new Error(`emulator exited ${code}: ${out}`)));
  });
}

it('one emulator per data file: a second is refused in one line and changes nothing; once the first is killed, the next starts', async () => {
  const dataFile = join(scratchDir('emu-'), 'state.jsonl');
  const first = await start(dataFile);
  const c1 = createClient({ baseUrl: first.url, apiKey: 'emulator-key', rateLimitPerMinute: Infinity });
  const kept = await c1.ipPolicies.create({ description: 'kept' });
  const second = await promisify(execFile)(process.execPath, [
    EDGECTL,
    'emulator',
    '--port',
    '0',
    '--data-file',
    dataFile,
  ]).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  expect(second.code).not.toBe(0);
  expect(second.stderr.trim()).toBe(
    `error: data file ${dataFile} is in use by another emulator (process ${first.proc.pid}): stop it first`,
  );
  // the first still writes to the file the next start reads
  const after = await c1.ipPolicies.create({ description: 'after' });
  await c1.close();
  first.proc.kill('SIGKILL');
  if (first.proc.exitCode === null && first.proc.signalCode === null)
    await new Promise((r) => first.proc.once('exit', r));
  const third = await start(dataFile);
  const c3 = createClient({ baseUrl: third.url, apiKey: 'emulator-key', rateLimitPerMinute: Infinity });
  expect((await collect(c3.ipPolicies.list())).map((p) => p.id).sort()).toEqual([kept.id, after.id].sort());
  await c3.close();
});

it('loses no acknowledged write when killed with SIGKILL mid-stream', async () => {
  const dataFile = join(scratchDir('emu-'), 'state.jsonl');
  const first = await start(dataFile);
  const c1 = createClient({
    baseUrl: first.url,
    apiKey: 'emulator-key',
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  const acked: string[] = [];
  const policy = await c1.ipPolicies.create({ description: 'durable' });
  acked.push(policy.id);
  // writes race the kill: whatever was answered must be there afterwards
  let killed = false;
  const writer = (async () => {
    for (let i = 0; !killed && i < 2000; i++) {
      try {
        const r = await c1.ipPolicyRules.create({
          ip_policy_id: policy.id,
          cidr: `10.${(i >> 8) & 255}.${i & 255}.0/24`,
          action: 'allow',
        });
        acked.push(r.id);
      } catch {
        break;
      }
    }
  })();
  await new Promise((r) => setTimeout(r, 400));
  first.proc.kill('SIGKILL');
  killed = true;
  await writer;
  await c1.close();
  expect(acked.length).toBeGreaterThan(10);

  const second = await start(dataFile);
  const c2 = createClient({ baseUrl: second.url, apiKey: 'emulator-key', rateLimitPerMinute: Infinity });
  const rules = new Set((await collect(c2.ipPolicyRules.list())).map((r) => r.id));
  const policies = new Set((await collect(c2.ipPolicies.list())).map((p) => p.id));
  for (const id of acked) expect(id.startsWith('ipp_') ? policies.has(id) : rules.has(id), id).toBe(true);
  await c2.close();
}, 60_000);

describe('records of the wrong shape', () => {
  const run = promisify(execFile);
  /** edgectl emulator that is expected to stop at start-up. */
  async function refused(dataFile: string): Promise<{ code: number; stderr: string }> {
    try {
      await run(process.execPath, [EDGECTL, 'emulator', '--port', '0', '--data-file', dataFile], {
        timeout: 20_000,
      });
      return { code: 0, stderr: '' };
    } catch (err) {
      return err as { code: number; stderr: string };
    }
  }
  const base = { created_at: '2024-05-01T10:00:00Z', description: '', metadata: '' };
  const line = (c: string, id: string, rec: unknown) => JSON.stringify({ c, id, rec });
  const policy = (id: string) => line('ipPolicies', id, { id, ...base, description: id });
  const rule = (id: string, policyId: string) =>
    line('ipPolicyRules', id, { id, ...base, cidr: '10.0.0.0/8', action: 'allow', ip_policy_id: policyId });

  it.each([
    ['a record that is not an object', line('ipPolicies', 'ipp_2', 42), /rec: .*expected object/],
    [
      'a record of an unknown collection',
      line('widgets', 'wdg_1', { id: 'wdg_1' }),
      /c: unknown collection "widgets"/,
    ],
    [
      'a deletion of an unknown collection',
      JSON.stringify({ c: 'widgets', id: 'wdg_1' }),
      /unknown collection/,
    ],
    [
      'a record without a field of its resource',
      line('ipPolicyRules', 'ipr_2', { id: 'ipr_2', ...base, cidr: '10.0.0.0/8', action: 'allow' }),
      /ipPolicyRules ipr_2: rec\.ip_policy_id: is required/,
    ],
    [
      'a field of the wrong type',
      line('ipPolicies', 'ipp_2', { id: 'ipp_2', ...base, created_at: 7 }),
      /rec\.created_at: .*expected string/,
    ],
    [
      'a record under another id',
      line('ipPolicies', 'ipp_2', { id: 'ipp_9', ...base }),
      /rec\.id: is "ipp_9"/,
    ],
    [
      'a line that is not an entry',
      JSON.stringify({ c: 'ipPolicies', id: 'ipp_2', recs: {} }),
      /unknown field: recs/,
    ],
  ])('refuses %s: names its line and what is wrong, changes nothing', async (_what, bad, problem) => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    const text = `${policy('ipp_1')}\n${bad}\n${policy('ipp_3')}\n`;
    writeFileSync(file, text);
    const err = await startEmulator({ dataFile: file }).then(
      () => new Error('started'),
      (e: Error) => e,
    );
    expect(err.message).toMatch(/line 2 is not a valid record \(/);
    expect(err.message).toMatch(problem);
    expect(err.message).toContain('--repair');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('edgectl emulator stops with one line naming the bad line, even when it is the last one', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    // a whole JSON line is never a torn write: the last line is refused too, newline or not
    const text = `${policy('ipp_1')}\n${line('ipPolicies', 'ipp_2', 42)}`;
    writeFileSync(file, text);
    const cli = await refused(file);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr.trim().split('\n')).toHaveLength(1);
    expect(cli.stderr).toMatch(/line 2 is not a valid record \(rec: .*expected object/);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('--repair drops them, keeps every other record and the original, and list and get answer 200', async () => {
    const dir = scratchDir('emu-');
    const file = join(dir, 'state.jsonl');
    const text = [
      policy('ipp_1'),
      line('ipPolicies', 'ipp_2', 42),
      line('widgets', 'wdg_1', { id: 'wdg_1' }),
      rule('ipr_1', 'ipp_1'),
      line('ipPolicyRules', 'ipr_2', { id: 'ipr_2', ...base }),
      'not json',
      policy('ipp_3'),
      '',
    ].join('\n');
    writeFileSync(file, text);
    const emu = await start(file, ['--repair']);
    const c = createClient({ baseUrl: emu.url, apiKey: 'emulator-key', rateLimitPerMinute: Infinity });
    try {
      expect((await collect(c.ipPolicies.list())).map((p) => p.id).sort()).toEqual(['ipp_1', 'ipp_3']);
      expect((await collect(c.ipPolicyRules.list())).map((r) => r.id)).toEqual(['ipr_1']);
      expect(await c.ipPolicies.get('ipp_1')).toMatchObject({ id: 'ipp_1', description: 'ipp_1' });
      expect(await c.ipPolicyRules.get('ipr_1')).toMatchObject({ id: 'ipr_1', ip_policy: { id: 'ipp_1' } });
      for (const path of [
        '/ip_policies',
        '/ip_policies/ipp_3',
        '/ip_policy_rules',
        '/ip_policy_rules/ipr_1',
      ]) {
        const res = await fetch(`${emu.url}${path}`, {
          headers: { authorization: 'Bearer emulator-key', 'service-version': '2' },
        });
        expect(res.status, path).toBe(200);
      }
    } finally {
      await c.close();
      emu.proc.kill('SIGKILL');
    }
    // gone, and its data file with it
    if (emu.proc.exitCode === null && emu.proc.signalCode === null)
      await new Promise((r) => emu.proc.once('exit', r));
    const backup = readdirSync(dir).find((f) => f.startsWith('state.jsonl.corrupt-'));
    expect(backup).toBeDefined();
    expect(readFileSync(join(dir, backup!), 'utf8')).toBe(text);
    // the repaired file starts without --repair
    const again = await startEmulator({ dataFile: file });
    expect(
      again.store
        .all('ipPolicies')
        .map((r) => r.id)
        .sort(),
    ).toEqual(['ipp_1', 'ipp_3']);
    await again.close();
  }, 30_000);

  it('every record the emulator writes, of every collection, is loaded again as it was', async () => {
    const file = join(scratchDir('emu-'), 'state.jsonl');
    const h = await emulatorWithClient({
      dataFile: file,
      agents: [
        {
          name: 'web',
          update: { available_version: '3.6.0' },
          tunnels: [{ labels: { app: 'web' }, forwards_to: 'localhost:80' }, { forwards_to: 'localhost:81' }],
        },
      ],
    });
    const c = h.client;
    const p = await c.ipPolicies.create({ description: 'p' });
    await c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '10.0.0.0/8', action: 'allow' });
    await c.ipRestrictions.create({ type: 'api', ip_policy_ids: [p.id] });
    const tg = await c.tunnelGroupBackends.create({ labels: { app: 'web' } });
    await c.weightedBackends.create({ backends: { [tg.id]: 1 } });
    await c.sshCredentials.create({ public_key: sshPublicKey() });
    const ca = await c.certificateAuthorities.create({ ca_pem: await selfSignedCaPem('Test CA') });
    const https = await c.httpsEdges.create({ hostports: ['a.example.com:443'], tls_termination: {} });
    await c.httpsEdgeRoutes.create(https.id, {
      match_type: 'path_prefix',
      match: '/',
      backend: { backend_id: tg.id },
      ip_restriction: { ip_policy_ids: [p.id] },
      circuit_breaker: {
        tripped_duration: 10,
        rolling_window: 60,
        num_buckets: 10,
        error_threshold_percentage: 0.5,
      },
      compression: {},
      request_headers: { add: { 'x-a': '1' } },
      response_headers: { remove: ['x-b'] },
      webhook_verification: { provider: 'github', secret: 'whsec' },
      oauth: { provider: { google: {} } },
      // one login module enabled per route, and on one route of an edge (ERR_NGROK_7079, 7155)
      saml: { enabled: false, idp_metadata: '<EntityDescriptor/>' },
      websocket_tcp_converter: {},
    });
    const r2 = await c.httpsEdgeRoutes.create(https.id, { match_type: 'exact_path', match: '/oidc' });
    await c.httpsEdgeRouteModules.oidc.put(https.id, r2.id, {
      enabled: false,
      issuer: 'https://accounts.example.com',
      client_id: 'id',
      client_secret: 'sec',
    });
    await c.tcpEdges.create({ backend: { backend_id: tg.id } });
    const tls = await c.tlsEdges.create({ tls_termination: { terminate_at: 'upstream' } });
    // mutual TLS is not enabled while TLS passes upstream (ERR_NGROK_7062)
    await c.tlsEdgeModules.mutual_tls.put(tls.id, { enabled: false, certificate_authority_ids: [ca.id] });
    await c.tlsEdgeModules.backend.put(tls.id, { backend_id: tg.id });
    const [session] = await collect(c.tunnelSessions.list());
    await c.tunnelSessions.update(session!.id, {});
    const before = h.emu.store;
    const colls = [
      'ipPolicies',
      'ipPolicyRules',
      'ipRestrictions',
      'tunnelGroupBackends',
      'weightedBackends',
      'sshCredentials',
      'certificateAuthorities',
      'httpsEdges',
      'httpsEdgeRoutes',
      'tcpEdges',
      'tlsEdges',
      'tunnelSessions',
      'tunnels',
      'agents',
    ];
    // a collection added to the store needs a record here
    expect(Object.keys(STORED_RECORDS).sort()).toEqual([...colls].sort());
    const snapshot = Object.fromEntries(colls.map((k) => [k, before.all(k)]));
    for (const k of colls) expect(snapshot[k]!.length, k).toBeGreaterThan(0);
    await h.close();
    const again = await startEmulator({ dataFile: file });
    try {
      for (const k of colls) expect(again.store.all(k), k).toEqual(snapshot[k]);
    } finally {
      await again.close();
    }
  });
});
