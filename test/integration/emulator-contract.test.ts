// Contract: client <-> emulator. Each test is one statement of the spec (or of the
// emulator issue where the spec is silent), checked through the typed client over HTTP.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, createClient, type EdgeClient } from '../../src/api/client.ts';
import { ApiError } from '../../src/api/errors.ts';
import { publicErrorCode } from '../../src/emulator/error-codes.ts';
import { emulatorWithClient, type Harness, raw, sshPublicKey } from './harness.ts';

let h: Harness;
let c: EdgeClient;
beforeAll(async () => {
  h = await emulatorWithClient({
    apiKeys: [
      { key: 'admin-key', ownerId: 'usr_admin', admin: true },
      { key: 'member-key', ownerId: 'usr_member', admin: false },
    ],
    agents: [
      {
        name: 'web',
        agent_version: '3.5.0',
        tunnels: [{ labels: { app: 'web', env: 'prod' }, forwards_to: 'localhost:8080' }],
      },
      { name: 'win', os: 'windows', tunnels: [{ proto: 'https', forwards_to: 'localhost:80' }] },
    ],
  });
  c = h.client;
});
afterAll(() => h.close());

/** The call fails with 400, and the message names the field. */
async function rejects400(p: Promise<unknown>, field: string, code?: string) {
  const e = (await p.then(
    () => undefined,
    (err) => err,
  )) as ApiError;
  expect(e, `expected a 400 naming ${field}`).toBeInstanceOf(ApiError);
  expect(e.status).toBe(400);
  expect(e.apiMessage).toContain(field);
  expect(e.operationId).toMatch(/^op_/);
  if (code) {
    // the descriptive name in details, the public number (where the reference has one) in error_code
    expect(e.errorName).toBe(code);
    expect(e.errorCode).toBe(publicErrorCode(code));
  }
  return e;
}
const policy = () => c.ipPolicies.create({ description: 'p' });
// biome-ignore lint/suspicious/noExplicitAny: wire-level tests send what the types forbid
const loose = (x: unknown) => x as any;

describe('conventions', () => {
  it('ids are the kind prefix + 27 time-ordered base62 characters; created_at is RFC 3339; uri addresses the resource', async () => {
    const a = await policy();
    const b = await policy();
    expect(a.id).toMatch(/^ipp_[0-9A-Za-z]{27}$/);
    expect(a.id < b.id).toBe(true);
    expect(new Date(a.created_at).toISOString().replace(/\.\d+Z$/, 'Z')).toBe(a.created_at);
    expect(a.uri).toBe(`${h.emu.url}/ip_policies/${a.id}`);
    expect(await c.ipPolicies.get(a.id)).toMatchObject({ id: a.id, description: 'p' });
  });

  it('lists are newest first under their key, with uri and next_page_uri; paging with limit and before_id', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await c.ipPolicies.create({ metadata: `page-${i}` })).id);
    const first = await raw(h.emu, 'GET', '/ip_policies?limit=2', {
      headers: { authorization: 'Bearer admin-key' },
    });
    expect(first.status).toBe(200);
    expect(first.json.ip_policies).toHaveLength(2);
    expect(first.json.uri).toBe(`${h.emu.url}/ip_policies`);
    expect(first.json.next_page_uri).toMatch(
      new RegExp(`^${h.emu.url}/ip_policies\\?limit=2&before_id=ipp_`),
    );
    const all = await collect(c.ipPolicies.list({ limit: 2 }));
    const mine = all.filter((p) => p.metadata?.startsWith('page-')).map((p) => p.id);
    expect(mine).toEqual([...ids].reverse());
    expect(new Set(all.map((p) => p.id)).size).toBe(all.length);
  });

  it('a list asked by another name of the host (localhost, a port mapping) pages on under that name', async () => {
    for (let i = 0; i < 3; i++) await c.ipPolicies.create({ metadata: `host-${i}` });
    const viaLocalhost = h.emu.url.replace('127.0.0.1', 'localhost');
    const other = createClient({
      baseUrl: viaLocalhost,
      apiKey: h.emu.apiKey,
      rateLimitPerMinute: Infinity,
      retry: { maxAttempts: 1 },
    });
    try {
      const first = (await (
        await fetch(`${viaLocalhost}/ip_policies?limit=1`, {
          headers: { authorization: `Bearer ${h.emu.apiKey}`, 'service-version': '2' },
        })
      ).json()) as { next_page_uri: string };
      expect(first.next_page_uri).toMatch(new RegExp(`^${viaLocalhost}/ip_policies\\?limit=1&before_id=`));
      // before: next_page_uri named 127.0.0.1, and the client refused to follow it to another origin
      const all = await collect(other.ipPolicies.list({ limit: 1 }));
      expect(all.filter((p) => p.metadata?.startsWith('host-'))).toHaveLength(3);
    } finally {
      await other.close();
    }
  });

  it('delete answers 204 with an empty body; the resource is then gone (404)', async () => {
    const p = await policy();
    const del = await raw(h.emu, 'DELETE', `/ip_policies/${p.id}`, {
      headers: { authorization: 'Bearer admin-key' },
    });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    await expect(c.ipPolicies.get(p.id)).rejects.toMatchObject({ status: 404, errorCode: 'ERR_NGROK_1402' });
  });

  it('description is at most 255 bytes and metadata 4096 bytes, counted in bytes not characters', async () => {
    await expect(
      c.ipPolicies.create({ description: 'a'.repeat(255), metadata: 'm'.repeat(4096) }),
    ).resolves.toBeTruthy();
    await rejects400(
      c.ipPolicies.create({ description: 'é'.repeat(128) }),
      'description',
      'ERR_DESCRIPTION_TOO_LONG',
    );
    await rejects400(
      c.ipPolicies.create({ metadata: '€'.repeat(1366) }),
      'metadata',
      'ERR_METADATA_TOO_LONG',
    );
  });
});

describe('IP policy rules', () => {
  it('create returns the rule with an ip_policy Ref; IPv4 and IPv6 CIDRs are accepted', async () => {
    const p = await policy();
    const r4 = await c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '203.0.113.0/24', action: 'allow' });
    const r6 = await c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '2001:db8::/32', action: 'deny' });
    expect(r4).toMatchObject({
      cidr: '203.0.113.0/24',
      action: 'allow',
      ip_policy: { id: p.id, uri: p.uri },
    });
    expect(r4.id).toMatch(/^ipr_/);
    expect(r6.action).toBe('deny');
  });

  it('rejects a bad CIDR, a bad action, a policy id with the wrong prefix, and a policy that does not exist', async () => {
    const p = await policy();
    await rejects400(
      c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '10.0.0.0/33', action: 'allow' }),
      'cidr',
      'ERR_INVALID_CIDR',
    );
    await rejects400(
      c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '300.1.1.1', action: 'allow' }),
      'cidr',
    );
    await rejects400(
      c.ipPolicyRules.create(loose({ ip_policy_id: p.id, cidr: '10.0.0.0/8', action: 'maybe' })),
      'action',
    );
    await rejects400(
      c.ipPolicyRules.create({ ip_policy_id: 'ipx_123', cidr: '10.0.0.0/8', action: 'allow' }),
      'ip_policy_id',
      'ERR_INVALID_RULE_POLICY_ID',
    );
    await rejects400(
      c.ipPolicyRules.create({ ip_policy_id: 'ipp_doesnotexist', cidr: '10.0.0.0/8', action: 'allow' }),
      'ip_policy_id',
      'ERR_REFERENCE_NOT_FOUND',
    );
  });

  it('update changes cidr and description, leaves omitted fields, and refuses creation-only fields', async () => {
    const p = await policy();
    const r = await c.ipPolicyRules.create({
      ip_policy_id: p.id,
      cidr: '10.0.0.0/8',
      action: 'allow',
      metadata: 'keep',
    });
    const u = await c.ipPolicyRules.update(r.id, { cidr: '10.1.0.0/16', description: 'new' });
    expect(u).toMatchObject({ cidr: '10.1.0.0/16', description: 'new', metadata: 'keep', action: 'allow' });
    await rejects400(c.ipPolicyRules.update(r.id, loose({ action: 'deny' })), 'action', 'ERR_UNKNOWN_FIELD');
    await rejects400(
      c.ipPolicyRules.update(r.id, loose({ ip_policy_id: p.id })),
      'ip_policy_id',
      'ERR_UNKNOWN_FIELD',
    );
  });

  it('deleting a policy takes its rules with it; one an IP restriction uses is refused (ERR_NGROK_1420)', async () => {
    const p = await policy();
    const r = await c.ipPolicyRules.create({ ip_policy_id: p.id, cidr: '10.0.0.0/8', action: 'allow' });
    const x = await c.ipRestrictions.create({ type: 'api', ip_policy_ids: [p.id] });
    const e = await rejects400(c.ipPolicies.delete(p.id), x.id, 'ERR_IP_POLICY_IN_USE');
    expect(e.errorNumber).toBe(1420);
    expect(e.apiMessage).toContain(p.id);
    await c.ipRestrictions.delete(x.id);
    await c.ipPolicies.delete(p.id);
    await expect(c.ipPolicyRules.get(r.id)).rejects.toMatchObject({ status: 404, errorNumber: 1404 });
  });
});

describe('IP restrictions', () => {
  it('enforced is false when omitted; ip_policies are Refs; type is one of the four', async () => {
    const [a, b] = [await policy(), await policy()];
    const x = await c.ipRestrictions.create({ type: 'dashboard', ip_policy_ids: [a.id, b.id] });
    expect(x.enforced).toBe(false);
    expect(x.ip_policies.map((r) => r.id)).toEqual([a.id, b.id]);
    await rejects400(c.ipRestrictions.create(loose({ type: 'ssh', ip_policy_ids: [a.id] })), 'type');
    await rejects400(c.ipRestrictions.create({ type: 'api', ip_policy_ids: [] }), 'ip_policy_ids');
  });

  it('update replaces the policy list, sets enforced, and refuses type', async () => {
    const [a, b] = [await policy(), await policy()];
    const x = await c.ipRestrictions.create({ type: 'agent', ip_policy_ids: [a.id] });
    const u = await c.ipRestrictions.update(x.id, { enforced: true, ip_policy_ids: [b.id] });
    expect(u.enforced).toBe(true);
    expect(u.ip_policies.map((r) => r.id)).toEqual([b.id]);
    await rejects400(c.ipRestrictions.update(x.id, loose({ type: 'api' })), 'type', 'ERR_UNKNOWN_FIELD');
  });
});

describe('backends', () => {
  it('a tunnel group backend lists the online tunnels whose labels match; tunnels list their backends', async () => {
    const tg = await c.tunnelGroupBackends.create({ labels: { app: 'web' } });
    expect(tg.id).toMatch(/^bkdtg_/);
    expect(tg.tunnels).toHaveLength(1);
    const t = await c.tunnels.get(tg.tunnels[0]!.id);
    expect(t.labels).toEqual({ app: 'web', env: 'prod' });
    expect(t.backends?.map((b) => b.id)).toContain(tg.id);
    const none = await c.tunnelGroupBackends.create({ labels: { app: 'api' } });
    expect(none.tunnels).toEqual([]);
  });

  it('update of labels replaces the map', async () => {
    const tg = await c.tunnelGroupBackends.create({ labels: { a: '1', b: '2' } });
    const u = await c.tunnelGroupBackends.update(tg.id, { labels: { c: '3' } });
    expect(u.labels).toEqual({ c: '3' });
  });

  it('weighted backend weights are 0..10000 and child backends must exist', async () => {
    const tg = await c.tunnelGroupBackends.create({ labels: { app: 'web' } });
    const w = await c.weightedBackends.create({ backends: { [tg.id]: 10000 } });
    expect(w.backends).toEqual({ [tg.id]: 10000 });
    await rejects400(
      c.weightedBackends.create({ backends: { [tg.id]: 10001 } }),
      'backends',
      'ERR_WEIGHT_OUT_OF_RANGE',
    );
    await rejects400(
      c.weightedBackends.create({ backends: { [tg.id]: -1 } }),
      'backends',
      'ERR_WEIGHT_OUT_OF_RANGE',
    );
    await rejects400(
      c.weightedBackends.create({ backends: { bkdtg_missing: 1 } }),
      'backends',
      'ERR_BACKEND_NOT_FOUND',
    );
    await rejects400(
      c.weightedBackends.create({ backends: { ipp_x: 1 } }),
      'backends',
      'ERR_INVALID_WEIGHTED_BACKEND_KEY',
    );
    const u = await c.weightedBackends.update(w.id, { backends: { [tg.id]: 5, [w.id]: 1 } }).catch((e) => e);
    expect(u.errorName).toBe('ERR_BACKEND_CYCLE');
  });
});

describe('SSH credentials', () => {
  it('public_key must be an SSH public key; acl holds bind rules or the single *', async () => {
    const key = sshPublicKey();
    const cr = await c.sshCredentials.create({
      public_key: key,
      acl: ['bind:*.example.com', 'bind:app=*', 'bind:x.example.com:443'],
    });
    expect(cr).toMatchObject({ public_key: key, owner_id: 'usr_admin' });
    expect(cr.id).toMatch(/^sshcr_/);
    await expect(c.sshCredentials.create({ public_key: sshPublicKey(), acl: ['*'] })).resolves.toBeTruthy();
    await rejects400(
      c.sshCredentials.create({ public_key: 'ssh-ed25519 notbase64!' }),
      'public_key',
      'ERR_INVALID_SSH_PUBLIC_KEY',
    );
    await rejects400(
      c.sshCredentials.create({ public_key: 'ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==' }),
      'public_key',
    );
    await rejects400(
      c.sshCredentials.create({ public_key: key, acl: ['connect:foo'] }),
      'acl',
      'ERR_INVALID_ACL',
    );
    await rejects400(
      c.sshCredentials.create({ public_key: key, acl: ['*', 'bind:a.com'] }),
      'acl',
      'ERR_INVALID_ACL',
    );
  });

  it('only an admin may set an owner_id other than its own; public_key and owner_id are creation-only', async () => {
    const member = h.client.transport.baseUrl.href;
    const { createClient } = await import('../../src/api/client.ts');
    const m = createClient({ baseUrl: member, apiKey: 'member-key', rateLimitPerMinute: Infinity });
    const mine = await m.sshCredentials.create({ public_key: sshPublicKey() });
    expect(mine.owner_id).toBe('usr_member');
    await rejects400(
      m.sshCredentials.create({ public_key: sshPublicKey(), owner_id: 'usr_other' }),
      'owner_id',
      'ERR_OWNER_NOT_ALLOWED',
    );
    const theirs = await c.sshCredentials.create({ public_key: sshPublicKey(), owner_id: 'usr_other' });
    expect(theirs.owner_id).toBe('usr_other');
    await rejects400(
      c.sshCredentials.update(theirs.id, loose({ public_key: sshPublicKey() })),
      'public_key',
      'ERR_UNKNOWN_FIELD',
    );
    await rejects400(c.sshCredentials.update(theirs.id, loose({ owner_id: 'usr_admin' })), 'owner_id');
    expect((await c.sshCredentials.update(theirs.id, { acl: ['bind:a.example'] })).acl).toEqual([
      'bind:a.example',
    ]);
    await m.close();
  });
});

describe('HTTPS edges and routes', () => {
  // a hostport belongs to one edge (ERR_NGROK_7122): each edge its own
  let edges = 0;
  const edge = () => c.httpsEdges.create({ hostports: [`app${++edges}.example.com:443`] });

  it('a route created without modules returns every module as null; the edge embeds its routes', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    for (const m of [
      'backend',
      'ip_restriction',
      'circuit_breaker',
      'compression',
      'request_headers',
      'response_headers',
      'webhook_verification',
      'oauth',
      'saml',
      'oidc',
      'websocket_tcp_converter',
    ] as const) {
      expect(r[m], m).toBeNull();
    }
    expect(r.edge_id).toBe(e.id);
    expect(r.uri).toBe(`${h.emu.url}/edges/https/${e.id}/routes/${r.id}`);
    expect((await c.httpsEdges.get(e.id)).routes.map((x) => x.id)).toEqual([r.id]);
  });

  it('modules given at route creation are applied; backend and ip_restriction come back as Refs; response header names lower-cased', async () => {
    const e = await edge();
    const tg = await c.tunnelGroupBackends.create({ labels: { app: 'web' } });
    const p = await policy();
    const r = await c.httpsEdgeRoutes.create(e.id, {
      match_type: 'exact_path',
      match: '/api',
      backend: { backend_id: tg.id },
      ip_restriction: { ip_policy_ids: [p.id] },
      response_headers: { add: { 'X-Frame-Options': 'DENY' }, remove: ['Server'] },
      compression: { enabled: false },
    });
    expect(r.backend).toEqual({ enabled: true, backend: { id: tg.id, uri: tg.uri } });
    expect(r.ip_restriction?.ip_policies.map((x) => x.id)).toEqual([p.id]);
    expect(r.response_headers?.add).toEqual({ 'x-frame-options': 'DENY' });
    expect(r.compression).toEqual({ enabled: false });
  });

  it('every route module has PUT (200), GET (200) and DELETE (204)', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    const tg = await c.tunnelGroupBackends.create({ labels: { x: 'y' } });
    const p = await policy();
    const bodies = {
      backend: { backend_id: tg.id },
      ip_restriction: { ip_policy_ids: [p.id] },
      circuit_breaker: {
        tripped_duration: 10,
        rolling_window: 60,
        num_buckets: 10,
        volume_threshold: 20,
        error_threshold_percentage: 0.5,
      },
      compression: {},
      request_headers: { add: { 'x-a': '1' }, remove: ['x-b'] },
      response_headers: { add: { 'X-C': '1' }, remove: [] },
      webhook_verification: { provider: 'github', secret: 'whsec' },
      oauth: { provider: { google: { client_id: 'id', client_secret: 'sec', scopes: ['email'] } } },
      saml: { idp_metadata: '<EntityDescriptor/>' },
      oidc: {
        issuer: 'https://accounts.example.com',
        client_id: 'id',
        client_secret: 'sec',
        scopes: ['openid'],
      },
      websocket_tcp_converter: {},
    } as const;
    for (const [name, body] of Object.entries(bodies)) {
      const mod = c.httpsEdgeRouteModules[name as keyof typeof bodies];
      // biome-ignore lint/suspicious/noExplicitAny: one loop over differently typed modules
      const put = await (mod.put as any)(e.id, r.id, body);
      expect(put.enabled, name).toBe(true);
      expect(await mod.get(e.id, r.id), name).toEqual(put);
      expect((await c.httpsEdgeRoutes.get(e.id, r.id))[name as keyof typeof bodies], name).toEqual(put);
      await mod.delete(e.id, r.id);
      expect((await c.httpsEdgeRoutes.get(e.id, r.id))[name as keyof typeof bodies], name).toBeNull();
      await expect(mod.get(e.id, r.id)).rejects.toMatchObject({ status: 404 });
    }
  });

  it('SAML responses carry the service-provider fields and a real self-signed request-signing certificate', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    const s = await c.httpsEdgeRouteModules.saml.put(e.id, r.id, {
      idp_metadata: '<EntityDescriptor/>',
      authorized_groups: ['eng'],
    });
    expect(s.entity_id).toBe(s.metadata_url);
    expect(s.assertion_consumer_service_url).toMatch(/^http.*\/acs$/);
    expect(s.single_logout_url).toMatch(/\/slo$/);
    expect(s.nameid_format).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    const cert = new X509Certificate(s.request_signing_certificate_pem);
    expect(cert.checkIssued(cert)).toBe(true);
    const again = await c.httpsEdgeRouteModules.saml.put(e.id, r.id, { idp_metadata: '<EntityDescriptor/>' });
    expect(again.request_signing_certificate_pem).toBe(s.request_signing_certificate_pem);
  });

  it('a write answered while a SAML module is being set up is kept; two routes of one match made at once: one is refused', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    // the SAML PUT makes a signing key (it waits); the PATCH is answered meanwhile
    const [saml, patched] = await Promise.all([
      c.httpsEdgeRouteModules.saml.put(e.id, r.id, { idp_metadata: '<EntityDescriptor/>' }),
      c.httpsEdgeRoutes.update(e.id, r.id, { description: 'patched meanwhile' }),
    ]);
    expect(patched.description).toBe('patched meanwhile');
    const now = await c.httpsEdgeRoutes.get(e.id, r.id);
    expect(now.description).toBe('patched meanwhile');
    expect(now.saml?.request_signing_certificate_pem).toBe(saml.request_signing_certificate_pem);
    // on an edge of their own (one login module per edge)
    const e2 = await edge();
    const both = await Promise.allSettled(
      [1, 2].map(() =>
        c.httpsEdgeRoutes.create(e2.id, {
          match_type: 'path_prefix',
          match: '/sso',
          saml: { idp_metadata: '<EntityDescriptor/>' },
        }),
      ),
    );
    expect(both.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('circuit breaker: num_buckets at most 128; error_threshold_percentage between 0 and 1.0', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    const cb = {
      tripped_duration: 1,
      rolling_window: 1,
      num_buckets: 128,
      volume_threshold: 1,
      error_threshold_percentage: 1,
    };
    await expect(c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, cb)).resolves.toMatchObject({
      num_buckets: 128,
    });
    await rejects400(
      c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, { ...cb, num_buckets: 129 }),
      'num_buckets',
      'ERR_CIRCUIT_BREAKER_NUM_BUCKETS',
    );
    await rejects400(
      c.httpsEdgeRouteModules.circuit_breaker.put(e.id, r.id, { ...cb, error_threshold_percentage: 50 }),
      'error_threshold_percentage',
      'ERR_ERROR_THRESHOLD_RANGE',
    );
  });

  it('webhook verification: provider from the fixed list; the secret is required except for sns', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    await rejects400(
      c.httpsEdgeRouteModules.webhook_verification.put(
        e.id,
        r.id,
        loose({ provider: 'myspace', secret: 's' }),
      ),
      'provider',
    );
    await rejects400(
      c.httpsEdgeRouteModules.webhook_verification.put(e.id, r.id, { provider: 'stripe' }),
      'secret',
      'ERR_WEBHOOK_SECRET_REQUIRED',
    );
    await expect(
      c.httpsEdgeRouteModules.webhook_verification.put(e.id, r.id, { provider: 'sns' }),
    ).resolves.toMatchObject({ provider: 'sns' });
  });

  it('OAuth: client_id needs client_secret; scopes need both; one provider per module', async () => {
    const e = await edge();
    const r = await c.httpsEdgeRoutes.create(e.id, { match_type: 'path_prefix', match: '/' });
    const put = (provider: unknown) => c.httpsEdgeRouteModules.oauth.put(e.id, r.id, loose({ provider }));
    await rejects400(
      put({ github: { client_id: 'x' } }),
      'client_secret',
      'ERR_OAUTH_CLIENT_SECRET_REQUIRED',
    );
    await rejects400(put({ google: { scopes: ['email'] } }), 'scopes', 'ERR_OAUTH_SCOPES_NEED_CLIENT');
    await rejects400(put({ github: {}, google: {} }), 'provider', 'ERR_OAUTH_MANY_PROVIDERS');
    await rejects400(put({}), 'provider', 'ERR_OAUTH_NO_PROVIDER');
    await rejects400(put({ gitlab: {} }), 'client_id', 'ERR_OAUTH_CLIENT_REQUIRED');
    await expect(put({ github: { teams: ['acme/eng'], organizations: ['acme'] } })).resolves.toMatchObject({
      enabled: true,
    });
  });

  it('TLS termination: min_version from the allowed values; must be null with terminate_at upstream', async () => {
    const e = await edge();
    await expect(c.httpsEdgeModules.tls_termination.put(e.id, { min_version: '1.3' })).resolves.toMatchObject(
      { min_version: '1.3' },
    );
    await rejects400(
      c.httpsEdgeModules.tls_termination.put(e.id, loose({ min_version: '1.4' })),
      'min_version',
    );
    const t = await c.tlsEdges.create({ hostports: ['tls-termination.example.com:443'] });
    await rejects400(
      c.tlsEdgeModules.tls_termination.put(t.id, { terminate_at: 'upstream', min_version: '1.2' }),
      'min_version',
      'ERR_MIN_VERSION_WITH_UPSTREAM',
    );
    await expect(
      c.tlsEdgeModules.tls_termination.put(t.id, { terminate_at: 'upstream', min_version: null }),
    ).resolves.toMatchObject({
      terminate_at: 'upstream',
      min_version: null,
    });
  });

  it('deleting an edge deletes its routes; a route under another edge is not found', async () => {
    const [e1, e2] = [await edge(), await edge()];
    const r = await c.httpsEdgeRoutes.create(e1.id, { match_type: 'path_prefix', match: '/' });
    // under another edge: the API names both edges (ERR_NGROK_7110)
    await expect(c.httpsEdgeRoutes.get(e2.id, r.id)).rejects.toMatchObject({
      status: 400,
      errorNumber: 7110,
    });
    await c.httpsEdges.delete(e1.id);
    await expect(c.httpsEdgeRoutes.get(e1.id, r.id)).rejects.toMatchObject({ status: 404 });
  });

  it('hostports must be host:port', async () => {
    await rejects400(
      c.tcpEdges.create({ hostports: ['no-port.example.com'] }),
      'hostports',
      'ERR_INVALID_HOSTPORT',
    );
  });
});

describe('TCP and TLS edge modules', () => {
  it('TCP backend and TLS mutual TLS modules return Refs and can be removed', async () => {
    const tg = await c.tunnelGroupBackends.create({ labels: { app: 'db' } });
    const tcp = await c.tcpEdges.create({ hostports: ['1.tcp.example.com:12345'] });
    expect(await c.tcpEdgeModules.backend.put(tcp.id, { backend_id: tg.id })).toEqual({
      enabled: true,
      backend: { id: tg.id, uri: tg.uri },
    });
    await c.tcpEdgeModules.backend.delete(tcp.id);
    expect((await c.tcpEdges.get(tcp.id)).backend).toBeNull();

    const { selfSignedCaPem } = await import('../../src/util/x509.ts');
    const ca = await c.certificateAuthorities.create({ ca_pem: await selfSignedCaPem('Test CA') });
    const tls = await c.tlsEdges.create({ hostports: ['tls.example.com:443'] });
    const m = await c.tlsEdgeModules.mutual_tls.put(tls.id, { certificate_authority_ids: [ca.id] });
    expect(m.certificate_authorities).toEqual([{ id: ca.id, uri: ca.uri }]);
    await rejects400(
      c.tlsEdgeModules.mutual_tls.put(tls.id, { certificate_authority_ids: ['ca_missing'] }),
      'certificate_authority_ids',
    );
  });
});

describe('tunnel sessions and agent commands', () => {
  const sessionOf = async (name: string) => {
    const r = await raw(h.emu, 'GET', '/_emulator/agents', {
      headers: { authorization: 'Bearer admin-key' },
    });
    return (r.json.agents as { name: string; session_id: string }[]).find((a) => a.name === name)!.session_id;
  };
  const addAgent = (spec: object) =>
    raw(h.emu, 'POST', '/_emulator/agents', {
      headers: { authorization: 'Bearer admin-key', 'content-type': 'application/json' },
      body: JSON.stringify(spec),
    });

  it('lists the online sessions with their fields', async () => {
    const sessions = await collect(c.tunnelSessions.list());
    const web = sessions.find((s) => s.id === undefined || (true && s.os === 'linux'))!;
    expect(web.id).toMatch(/^ts_/);
    expect(web).toMatchObject({ agent_version: '3.5.0', region: 'us', transport: 'service/v2' });
    expect(web.credential.id).toMatch(/^cr_/);
    expect(await c.tunnelSessions.get(web.id)).toEqual(web);
  });

  it('restart reconnects the agent under a new session id and moves its tunnels; Windows agents cannot restart', async () => {
    const before = await sessionOf('web');
    await c.tunnelSessions.restart(before, {});
    const after = await sessionOf('web');
    expect(after).not.toBe(before);
    await expect(c.tunnelSessions.get(before)).rejects.toMatchObject({ status: 404 });
    const tunnels = await collect(c.tunnels.list());
    expect(tunnels.filter((t) => t.labels?.app === 'web').map((t) => t.tunnel_session.id)).toEqual([after]);
    const win = await sessionOf('win');
    await expect(c.tunnelSessions.restart(win, {})).rejects.toMatchObject({
      status: 400,
      errorName: 'ERR_AGENT_RESTART_UNSUPPORTED',
    });
  });

  it('stop removes the session and its tunnels', async () => {
    await addAgent({ name: 'stopme', tunnels: [{ forwards_to: 'localhost:1' }] });
    const s = await sessionOf('stopme');
    await c.tunnelSessions.stop(s, {});
    await expect(c.tunnelSessions.get(s)).rejects.toMatchObject({ status: 404 });
    expect((await collect(c.tunnels.list())).some((t) => t.tunnel_session.id === s)).toBe(false);
  });

  it('update fails distinctly: no update available, checks disabled, already updating, updated but not restarted', async () => {
    await addAgent({ name: 'none', agent_version: '3.5.0', update: { available_version: '3.5.0' } });
    await addAgent({ name: 'major', agent_version: '3.5.0', update: { available_version: '4.0.0' } });
    await addAgent({ name: 'off', update: { available_version: '3.9.0', checks_disabled: true } });
    await addAgent({
      name: 'upd',
      agent_version: '3.5.0',
      update: { available_version: '3.6.1', duration_ms: 5000 },
    });
    await expect(c.tunnelSessions.update(await sessionOf('none'), {})).rejects.toMatchObject({
      errorName: 'ERR_AGENT_NO_UPDATE_AVAILABLE',
    });
    await expect(c.tunnelSessions.update(await sessionOf('major'), {})).rejects.toMatchObject({
      errorName: 'ERR_AGENT_NO_UPDATE_AVAILABLE',
    });
    await expect(c.tunnelSessions.update(await sessionOf('off'), {})).rejects.toMatchObject({
      errorName: 'ERR_AGENT_UPDATE_CHECKS_DISABLED',
    });
    const s = await sessionOf('upd');
    await c.tunnelSessions.update(s, {});
    await expect(c.tunnelSessions.update(s, {})).rejects.toMatchObject({
      errorName: 'ERR_AGENT_ALREADY_UPDATING',
    });
    h.emu.advanceClock(10_000);
    await expect(c.tunnelSessions.update(s, {})).rejects.toMatchObject({
      errorName: 'ERR_AGENT_UPDATED_NOT_RESTARTED',
    });
    expect((await c.tunnelSessions.get(s)).agent_version).toBe('3.5.0');
    await c.tunnelSessions.restart(s, {});
    const next = await sessionOf('upd');
    expect((await c.tunnelSessions.get(next)).agent_version).toBe('3.6.1');
  });
});

describe('protocol', () => {
  it('requires Service-Version: 2 and accepts Ngrok-Version: 2 as an alias', async () => {
    const missing = await raw(h.emu, 'GET', '/ip_policies', {
      headers: { authorization: 'Bearer admin-key', 'service-version': '' },
    });
    expect(missing.status).toBe(400);
    expect(missing.json).toMatchObject({ error_code: 'ERR_NGROK_218', status_code: 400 });
    const other = await raw(h.emu, 'GET', '/ip_policies', {
      headers: { authorization: 'Bearer admin-key', 'service-version': '1' },
    });
    expect(other.status).toBe(400);
    const res = await fetch(`${h.emu.url}/ip_policies`, {
      headers: { authorization: 'Bearer admin-key', 'ngrok-version': '2' },
    });
    expect(res.status).toBe(200);
  });

  it('answers 401 without a key, 403 for an unknown key, 404 for unknown paths, 405 for wrong methods, 413 for huge bodies — all in the error shape', async () => {
    const shape = {
      error_code: expect.any(String),
      status_code: expect.any(Number),
      msg: expect.any(String),
      details: { operation_id: expect.stringMatching(/^op_/) },
    };
    const noKey = await fetch(`${h.emu.url}/ip_policies`, { headers: { 'service-version': '2' } });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject(shape);
    const badKey = await raw(h.emu, 'GET', '/ip_policies', { headers: { authorization: 'Bearer nope' } });
    expect(badKey.status).toBe(403);
    expect(badKey.json).toMatchObject(shape);
    const unknown = await raw(h.emu, 'GET', '/nothing/here', {
      headers: { authorization: 'Bearer admin-key' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject(shape);
    const wrong = await raw(h.emu, 'PUT', '/ip_policy_rules', {
      headers: { authorization: 'Bearer admin-key' },
    });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('POST');
    expect(wrong.json).toMatchObject(shape);
    const huge = await raw(h.emu, 'POST', '/ip_policies', {
      headers: { authorization: 'Bearer admin-key', 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: 'x'.repeat(300_000) }),
    });
    expect(huge.status).toBe(413);
    expect(huge.json).toMatchObject(shape);
    const badJson = await raw(h.emu, 'POST', '/ip_policies', {
      headers: { authorization: 'Bearer admin-key', 'content-type': 'application/json' },
      body: '{"description":',
    });
    expect(badJson.status).toBe(400);
    expect(badJson.json.error_code).toBe('ERR_NGROK_213');
  });

  it('a missing required field is named', async () => {
    const p = await policy();
    await rejects400(
      c.ipPolicyRules.create(loose({ ip_policy_id: p.id, action: 'allow' })),
      'cidr',
      'ERR_IP_POLICY_RULE_PARAM_MISSING',
    );
  });
});
