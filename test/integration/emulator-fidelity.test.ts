// What a client built for the public API expects of the emulator: absent fields are their
// zero value, IP policy deletes behave as documented, errors carry the public numbers,
// `filter` is honoured (or refused, never ignored), tunnels name their endpoint, and an
// unknown path is not a missing resource.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, type EdgeClient } from '../../src/api/client.ts';
import { type ApiError, isNotFound, isUnknownPath } from '../../src/api/errors.ts';
import { emulatorWithClient, type Harness, raw } from './harness.ts';

let h: Harness;
let c: EdgeClient;
beforeAll(async () => {
  h = await emulatorWithClient({
    agents: [{ name: 'laptop', tunnels: [{ proto: 'https', forwards_to: 'localhost:3000' }] }],
  });
  c = h.client;
});
afterAll(() => h.close());

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: ApiError) => e,
  );
// biome-ignore lint/suspicious/noExplicitAny: wire-level tests send what generated clients send
const loose = (x: unknown) => x as any;

describe('absent fields are their zero value', () => {
  it('circuit breaker: omitted numbers are 0, which the API refuses where it asks for at least 1', async () => {
    const e = await c.httpsEdges.create({ hostports: ['zero.example.com:443'] });
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    // a generated client omits zeros: an absent tripped duration is 0, refused as the API does
    const none = await failure(
      c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, loose({ enabled: true })),
    );
    expect(none.errorNumber).toBe(7016);
    const cb = await c.httpsEdgeRouteModules.circuit_breaker.put(
      e.id,
      r.id,
      loose({ tripped_duration: 10, rolling_window: 60, num_buckets: 10 }),
    );
    expect(cb).toMatchObject({ tripped_duration: 10, volume_threshold: 0, error_threshold_percentage: 0 });
    const partial = await failure(
      c.httpsEdgeRouteModules.circuit_breaker.put(
        e.id,
        r.id,
        loose({ tripped_duration: 10, num_buckets: 10 }),
      ),
    );
    expect(partial.errorNumber).toBe(7017);
    expect(
      (await failure(c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, loose({ num_buckets: 129 }))))
        .status,
    ).toBe(400);
    expect(
      (
        await failure(
          c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, loose({ error_threshold_percentage: 2 })),
        )
      ).status,
    ).toBe(400);
  });

  it('OIDC without scopes, mutual TLS with no or empty certificate authorities', async () => {
    const e = await c.httpsEdges.create({ hostports: ['oidc.example.com:443'] });
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    const oidc = await c.httpsEdgeRouteModules.oidc.put(
      e.id,
      r.id,
      loose({ issuer: 'https://idp.example.com', client_id: 'id', client_secret: 'secret' }),
    );
    expect(oidc.scopes).toEqual([]);
    const tls = await c.tlsEdges.create({ hostports: ['mtls.example.com:443'] });
    expect((await c.tlsEdgeModules.mutual_tls.put(tls.id, loose({}))).certificate_authorities).toEqual([]);
    expect(
      (await c.tlsEdgeModules.mutual_tls.put(tls.id, { certificate_authority_ids: [] }))
        .certificate_authorities,
    ).toEqual([]);
  });
});

describe('IP policy deletes follow the public API', () => {
  it('a policy holding rules is deleted with its rules', async () => {
    const p = await c.ipPolicies.create({});
    const rules = await Promise.all(
      ['10.0.0.0/8', '192.168.0.0/16'].map((cidr) =>
        c.ipPolicyRules.create({ ip_policy_id: p.id, cidr, action: 'allow' }),
      ),
    );
    await c.ipPolicies.delete(p.id);
    for (const r of rules) expect(isNotFound(await failure(c.ipPolicyRules.get(r.id)))).toBe(true);
  });

  it('a policy an IP restriction uses is refused with ERR_NGROK_1420 naming the restrictions', async () => {
    const p = await c.ipPolicies.create({});
    const x = await c.ipRestrictions.create({ type: 'api', ip_policy_ids: [p.id] });
    const e = await failure(c.ipPolicies.delete(p.id));
    expect(e.status).toBe(400);
    expect(e.errorCode).toBe('ERR_NGROK_1420');
    expect(e.errorNumber).toBe(1420);
    expect(e.apiMessage).toContain(x.id);
    expect(e.details?.code).toBe('ERR_IP_POLICY_IN_USE');
    await c.ipRestrictions.delete(x.id);
    await c.ipPolicies.delete(p.id);
  });

  it('a policy only route modules use is deleted; the module keeps naming it', async () => {
    const p = await c.ipPolicies.create({});
    const e = await c.httpsEdges.create({ hostports: ['ipr.example.com:443'] });
    const r = await c.httpsEdgeRoutes.create(e.id, {
      match_type: 'path_prefix',
      match: '/',
      ip_restriction: { ip_policy_ids: [p.id] },
    });
    await c.ipPolicies.delete(p.id);
    const route = await c.httpsEdgeRoutes.get(e.id, r.id);
    expect(route.ip_restriction?.ip_policies.map((x) => x.id)).toEqual([p.id]);
  });

  it('the only rule of a policy a dashboard restriction uses is kept (ERR_NGROK_1419); other types allow it', async () => {
    const p = await c.ipPolicies.create({});
    const only = await c.ipPolicyRules.create({
      ip_policy_id: p.id,
      cidr: '203.0.113.0/24',
      action: 'allow',
    });
    const x = await c.ipRestrictions.create({ type: 'dashboard', ip_policy_ids: [p.id] });
    const e = await failure(c.ipPolicyRules.delete(only.id));
    expect(e.errorNumber).toBe(1419);
    expect(e.apiMessage).toContain(x.id);
    // with a second rule, either may go
    const second = await c.ipPolicyRules.create({
      ip_policy_id: p.id,
      cidr: '198.51.100.0/24',
      action: 'allow',
    });
    await c.ipPolicyRules.delete(only.id);
    await c.ipRestrictions.update(x.id, loose({ enforced: false }));
    const api = await c.ipPolicies.create({});
    const lone = await c.ipPolicyRules.create({ ip_policy_id: api.id, cidr: '10.1.0.0/16', action: 'allow' });
    await c.ipRestrictions.create({ type: 'api', ip_policy_ids: [api.id] });
    await c.ipPolicyRules.delete(lone.id);
    expect(second.id).toMatch(/^ipr_/);
  });
});

describe('errors carry the public numbers', () => {
  it('a missing policy is ERR_NGROK_1402, a missing rule ERR_NGROK_1404; the name stays in details', async () => {
    const p = await failure(c.ipPolicies.get('ipp_doesnotexist'));
    expect(p).toMatchObject({ status: 404, errorCode: 'ERR_NGROK_1402', errorNumber: 1402 });
    expect(p.details?.code).toBe('ERR_IP_POLICY_NOT_FOUND');
    expect((await failure(c.ipPolicyRules.get('ipr_doesnotexist'))).errorNumber).toBe(1404);
    expect(isNotFound(p)).toBe(true);
  });

  it('metadata too long is ERR_NGROK_100; authentication errors are 200 and 203', async () => {
    const long = await failure(c.ipPolicies.create({ metadata: 'x'.repeat(4097) }));
    expect(long.errorNumber).toBe(100);
    const none = await raw(h.emu, 'GET', '/ip_policies', { headers: { authorization: '' } });
    expect(none.status).toBe(401);
    expect(none.json.error_code).toBe('ERR_NGROK_200');
    const bad = await raw(h.emu, 'GET', '/ip_policies', { headers: { authorization: 'Bearer not-a-key' } });
    expect(bad.json.error_code).toBe('ERR_NGROK_203');
  });
});

describe('filter on list endpoints', () => {
  beforeAll(async () => {
    for (const d of ['team-a web', 'team-a api', 'team-b web'])
      await c.ipPolicies.create({ description: d, metadata: d.startsWith('team-a') ? 'mine' : 'theirs' });
  });
  const descriptions = async (filter: string) =>
    (await collect(c.ipPolicies.list({ filter }))).map((p) => p.description).sort();

  it('honours ==, !=, &&, ||, startsWith and contains', async () => {
    expect(await descriptions('obj.metadata == "mine"')).toEqual(['team-a api', 'team-a web']);
    expect(await descriptions('obj.description.startsWith("team-b")')).toEqual(['team-b web']);
    expect(await descriptions('obj.description.contains("web") && obj.metadata != "mine"')).toEqual([
      'team-b web',
    ]);
    expect(await descriptions('obj.description == "team-a api" || obj.description == "team-b web"')).toEqual([
      'team-a api',
      'team-b web',
    ]);
  });

  it('keeps the filter across pages', async () => {
    const all = await collect(c.ipPolicies.list({ filter: 'obj.description.startsWith("team-")', limit: 1 }));
    expect(all.map((p) => p.description).sort()).toEqual(['team-a api', 'team-a web', 'team-b web']);
  });

  it('refuses what it does not understand, naming the parameter, instead of listing everything', async () => {
    for (const filter of ['obj.description ==', 'obj.nosuchfield == "x"', 'obj.description', ''])
      expect((await failure(collect(c.ipPolicies.list({ filter })))).apiMessage, filter).toMatch(
        /^Invalid CEL query: filter: /,
      );
    const unknown = await raw(h.emu, 'GET', '/ip_policies?only=mine');
    expect(unknown.status).toBe(400);
    expect(unknown.json.msg).toContain('only');
    expect(unknown.json.error_code).toBe('ERR_NGROK_231');
  });
});

describe('tunnels and paths', () => {
  it('an agent-initiated tunnel names its endpoint', async () => {
    const [t] = await collect(c.tunnels.list());
    expect(t!.endpoint).toEqual({
      id: expect.stringMatching(/^ep_/),
      uri: expect.stringContaining('/endpoints/ep_'),
    });
    expect((await c.tunnels.get(t!.id)).endpoint?.id).toBe(t!.endpoint!.id);
  });

  it('an unknown path is told apart from a missing resource, by code and message', async () => {
    const path = await raw(h.emu, 'GET', '/ip_polices/ipp_1');
    const missing = await raw(h.emu, 'GET', '/ip_policies/ipp_1');
    expect(path.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(path.json.error_code).not.toBe(missing.json.error_code);
    expect(path.json.msg).toMatch(/no path GET \/ip_polices\/ipp_1/);
    expect(missing.json.msg).toMatch(/^IP Policy not found \(IP policy ipp_1\)/);
    const viaClient = await failure(c.ipPolicies.get('ipp_1'));
    expect(isUnknownPath(viaClient)).toBe(false);
  });
});
