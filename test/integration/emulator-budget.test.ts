// The account's request budget, emulated: a rolling per-account limit answered with 429,
// the API's error body and Retry-After; admin endpoints free; every call counted by
// operation so tests and benchmarks see what a client spent.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { raw } from './harness.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    rateLimitPerMinute: 5,
    apiKeys: [
      { key: 'a', ownerId: 'usr_a', admin: true },
      { key: 'b', ownerId: 'usr_b', admin: false },
    ],
  });
});
afterAll(() => emu.close());

const as = (key: string, path = '/ip_policies') =>
  raw(emu, 'GET', path, { headers: { authorization: `Bearer ${key}` } });

it('answers 429 with Retry-After beyond the limit, per account; admin endpoints are not counted', async () => {
  for (let i = 0; i < 10; i++) expect((await as('a', '/_emulator/state')).status).toBe(200);
  for (let i = 0; i < 5; i++) expect((await as('a')).status).toBe(200);
  const over = await as('a');
  expect(over.status).toBe(429);
  // the API reference's rate limit: ERR_NGROK_226 with HTTP 429
  expect(over.json).toMatchObject({ error_code: 'ERR_NGROK_226', status_code: 429 });
  expect(over.json.msg).toContain('5 API requests per minute');
  const retry = Number(over.headers.get('retry-after'));
  expect(retry).toBeGreaterThanOrEqual(1);
  expect(retry).toBeLessThanOrEqual(60);
  // another account has its own budget
  expect((await as('b')).status).toBe(200);
});

it('counts every API call by operation and status at /_emulator/metrics', async () => {
  const res = await fetch(`${emu.url}/_emulator/metrics`, { headers: { authorization: 'Bearer a' } });
  const m = { status: res.status, text: await res.text() };
  expect(m.status).toBe(200);
  expect(m.text).toContain('# TYPE emulator_requests_total counter');
  expect(m.text).toContain('emulator_requests_total{operation="ipPolicies.list",status="200"} 6');
  expect(m.text).toContain('emulator_requests_total{operation="ipPolicies.list",status="429"} 1');
  expect(m.text).not.toContain('_emulator');
  expect(emu.counters.total('ipPolicies.list')).toBe(7);
});
