import { errors, MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collect, createClient, type EdgeClient } from '../../src/api/client.ts';
import { ApiError, isNotFound, isRateLimited, isRetryable } from '../../src/api/errors.ts';
import { REDACTED, redactCredentials } from '../../src/api/redact.ts';
import { parseRetryAfter } from '../../src/api/retry-after.ts';
import type { CallEvent } from '../../src/api/transport.ts';
import { fillMessage, SERVED } from '../../src/emulator/catalogue.ts';
import { Budget, withPriority } from '../../src/operator/runtime/scheduler/budget.ts';
import reference from '../integration/public-errors.reference.json' with { type: 'json' };

/** Every page of the public error reference: what the emulator serves and the rest. */
const CATALOGUE: readonly { number: number; message: string }[] = [...SERVED, ...reference.entries];

const ORIGIN = 'http://api.test';
const rule = {
  id: 'ipr_1',
  uri: `${ORIGIN}/ip_policy_rules/ipr_1`,
  created_at: '2026-01-01T00:00:00Z',
  cidr: '10.0.0.0/8',
  action: 'allow',
  ip_policy: { id: 'ipp_1', uri: `${ORIGIN}/ip_policies/ipp_1` },
};
const created = { ip_policy_id: 'ipp_1', cidr: '10.0.0.0/8', action: 'allow' as const };

let agent: MockAgent;
let client: EdgeClient;
let budget: Budget;
let sleeps: number[];
let calls: CallEvent[];

function connRefused() {
  return Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
}

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  sleeps = [];
  calls = [];
  budget = new Budget({ perMinute: Infinity });
  client = createClient({
    baseUrl: ORIGIN,
    apiKey: 'secret-key',
    dispatcher: agent,
    gate: budget,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onCall: (e) => calls.push(e),
  });
});
afterEach(async () => {
  await agent.close();
});

describe('transport', () => {
  it('sends the bearer key, the version header, a user agent and a JSON body', async () => {
    let seen: Record<string, string> = {};
    let sentBody = '';
    agent
      .get(ORIGIN)
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .reply((opts) => {
        seen = opts.headers as Record<string, string>;
        sentBody = String(opts.body);
        return { statusCode: 201, data: rule };
      });
    const out = await client.ipPolicyRules.create(created);
    expect(out.id).toBe('ipr_1');
    expect(seen.authorization).toBe('Bearer secret-key');
    expect(seen['service-version']).toBe('2');
    expect(seen['user-agent']).toMatch(/^edge-operator\/\d+\.\d+\.\d+/);
    expect(seen['content-type']).toBe('application/json');
    expect(JSON.parse(sentBody)).toEqual(created);
    expect(calls).toEqual([
      expect.objectContaining({ operation: 'ipPolicyRules.create', status: 201, attempt: 1 }),
    ]);
  });

  it('retries a GET on 503 with backoff and returns the eventual answer', async () => {
    const pool = agent.get(ORIGIN);
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(503, { msg: 'busy' }).times(2);
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(200, rule);
    const out = await client.ipPolicyRules.get('ipr_1');
    expect(out.cidr).toBe('10.0.0.0/8');
    expect(calls.map((c) => c.status)).toEqual([503, 503, 200]);
    // full jitter with random()=0.5: half of 250ms, then half of 500ms
    expect(sleeps).toEqual([125, 250]);
  });

  it('never retries a create after a timeout: the server may have acted on it', async () => {
    agent
      .get(ORIGIN)
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .replyWithError(new errors.HeadersTimeoutError());
    const err = await client.ipPolicyRules.create(created).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.networkCode).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(calls).toHaveLength(1);
    expect(isRetryable(err)).toBe(true);
  });

  it('never retries a create on a 5xx', async () => {
    agent.get(ORIGIN).intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(502, 'bad gateway');
    const err = await client.ipPolicyRules.create(created).catch((e) => e);
    expect(err.status).toBe(502);
    expect(calls).toHaveLength(1);
  });

  it('a timeout is not retried within the call, even for an idempotent PATCH: the caller learns at once', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'PATCH' })
      .replyWithError(new errors.HeadersTimeoutError());
    const err = await client.ipPolicyRules.update('ipr_1', { cidr: '10.0.0.0/8' }).catch((e) => e);
    expect(err).toMatchObject({ networkCode: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(isRetryable(err)).toBe(true);
    expect(calls.map((c) => c.status)).toEqual([0]);
  });

  it('retries a PATCH after a connection reset (idempotent)', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'PATCH' })
      .replyWithError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'PATCH' }).reply(200, rule);
    await client.ipPolicyRules.update('ipr_1', { cidr: '10.0.0.0/8' });
    expect(calls.map((c) => c.status)).toEqual([0, 200]);
  });

  it('retries a create when the connection was refused (it never left)', async () => {
    const pool = agent.get(ORIGIN);
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).replyWithError(connRefused());
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(201, rule);
    const out = await client.ipPolicyRules.create(created);
    expect(out.id).toBe('ipr_1');
    expect(calls.map((c) => c.status)).toEqual([0, 201]);
  });

  it('retries a create on 429 and waits the Retry-After seconds', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .reply(429, { error_code: 'ERR_RATE_LIMITED', msg: 'slow down' }, { headers: { 'retry-after': '3' } });
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(201, rule);
    await client.ipPolicyRules.create(created);
    expect(sleeps).toEqual([3000]);
  });

  it("a 429's Retry-After wait lets the caller's worker go (the run goes on by itself), a 5xx backoff does not", async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .reply(429, { error_code: 'ERR_RATE_LIMITED', msg: 'slow down' }, { headers: { 'retry-after': '3' } });
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(201, rule);
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(503, { msg: 'busy' });
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(200, rule);
    const told: number[] = [];
    const cell = { priority: 'high' as const, flow: 'team', onWait: () => told.push(sleeps.length) };
    await withPriority(cell, () => client.ipPolicyRules.create(created));
    // told before the Retry-After sleep began, and the budget counts as backed up meanwhile
    expect(told).toEqual([0]);
    expect(budget.backedUp('urgent')).toBe(true);
    await withPriority(cell, () => client.ipPolicyRules.get('ipr_1'));
    expect(told).toEqual([0]);
    expect(sleeps).toHaveLength(2);
  });

  it("a short 429 wait (the API's 1 s) lets the worker go too, and holds no new work back", async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .reply(429, { msg: 'slow down' }, { headers: { 'retry-after': '1' } });
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(201, rule);
    const told: string[] = [];
    await withPriority({ priority: 'high', flow: 'team', onWait: () => told.push('wait') }, () =>
      client.ipPolicyRules.create(created),
    );
    expect(sleeps).toEqual([1000]);
    expect(told).toEqual(['wait']);
    expect(budget.backedUp('urgent')).toBe(false);
  });

  it('understands Retry-After as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });

  it('gives up when Retry-After is longer than the allowed wait, keeping the delay for the caller', async () => {
    agent
      .get(ORIGIN)
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' })
      .reply(429, { msg: 'quota' }, { headers: { 'retry-after': '600' } });
    const err = await client.ipPolicyRules.get('ipr_1').catch((e) => e);
    expect(isRateLimited(err)).toBe(true);
    expect(err.retryAfterMs).toBe(600_000);
    expect(calls).toHaveLength(1);
  });

  it('parses the API error body, and still reports a status for a non-JSON body', async () => {
    const pool = agent.get(ORIGIN);
    pool.intercept({ path: '/ip_policy_rules/ipr_2', method: 'GET' }).reply(404, {
      error_code: 'ERR_NOT_FOUND',
      status_code: 404,
      msg: 'ip policy rule ipr_2 not found',
      details: { operation_id: 'op_abc' },
    });
    const e1 = await client.ipPolicyRules.get('ipr_2').catch((e) => e);
    expect(isNotFound(e1)).toBe(true);
    expect(e1.errorCode).toBe('ERR_NOT_FOUND');
    expect(e1.operationId).toBe('op_abc');
    expect(e1.resourceId).toBe('ipr_2');
    expect(e1.operation).toBe('ipPolicyRules.get');
    expect(e1.message).toContain('ip policy rule ipr_2 not found');

    pool.intercept({ path: '/ip_policy_rules/ipr_3', method: 'DELETE' }).reply(400, 'oops');
    const e2 = await client.ipPolicyRules.delete('ipr_3').catch((e) => e);
    expect(e2).toBeInstanceOf(ApiError);
    expect(e2.status).toBe(400);
    expect(e2.errorCode).toBeUndefined();
    expect(e2.networkCode).toBe('BAD_RESPONSE');
    expect(e2.apiMessage).toContain('"oops"');
  });

  it('follows next_page_uri across pages', async () => {
    const pool = agent.get(ORIGIN);
    const r = (id: string) => ({ ...rule, id });
    pool.intercept({ path: '/ip_policy_rules?limit=2', method: 'GET' }).reply(200, {
      ip_policy_rules: [r('ipr_a'), r('ipr_b')],
      uri: `${ORIGIN}/ip_policy_rules`,
      next_page_uri: `${ORIGIN}/ip_policy_rules?limit=2&before_id=ipr_b`,
    });
    pool.intercept({ path: '/ip_policy_rules?limit=2&before_id=ipr_b', method: 'GET' }).reply(200, {
      ip_policy_rules: [r('ipr_c')],
      uri: `${ORIGIN}/ip_policy_rules`,
      next_page_uri: null,
    });
    const all = await collect(client.ipPolicyRules.list({ limit: 2 }));
    expect(all.map((x) => x.id)).toEqual(['ipr_a', 'ipr_b', 'ipr_c']);
  });

  it('one malformed resource in a page: named (not taken for a wrong URL), or left out and told while the rest stands', async () => {
    const pool = agent.get(ORIGIN);
    const page = {
      ip_policy_rules: [
        { ...rule, id: 'ipr_a' },
        { ...rule, id: 'ipr_bad', cidr: null },
        { ...rule, id: 'ipr_c' },
      ],
      uri: `${ORIGIN}/ip_policy_rules`,
      next_page_uri: null,
    };
    pool.intercept({ path: '/ip_policy_rules?limit=100', method: 'GET' }).reply(200, page);
    const err = await collect(client.ipPolicyRules.list()).catch((e) => e);
    expect(err).toMatchObject({ networkCode: 'BAD_RESPONSE', resourceId: 'ipr_bad' });
    expect(err.message).toMatch(/listed ipr_bad in a shape the operator does not know \(cidr: /);
    expect(err.message).not.toMatch(/--api-url/);
    pool.intercept({ path: '/ip_policy_rules?limit=100', method: 'GET' }).reply(200, page);
    const told: unknown[] = [];
    const all = await collect(client.ipPolicyRules.list({ onMalformed: (m) => told.push(m) }));
    expect(all.map((x) => x.id)).toEqual(['ipr_a', 'ipr_c']);
    expect(told).toEqual([{ id: 'ipr_bad', field: 'cidr', problem: expect.any(String) }]);
    // read alone, the resource is named too
    pool.intercept({ path: '/ip_policy_rules/ipr_bad', method: 'GET' }).reply(200, page.ip_policy_rules[1]!);
    const one = await client.ipPolicyRules.get('ipr_bad').catch((e) => e);
    expect(one.message).toMatch(/answered ipr_bad in a shape the operator does not know \(cidr: /);
  });

  it('refuses to send the API key to a next_page_uri on another origin', async () => {
    agent
      .get(ORIGIN)
      .intercept({ path: '/tunnels?limit=100', method: 'GET' })
      .reply(200, {
        tunnels: [],
        uri: `${ORIGIN}/tunnels`,
        next_page_uri: 'http://evil.test/tunnels?before_id=x',
      });
    await expect(collect(client.tunnels.list())).rejects.toThrow(/not the API origin/);
  });

  it('tolerates unknown response fields and rejects responses missing required ones', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' })
      .reply(200, { ...rule, future_field: 1 });
    await expect(client.ipPolicyRules.get('ipr_1')).resolves.toMatchObject({ id: 'ipr_1' });
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(200, { id: 'ipr_1' });
    const err = await client.ipPolicyRules.get('ipr_1').catch((e) => e);
    expect(err).toMatchObject({ networkCode: 'BAD_RESPONSE' });
    expect(err.message).toMatch(
      /answered a body that is not the API's \(.+\): is --api-url the API's base URL\?/,
    );
    // retryable (the API is away or it is not the API), never "not found" or "refused"
    expect(isRetryable(err)).toBe(true);
  });

  it("a proxy's own 503 page or plain-text 429 is tried again as the API's would be (Retry-After kept), not taken for a wrong URL", async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' })
      .reply(503, '<!doctype html><title>Service Unavailable</title>', {
        headers: { 'content-type': 'text/html' },
      });
    pool.intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' }).reply(200, rule);
    await expect(client.ipPolicyRules.get('ipr_1')).resolves.toMatchObject({ id: 'ipr_1' });
    expect(calls.map((c) => c.status)).toEqual([503, 200]);
    pool
      .intercept({ path: '/ip_policy_rules', method: 'POST' })
      .reply(429, 'Too Many Requests', { headers: { 'content-type': 'text/plain', 'retry-after': '7' } });
    pool.intercept({ path: '/ip_policy_rules', method: 'POST' }).reply(201, rule);
    await client.ipPolicyRules.create(created);
    expect(sleeps.at(-1)).toBe(7000);
    // out of attempts: the error says what answered, and keeps the wait the proxy asked for
    const once = createClient({
      baseUrl: ORIGIN,
      apiKey: 'secret-key',
      dispatcher: agent,
      rateLimitPerMinute: Infinity,
      retry: { maxAttempts: 1 },
    });
    pool
      .intercept({ path: '/ip_policy_rules/ipr_1', method: 'GET' })
      .reply(429, 'slow down', { headers: { 'content-type': 'text/plain', 'retry-after': '30' } });
    const err = await once.ipPolicyRules.get('ipr_1').catch((e) => e);
    expect(err).toMatchObject({ status: 429, retryAfterMs: 30_000 });
    expect(isRateLimited(err)).toBe(true);
    expect(err.message).toContain('from in front of the API (a proxy or load balancer)');
    expect(err.message).not.toContain('--api-url');
  });

  it('an agent command (a POST that is no create) is not sent twice after a connection reset', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/tunnel_sessions/ts_1/restart', method: 'POST' })
      .replyWithError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    await expect(client.tunnelSessions.restart('ts_1', {})).rejects.toMatchObject({
      networkCode: 'ECONNRESET',
    });
    expect(calls.map((c) => c.status)).toEqual([0]);
  });

  it('a next_page_uri that leads back to a page already read ends the list with an error, not a loop', async () => {
    const pool = agent.get(ORIGIN);
    const page = {
      ip_policy_rules: [rule],
      uri: `${ORIGIN}/ip_policy_rules`,
      next_page_uri: `${ORIGIN}/ip_policy_rules?limit=100`,
    };
    pool.intercept({ path: '/ip_policy_rules?limit=100', method: 'GET' }).reply(200, page).times(2);
    await expect(collect(client.ipPolicyRules.list())).rejects.toThrow(/next_page_uri repeats/);
    expect(calls).toHaveLength(1);
  });

  it('a key echoed across where a non-JSON body is cut: no part of it left', async () => {
    const key = 'zq9Xw7Lm3pT2zq9Xw7Lm3pT2';
    const c = createClient({ baseUrl: ORIGIN, apiKey: key, dispatcher: agent, rateLimitPerMinute: Infinity });
    agent
      .get(ORIGIN)
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(401, `${'x'.repeat(70)}${key}`, { headers: { 'content-type': 'text/plain' } });
    const err = await c.ipPolicies.get('ipp_1').catch((e) => e);
    expect(err.message).not.toContain(key.slice(0, 6));
    await c.close();
  });

  it('an HTML answer is not the API: never a success, never a 404 that reads as deleted', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'DELETE' })
      .reply(404, '<!doctype html><title>Not Found</title>', { headers: { 'content-type': 'text/html' } });
    const err = await client.ipPolicies.delete('ipp_1').catch((e) => e);
    expect(isNotFound(err)).toBe(false);
    expect(isRetryable(err)).toBe(true);
    expect(err.message).toContain("answered HTML (HTTP 404, text/html), not the API's JSON");
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(200, '<html>welcome</html>', { headers: { 'content-type': 'text/html; charset=utf-8' } });
    await expect(client.ipPolicies.get('ipp_1')).rejects.toMatchObject({ networkCode: 'BAD_RESPONSE' });
  });

  it('while the API is away, one call probes it and the others fail at once with the reason; its answer ends the outage', async () => {
    const outages: (string | undefined)[] = [];
    const c = createClient({
      baseUrl: ORIGIN,
      apiKey: 'k',
      dispatcher: agent,
      rateLimitPerMinute: Infinity,
      onOutage: (o) => outages.push(o?.reason),
    });
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(200, '<html>hi</html>', { headers: { 'content-type': 'text/html' } });
    await expect(c.ipPolicies.get('ipp_1')).rejects.toMatchObject({ networkCode: 'BAD_RESPONSE' });
    // one answer is bad luck; a second in a row is an outage
    expect(outages).toEqual([]);
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(200, '<html>hi</html>', { headers: { 'content-type': 'text/html' } });
    await expect(c.ipPolicies.get('ipp_1')).rejects.toMatchObject({ networkCode: 'BAD_RESPONSE' });
    // the probe: answered by the API, slowly
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(200, {
        id: 'ipp_1',
        uri: `${ORIGIN}/ip_policies/ipp_1`,
        created_at: '2026-01-01T00:00:00Z',
        description: '',
        metadata: '',
      })
      .delay(100);
    const probe = c.ipPolicies.get('ipp_1');
    const other = await c.ipPolicies.get('ipp_2').catch((e) => e);
    expect(other).toMatchObject({ networkCode: 'API_UNAVAILABLE', retryAfterMs: 5000 });
    expect(other.message).toContain("answered HTML (HTTP 200, text/html), not the API's JSON");
    await expect(probe).resolves.toMatchObject({ id: 'ipp_1' });
    pool.intercept({ path: '/ip_policies/ipp_2', method: 'DELETE' }).reply(204, '');
    await expect(c.ipPolicies.delete('ipp_2')).resolves.toBeUndefined();
    expect(outages).toEqual([expect.stringContaining('answered HTML'), undefined]);
    await c.close();
  });

  it('treats a 204 as an empty answer for deletes and agent commands', async () => {
    const pool = agent.get(ORIGIN);
    pool.intercept({ path: '/tunnel_sessions/ts_1/restart', method: 'POST', body: '{}' }).reply(204, '');
    await expect(client.tunnelSessions.restart('ts_1', {})).resolves.toBeUndefined();
  });
});

describe('an error message of a bounded length', () => {
  it("a page-long message (a proxy's, say) is cut to 1,024 characters: it becomes a condition and an Event", async () => {
    const c = createClient({ baseUrl: ORIGIN, apiKey: 'k', dispatcher: agent, rateLimitPerMinute: Infinity });
    agent
      .get(ORIGIN)
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(400, { error_code: 'ERR_X', status_code: 400, msg: `bad ${'x'.repeat(20_000)}` });
    const e = await c.ipPolicies.get('ipp_1').catch((x) => x);
    expect(e.apiMessage).toHaveLength(1025);
    expect(e.apiMessage.startsWith('bad xxx')).toBe(true);
    expect(e.apiMessage.endsWith('…')).toBe(true);
  });
});

describe('no part of the API key in an error', () => {
  // characters that no message holds by chance
  const KEY = 'zq9Xw7Lm3pT2';
  let c: EdgeClient;
  beforeEach(() => {
    c = createClient({ baseUrl: ORIGIN, apiKey: KEY, dispatcher: agent, rateLimitPerMinute: Infinity });
  });
  /** Runs of 4 of the key's characters (a quoted prefix, the key itself) found in the text. */
  const keyParts = (text: string) =>
    Array.from({ length: KEY.length - 3 }, (_, i) => KEY.slice(i, i + 4)).filter((p) => text.includes(p));

  it('the API quoting the start of the key it got (ERR_NGROK_203): redacted in the message and apiMessage', async () => {
    agent.get(ORIGIN).intercept({ path: '/ip_policies/ipp_1', method: 'GET' }).reply(403, {
      error_code: 'ERR_NGROK_203',
      status_code: 403,
      msg: 'The API authentication you specified is properly formed, but it is invalid. Your authentication: zq9X.... API keys and instructions are available on your dashboard: https://dashboard.ngrok.com/api-keys',
    });
    const e = await c.ipPolicies.get('ipp_1').catch((x) => x);
    expect(e).toMatchObject({ status: 403, errorCode: 'ERR_NGROK_203' });
    expect(e.apiMessage).toBe(
      `The API authentication you specified is properly formed, but it is invalid. Your authentication: ${REDACTED}. API keys and instructions are available on your dashboard: https://dashboard.ngrok.com/api-keys`,
    );
    expect(keyParts(e.message)).toEqual([]);
    expect(keyParts(e.apiMessage)).toEqual([]);
  });

  it('a whole key echoed anywhere (a proxy, a non-JSON body): redacted', async () => {
    const pool = agent.get(ORIGIN);
    pool
      .intercept({ path: '/ip_policies/ipp_1', method: 'GET' })
      .reply(401, { error_code: 'ERR_X', msg: 'the key zq9Xw7Lm3pT2 was refused' });
    const e1 = await c.ipPolicies.get('ipp_1').catch((x) => x);
    expect(e1.apiMessage).toBe(`the key ${REDACTED} was refused`);
    pool
      .intercept({ path: '/ip_policies/ipp_2', method: 'GET' })
      .reply(401, 'denied: Authorization: Bearer zq9Xw7Lm3pT2', {
        headers: { 'content-type': 'text/plain' },
      });
    const e2 = await c.ipPolicies.get('ipp_2').catch((x) => x);
    expect(e2.status).toBe(401);
    expect(keyParts(e2.message)).toEqual([]);
    expect(e2.message).toContain(REDACTED);
  });

  it.each(
    CATALOGUE.filter((x) => /<TOKEN>|Authorization Header: <VAL>/.test(x.message)).map((x) => [
      x.number,
      x.message,
    ]),
  )('ERR_NGROK_%s: the credential it quotes is redacted, the rest kept', (_n, message) => {
    const quoted = fillMessage(message, { TOKEN: 'wron....', VAL: 'Token wrong-key' });
    const out = redactCredentials(quoted, 'wrong-key');
    expect(out).not.toMatch(/wron/);
    expect(out).toContain(REDACTED);
    // the rest of the message as it was (trailing dots aside: "wron...." ends a sentence)
    expect(out.replace(/\[redacted\]\.*/, '')).toBe(quoted.replace(/wron\.*|Token wrong-key\.*/, ''));
  });

  it('a message quoting no credential is unchanged', () => {
    for (const m of [
      'ip policy ipp_1 not found',
      'The ID ipp_1 is not a valid IP Policy ID.',
      'Description is limited to 255 characters; you have entered 300 characters.',
    ])
      expect(redactCredentials(m, KEY)).toBe(m);
  });
});
