// Thousands of random requests: the emulator never answers 5xx and stays up.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { flattenOperations } from '../../src/api/operations.ts';
import { seeded } from '../../src/emulator/faults.ts';
import { emulatorWithClient, type Harness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await emulatorWithClient({
    agents: [{ name: 'a', tunnels: [{ labels: { x: 'y' }, forwards_to: 'localhost:1' }] }],
  });
});
afterAll(() => h.close());

const N = Number(process.env.FUZZ_REQUESTS ?? 3000);

it(`survives ${N} random requests without a 5xx`, async () => {
  const rand = seeded(Number(process.env.FUZZ_SEED ?? 42));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const ops = flattenOperations();
  const ids: string[] = ['ipp_x', 'edghts_1', 'ts_zz'];
  const values = (): unknown =>
    pick([
      () => null,
      () => true,
      () => Math.floor(rand() * 2e10) - 1e10,
      () => rand(),
      () => 'x'.repeat(Math.floor(rand() * 5000)),
      () => pick(ids),
      () =>
        pick([
          'allow',
          'deny',
          'api',
          '10.0.0.0/8',
          '::/0',
          'a.example.com:443',
          '1.3',
          'upstream',
          'github',
          '*',
        ]),
      () => [values(), values()],
      () => ({ [pick(['a', 'cidr', 'backend_id', 'github'])]: values() }),
      () => '\u0000\uffff😀',
    ])();
  const fields = [
    'description',
    'metadata',
    'cidr',
    'action',
    'ip_policy_id',
    'ip_policy_ids',
    'type',
    'enforced',
    'labels',
    'backends',
    'public_key',
    'acl',
    'owner_id',
    'hostports',
    'match_type',
    'match',
    'backend',
    'oauth',
    'saml',
    'oidc',
    'circuit_breaker',
    'provider',
    'secret',
    'min_version',
    'terminate_at',
    'num_buckets',
    'add',
    'remove',
    'zzz',
  ];
  const statuses = new Map<number, number>();
  for (let i = 0; i < N; i++) {
    const [, def] = pick(ops);
    let path = def.path.replace(/\{\w+\}/g, () => pick(ids));
    if (rand() < 0.1) path += pick(['/x', '?limit=0', '?limit=abc', '?before_id=%00', '/../..', '%2F']);
    const method = rand() < 0.9 ? def.method : pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    const body: Record<string, unknown> = {};
    if (def.kind === 'op' && def.path.includes('routes') && rand() < 0.3) body.match_type = 'path_prefix';
    for (let k = Math.floor(rand() * 5); k > 0; k--) body[pick(fields)] = values();
    const headers: Record<string, string> = {
      authorization: `Bearer ${h.emu.apiKey}`,
      'service-version': '2',
    };
    let payload: string | undefined;
    if (method !== 'GET' && method !== 'DELETE') {
      headers['content-type'] = rand() < 0.95 ? 'application/json' : 'text/plain';
      payload = rand() < 0.05 ? '{"broken' : JSON.stringify(rand() < 0.05 ? [body] : body);
    }
    if (rand() < 0.03) delete headers['service-version'];
    const res = await fetch(`${h.emu.url}${path}`, { method, headers, body: payload });
    const json = (await res.json().catch(() => null)) as { id?: string; error_code?: string } | null;
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    expect(res.status, `${method} ${path} ${payload ?? ''}`).toBeLessThan(500);
    if (res.status >= 400) expect(json?.error_code, `${method} ${path}`).toBeTruthy();
    if (json?.id && res.status === 201) ids.push(json.id);
  }
  // the fuzz reached real work, not only rejections
  expect(statuses.get(201) ?? 0).toBeGreaterThan(0);
  expect(statuses.get(400) ?? 0).toBeGreaterThan(N / 10);
  const alive = await fetch(`${h.emu.url}/tunnels`, {
    headers: { authorization: `Bearer ${h.emu.apiKey}`, 'service-version': '2' },
  });
  expect(alive.status).toBe(200);
}, 120_000);
