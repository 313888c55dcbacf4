// The error catalogue against the emulator: the entries the emulator serves
// (src/emulator/errors.json) and the reference pages that do not apply here
// (public-errors.reference.json, beside this file) make the whole public reference. Every entry
// the emulator is said to refuse (emulator, crd, operator) has a request here that triggers it,
// and the answer carries the entry's HTTP status, its ERR_NGROK_<number>, its message (the
// reference's words, values filled in) and one of its descriptive names in details.code. A test
// fails when an entry has no request, or a request has no entry, so catalogue and emulator
// cannot drift apart. The last test prints the share of applicable entries (all but n/a) the
// emulator refuses with the public code.
import { generateKeyPairSync } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  isApplicable,
  isEnforced,
  loadCatalogue,
  type PublicError,
  placeholders,
  SERVED,
} from '../../src/emulator/catalogue.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { selfSignedCaPem, selfSignedPem } from '../../src/util/x509.ts';
import { sshPublicKey } from './harness.ts';
import reference from './public-errors.reference.json' with { type: 'json' };

/** The whole reference: what the emulator serves and the pages that do not apply (n/a). */
const CATALOGUE: readonly PublicError[] = [
  ...SERVED,
  ...reference.entries.map((x): PublicError => ({ ...x, handling: 'n/a' })),
];
const BY_NUMBER = new Map(CATALOGUE.map((x) => [x.number, x]));
function catalogueEntry(number: number): PublicError {
  const x = BY_NUMBER.get(number);
  if (!x) throw new Error(`ERR_NGROK_${number} is not in the error catalogue`);
  return x;
}

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  json: { error_code?: string; status_code?: number; msg?: string; details?: { code?: string } } | undefined;
}
interface SendOptions {
  /** The Authorization header; null sends none. */
  auth?: string | null;
  version?: string | null;
  headers?: Record<string, string>;
  /** The body exactly as sent (a string is sent as is, with Content-Type application/json). */
  raw?: string | Uint8Array;
}

let emu: Emulator;
const ADMIN = 'admin-key';
const USER = 'user-key';

async function send(method: string, path: string, body?: unknown, o: SendOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.auth !== null) headers.authorization = o.auth ?? `Bearer ${ADMIN}`;
  if (o.version !== null) headers['service-version'] = o.version ?? '2';
  let payload: string | Uint8Array | undefined;
  if (o.raw !== undefined) payload = o.raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (typeof payload === 'string' && !('content-type' in headers))
    headers['content-type'] = 'application/json';
  const res = await fetch(`${emu.url}${path}`, { method, headers, body: payload });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}
const post = (path: string, body: unknown, o?: SendOptions) => send('POST', path, body, o);
const patch = (path: string, body: unknown) => send('PATCH', path, body);
const put = (path: string, body: unknown) => send('PUT', path, body);
const get = (path: string, o?: SendOptions) => send('GET', path, undefined, o);
const del = (path: string) => send('DELETE', path);

/** Creates something the trigger needs: fails the test if the API refuses it. */
async function made(p: Promise<Answer>): Promise<Json> {
  const a = await p;
  if (a.status >= 300) throw new Error(`setup refused: ${a.status} ${JSON.stringify(a.json)}`);
  return a.json as Json;
}
const id = (x: Json) => x.id as string;
const policy = () => made(post('/ip_policies', {})).then(id);
const rule = (ipPolicy: string, cidr = '10.0.0.0/8') =>
  made(post('/ip_policy_rules', { ip_policy_id: ipPolicy, cidr, action: 'allow' })).then(id);
const tunnelGroup = (labels: Json = { app: 'web' }) =>
  made(post('/backends/tunnel_group', { labels })).then(id);
const httpsEdge = (body: Json = {}) => made(post('/edges/https', body)).then(id);
const route = (edge: string, body: Json = {}) =>
  made(post(`/edges/https/${edge}/routes`, { match_type: 'path_prefix', match: '/', ...body })).then(id);
const routeWith = async (modules: Json) =>
  post(`/edges/https/${await httpsEdge()}/routes`, { match_type: 'path_prefix', match: '/', ...modules });
const tlsEdge = (body: Json) => post('/edges/tls', body);
const agent = async (spec: Json) => (await made(post('/_emulator/agents', spec))).session_id as string;
const OIDC = { issuer: 'https://id.example.com', client_id: 'app', client_secret: 'secret' };
const GOOD_BREAKER = {
  tripped_duration: 10,
  rolling_window: 60,
  num_buckets: 10,
  volume_threshold: 20,
  error_threshold_percentage: 0.5,
};
const oauth = (provider: Json) => routeWith({ oauth: { provider } });
const github = (fields: Json) => oauth({ github: { client_id: 'app', client_secret: 'secret', ...fields } });
const webhook = (module: Json) => routeWith({ webhook_verification: module });
const headers = (add: Json) => routeWith({ request_headers: { add } });
const ca = (ca_pem: string) => post('/certificate_authorities', { ca_pem });
/** A CA certificate's PEM with an RFC 1421 header before its data. */
const withPemHeader = (pem: string) =>
  pem.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n');

/** One HTTP exchange on its own socket, the request ending early (half-closed). */
function rawHttp(text: string): Promise<Answer> {
  const { port, hostname } = new URL(emu.url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname, () => s.end(text));
    let out = '';
    s.on('data', (d) => {
      out += d;
    });
    s.on('end', () => {
      const body = out.slice(out.indexOf('\r\n\r\n') + 4);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1]),
        json: body ? JSON.parse(body) : undefined,
      });
    });
    s.on('error', reject);
  });
}

/** The request (and what it needs first) that makes the emulator answer with ERR_NGROK_<number>. */
const BUILDERS: Record<number, () => Promise<Answer>> = {
  // --- request
  100: () => post('/ip_policies', { metadata: 'm'.repeat(4097) }),
  200: () => get('/ip_policies', { auth: null }),
  201: () => get('/ip_policies', { auth: 'Basic dXNlcjpwYXNz' }),
  202: () => get('/ip_policies', { auth: 'Bearer two words' }),
  203: () => get('/ip_policies', { auth: 'Bearer not-a-key' }),
  210: () =>
    post('/ip_policies', undefined, { raw: 'description=x', headers: { 'content-type': 'text/plain' } }),
  211: async () => send('DELETE', `/ip_policies/${await policy()}`, undefined, { raw: '{}' }),
  212: () =>
    rawHttp(
      `POST /ip_policies HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ADMIN}\r\nservice-version: 2\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{"description":"short"}`,
    ),
  213: () => post('/ip_policies', undefined, { raw: '{"description":' }),
  214: () => post('/ip_policies', { nope: 1 }),
  215: () => post('/ip_policies', { description: 5 }),
  216: () => post('/ip_policies', undefined, { raw: new TextEncoder().encode('{}') }),
  217: () => get('/ip_policies', { version: '1' }),
  218: () => get('/ip_policies', { version: null }),
  219: () => post('/edges/https', { tls_termination: { min_version: '1.4' } }),
  223: () => get('/ip_policies?before_id=not-an-id'),
  224: () => tlsEdge({ tls_termination: { terminate_at: 'agent' } }),
  226: async () => {
    const limited = await startEmulator({ apiKeys: [ADMIN], rateLimitPerMinute: 1 });
    try {
      const call = () =>
        fetch(`${limited.url}/ip_policies`, {
          headers: { authorization: `Bearer ${ADMIN}`, 'service-version': '2' },
        });
      await (await call()).text();
      const res = await call();
      return { status: res.status, json: (await res.json()) as Answer['json'] };
    } finally {
      await limited.close();
    }
  },
  227: () => get('/ip_policies?before_id=ipr_2k9XbQ'),
  228: () => tlsEdge({ mutual_tls: { certificate_authority_ids: ['not-a-ca'] } }),
  229: () => post('/ip_restrictions', { type: 'api', ip_policy_ids: ['not-a-policy'] }),
  230: () => get('/ip_policies?limit=%zz'),
  231: () => get('/ip_policies?page=2'),
  232: () => get('/ip_policies?limit=1&limit=2'),
  233: () => get('/ip_policies?limit=101'),
  242: () => post('/edges/tcp', { backend: { backend_id: 'not-a-backend' } }),
  243: () => post('/ssh_credentials', { public_key: sshPublicKey(), owner_id: 'team_1' }),
  244: () => get('/ip_policies?limit=ten'),
  250: () => get(`/ip_policies?filter=${encodeURIComponent('obj.description ==')}`),
  380: () => post('/ip_policy_rules', { ip_policy_id: 'ipp_2k9XbQ', cidr: '10.0.0.0/8', action: 'allow' }),

  // --- IP policies and rules
  1400: async () => patch(`/ip_policies/${await policy()}`, {}),
  1401: async () => patch(`/ip_policy_rules/${await rule(await policy())}`, {}),
  1402: () => get('/ip_policies/ipp_2k9XbQ'),
  1404: () => get('/ip_policy_rules/ipr_2k9XbQ'),
  1405: async () => post('/ip_policy_rules', { ip_policy_id: await policy(), action: 'allow' }),
  1406: async () =>
    post('/ip_policy_rules', { ip_policy_id: await policy(), cidr: '300.1.1.1/8', action: 'allow' }),
  1408: async () => {
    const p = await policy();
    await rule(p, '10.0.0.0/8');
    return post('/ip_policy_rules', { ip_policy_id: p, cidr: '10.0.0.0/8', action: 'deny' });
  },
  1409: async () =>
    post('/ip_policy_rules', { ip_policy_id: await policy(), cidr: '10.1.2.3/8', action: 'allow' }),
  1413: async () =>
    post('/ip_policy_rules', { ip_policy_id: await policy(), cidr: '10.1.2.3', action: 'allow' }),
  1414: () => post('/ip_policy_rules', { ip_policy_id: 'corp', cidr: '10.0.0.0/8', action: 'allow' }),
  1419: async () => {
    const p = await policy();
    const r = await rule(p);
    await made(post('/ip_restrictions', { type: 'dashboard', ip_policy_ids: [p] }));
    return del(`/ip_policy_rules/${r}`);
  },
  1420: async () => {
    const p = await policy();
    await made(post('/ip_restrictions', { type: 'api', ip_policy_ids: [p] }));
    return del(`/ip_policies/${p}`);
  },
  1421: async () =>
    post('/ip_policy_rules', {
      ip_policy_id: await policy(),
      cidr: '10.0.0.0/8',
      action: 'allow',
      description: 'd'.repeat(256),
    }),
  1422: async () =>
    post('/ip_policy_rules', { ip_policy_id: await policy(), cidr: '10.0.0.0/8', action: 'maybe' }),
  1423: () => post('/ip_policies', { action: 'allow' }),

  // --- IP restrictions
  1801: () => post('/ip_restrictions', { type: 'api', ip_policy_ids: ['ipp_2k9XbQ'] }),
  1802: async () => {
    const p = await policy();
    await made(post('/ip_restrictions', { type: 'agent', ip_policy_ids: [p] }));
    return post('/ip_restrictions', { type: 'agent', ip_policy_ids: [p] });
  },
  1803: async () => post('/ip_restrictions', { type: 'ssh', ip_policy_ids: [await policy()] }),
  1804: () => post('/ip_restrictions', { type: 'api', ip_policy_ids: [] }),

  // --- backends
  6501: () => post('/backends/weighted', { backends: { bkdtg_2k9XbQ: 1 } }),
  6502: async () => {
    const tg = await tunnelGroup();
    await made(post('/backends/weighted', { backends: { [tg]: 1 } }));
    return del(`/backends/tunnel_group/${tg}`);
  },
  6503: () => post('/backends/tunnel_group', { labels: {}, description: 'd'.repeat(256) }),
  6504: () => post('/backends/tunnel_group', { labels: {}, metadata: 'm'.repeat(4097) }),
  6512: async () => post('/backends/weighted', { backends: { [await tunnelGroup()]: 10_001 } }),
  6514: () => get('/backends/tunnel_group/bkdtg_2k9XbQ'),
  6526: () => post('/backends/weighted', { backends: { web: 1 } }),
  6527: () => get('/backends/weighted/bkdtg_2k9XbQ'),
  6531: () => post('/backends/tunnel_group', { labels: { 'app=web': 'yes' } }),

  // --- SSH credentials
  600: () => post('/ssh_credentials', { public_key: sshPublicKey(), acl: ['example.com'] }),
  604: () => post('/ssh_credentials', { public_key: sshPublicKey(), description: 'd'.repeat(256) }),
  605: () => post('/ssh_credentials', { public_key: sshPublicKey(), metadata: 'm'.repeat(4097) }),
  606: async () =>
    patch(`/ssh_credentials/${id(await made(post('/ssh_credentials', { public_key: sshPublicKey() })))}`, {}),
  609: async () => {
    const key = sshPublicKey('laptop');
    await made(post('/ssh_credentials', { public_key: key }));
    return post('/ssh_credentials', { public_key: key.replace('laptop', 'desktop') });
  },
  611: () => post('/ssh_credentials', { public_key: '' }),
  612: () => post('/ssh_credentials', { public_key: 'ssh-ed25519 AAAA' }),
  629: async () =>
    patch(`/ssh_credentials/${id(await made(post('/ssh_credentials', { public_key: sshPublicKey() })))}`, {
      owner_id: 'usr_other',
    }),
  630: () =>
    post(
      '/ssh_credentials',
      { public_key: sshPublicKey(), owner_id: 'usr_other' },
      { auth: `Bearer ${USER}` },
    ),
  631: () =>
    post('/ssh_credentials', { public_key: sshPublicKey(), owner_id: 'usr_a', owner_email: 'a@example.com' }),

  // --- agents
  804: async () => post(`/tunnel_sessions/${await agent({ name: 'kiosk', os: 'windows' })}/restart`, {}),
  806: async () =>
    post(
      `/tunnel_sessions/${await agent({ name: 'pinned', update: { available_version: '3.9.0', checks_disabled: true } })}/update`,
      {},
    ),
  809: async () =>
    post(
      `/tunnel_sessions/${await agent({ name: 'current', update: { available_version: '3.5.0' } })}/update`,
      {},
    ),
  1121: async () => post(`/tunnel_sessions/${await agent({ name: 'ssh-u', transport: 'ssh' })}/update`, {}),
  1122: async () => post(`/tunnel_sessions/${await agent({ name: 'ssh-r', transport: 'ssh' })}/restart`, {}),

  // --- edges, routes, modules
  7000: () => get('/edges/https/edghts_2k9XbQ'),
  7001: () => get('/edges/https/edgtcp_2k9XbQ'),
  7007: () => routeWith({ ip_restriction: { ip_policy_ids: ['ipp_2k9XbQ'] } }),
  7011: () => routeWith({ circuit_breaker: { ...GOOD_BREAKER, error_threshold_percentage: 50 } }),
  7016: () =>
    routeWith({ circuit_breaker: { rolling_window: 60, num_buckets: 10, error_threshold_percentage: 0.5 } }),
  7017: () => routeWith({ circuit_breaker: { ...GOOD_BREAKER, rolling_window: 0 } }),
  7018: () => routeWith({ circuit_breaker: { ...GOOD_BREAKER, num_buckets: 129 } }),
  7021: () => post('/edges/tcp', { mutual_tls: { certificate_authority_ids: [] } }),
  7023: () => headers({ 'bad header': 'x' }),
  7024: () => headers({ 'x-injected': 'a\r\nset-cookie: b' }),
  7025: () => routeWith({ ip_restriction: { ip_policy_ids: [] } }),
  7026: () => webhook({ provider: 'sns', secret: 'whsec' }),
  7027: () => webhook({ provider: 'stripe' }),
  7029: () => webhook({ secret: 'whsec' }),
  7030: () => webhook({ provider: 'carrier-pigeon', secret: 'whsec' }),
  7032: () => tlsEdge({ tls_termination: { terminate_at: 'upstream', min_version: '1.2' } }),
  7033: () => oauth({ github: { client_id: 'app' } }),
  7034: () => oauth({ github: { scopes: ['read:org'] } }),
  7036: () => oauth({ github: {}, google: {} }),
  7037: () => oauth({}),
  7040: () => github({ teams: ['justateam'] }),
  7044: () => github({ email_domains: ['xn--zz.example.com'] }),
  7045: () => github({ email_addresses: ['a@xn--zz.example.com'] }),
  7046: () => github({ email_addresses: ['a@example.com', 'a@example.com'] }),
  7047: () => github({ email_domains: ['example.com', 'example.com'] }),
  7048: () => github({ teams: ['org/team', 'org/team'] }),
  7049: () => github({ organizations: ['org', 'org'] }),
  7051: () => github({ email_addresses: [''] }),
  7052: () => github({ email_domains: [''] }),
  7053: () => github({ teams: [''] }),
  7054: () => github({ organizations: [''] }),
  7062: () =>
    tlsEdge({ tls_termination: { terminate_at: 'upstream' }, mutual_tls: { certificate_authority_ids: [] } }),
  7067: () => github({ email_addresses: ['Alice@example.com'] }),
  7068: () => github({ email_domains: ['Example.com'] }),
  7069: () => headers({ 'X-Team': 'a', 'x-team': 'b' }),
  7072: () => tlsEdge({ mutual_tls: { certificate_authority_ids: ['ca_2k9XbQ'] } }),
  7073: () => post('/edges/https', { description: 'd'.repeat(256) }),
  7074: () => post('/edges/https', { metadata: 'm'.repeat(4097) }),
  7079: () => routeWith({ oauth: { provider: { github: {} } }, oidc: OIDC }),
  7081: () =>
    routeWith({
      saml: { idp_metadata: '<EntityDescriptor/>', idp_metadata_url: 'https://idp.example.com/metadata' },
    }),
  7087: () => routeWith({ oidc: { ...OIDC, issuer: `https://id.example.com/${'a'.repeat(300)}` } }),
  7088: () => routeWith({ oidc: { client_id: 'app', client_secret: 'secret' } }),
  7089: () => routeWith({ oidc: { issuer: OIDC.issuer, client_secret: 'secret' } }),
  7090: () => routeWith({ oidc: { issuer: OIDC.issuer, client_id: 'app' } }),
  7091: () => routeWith({ saml: {} }),
  7092: () => routeWith({ oidc: { ...OIDC, inactivity_timeout: 365 * 24 * 3600 + 1 } }),
  7104: () => post('/edges/tcp', { hostports: ['no-port.example.com'] }),
  7107: () => webhook({ provider: 'sendgrid', secret: 'not-a-key' }),
  7109: () => post('/edges/https', { tls_termination: { terminate_at: 'edge' } }),
  7110: async () => {
    const [a, b] = [await httpsEdge(), await httpsEdge()];
    return get(`/edges/https/${b}/routes/${await route(a)}`);
  },
  7112: () => post('/edges/https', { hostports: ['app.example.com:0'] }),
  7122: async () => {
    await httpsEdge({ hostports: ['app.example.com:443'] });
    return post('/edges/https', { hostports: ['app.example.com:443'] });
  },
  7123: async () => post(`/edges/https/${await httpsEdge()}/routes`, { match_type: 'path_prefix' }),
  7124: async () => get(`/edges/https/${await httpsEdge()}/routes/edghtsrt_2k9XbQ`),
  7126: async () => {
    const e = await httpsEdge();
    await route(e, { match: '/api' });
    return post(`/edges/https/${e}/routes`, { match_type: 'exact_path', match: '/api' });
  },
  7127: () => routeWith({ match: '/admin', oauth: { provider: { github: {} } } }),
  7130: async () => post(`/edges/https/${await httpsEdge()}/routes`, { match_type: 'regex', match: '/' }),
  7155: async () => {
    const e = await httpsEdge();
    await route(e, { match: '/', oidc: OIDC });
    return post(`/edges/https/${e}/routes`, { match_type: 'path_prefix', match: '/admin', oidc: OIDC });
  },
  7039: () => github({ email_domains: ['not a domain'] }),
  7042: () => routeWith({ oauth: { provider: { github: {} }, cookie_prefix: 'edge_' } }),
  7043: () => github({ email_addresses: ['not-an-address'] }),
  7083: () => routeWith({ saml: { idp_metadata: 'https://idp.example.com/metadata' } }),
  7105: () => headers({ [`x-${'a'.repeat(127)}`]: 'v' }),
  7106: () => headers({ 'x-long': 'v'.repeat(1025) }),
  7165: () => oauth({ myspace: {} }),
  7166: () => oauth({ gitlab: {} }),
  1693: () =>
    routeWith({ saml: { idp_metadata: '<EntityDescriptor/>', nameid_format: 'urn:example:nameid' } }),

  // --- certificate authorities: one CA certificate in PEM
  1900: () => ca('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'),
  1910: async () => ca(withPemHeader(await selfSignedCaPem('Headers CA'))),
  1911: () =>
    ca(
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
        type: 'spki',
        format: 'pem',
      }) as string,
    ),
  1912: async () => ca((await selfSignedCaPem('One CA')) + (await selfSignedCaPem('Two CA'))),
  1913: async () => ca(await selfSignedPem('leaf.example.com')),
  1919: () => ca(''),
  1920: () => ca('not a certificate'),
};

/**
 * Requests for entries the catalogue calls gap: the emulator must still accept them (so the
 * catalogue says the truth), until the entry is flipped and its request moves to BUILDERS.
 */
const PENDING: Record<number, () => Promise<Answer>> = {};

/** The message's template as a pattern: the reference's words, any value where it names one. */
function templatePattern(message: string): RegExp {
  const parts = message.split(/<[A-Z][A-Z0-9_]*>/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('[\\s\\S]*?')}`);
}

/** number -> whether the emulator answered with the public code, status and message. */
const refused = new Map<number, boolean>();

beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [
      { key: ADMIN, ownerId: 'usr_admin', admin: true },
      { key: USER, ownerId: 'usr_user', admin: false },
    ],
    adminKey: ADMIN,
  });
});
afterAll(() => emu?.close());
// every request starts from an empty emulator: no entry depends on another's leftovers
beforeEach(() => made(send('POST', '/_emulator/reset', undefined, { version: null })));

const enforced = CATALOGUE.filter(isEnforced);

describe('the catalogue', () => {
  it('has one entry per number, one entry per descriptive name, and says why where it must', () => {
    for (const x of CATALOGUE)
      expect(Object.keys(reference.areas), `ERR_NGROK_${x.number}`).toContain(x.area);
    const numbers = CATALOGUE.map((x) => x.number);
    expect(new Set(numbers).size).toBe(numbers.length);
    const names = CATALOGUE.flatMap((x) => x.names ?? []);
    expect(new Set(names).size).toBe(names.length);
    for (const x of CATALOGUE) {
      if (x.handling === 'n/a' || x.handling === 'gap') expect(x.why, `ERR_NGROK_${x.number}`).toBeTruthy();
      if (x.handling !== 'n/a')
        expect(x.names?.length, `ERR_NGROK_${x.number} needs a name`).toBeGreaterThan(0);
      expect(x.trigger, `ERR_NGROK_${x.number}`).toBeTruthy();
      expect(x.message, `ERR_NGROK_${x.number}`).not.toMatch(/`/);
    }
  });

  it('is checked when the emulator loads it: a number or a name twice, a gap without why', () => {
    const [a, b] = [SERVED[0]!, SERVED[1]!];
    const file = (entries: unknown[]) => ({ $comment: 'test', entries });
    expect(loadCatalogue(file([a, b]))).toHaveLength(2);
    expect(() => loadCatalogue(file([a, { ...b, number: a.number }]))).toThrow(
      `numbers listed twice: ${a.number}`,
    );
    expect(() => loadCatalogue(file([a, { ...b, names: a.names }]))).toThrow('names listed twice');
    expect(() => loadCatalogue(file([{ ...a, handling: 'gap', why: undefined }]))).toThrow(
      'does not say why',
    );
    expect(() => loadCatalogue(file([{ ...a, status: '400' }]))).toThrow('entries.0.status');
    expect(() => loadCatalogue(file([{ ...a, handling: 'n/a' }]))).toThrow('entries.0.handling');
  });

  it('has a request for every entry the emulator refuses, and no request for any other', () => {
    const missing = enforced.filter((x) => !BUILDERS[x.number]).map((x) => x.number);
    expect(missing, 'entries marked emulator/crd/operator without a request in BUILDERS').toEqual([]);
    const stray = Object.keys(BUILDERS)
      .map(Number)
      .filter((n) => !isEnforced(catalogueEntry(n)));
    expect(stray, 'requests for entries the catalogue does not say the emulator refuses').toEqual([]);
  });
});

describe('every entry the emulator refuses, refused with the public code', () => {
  it.each(enforced.map((x) => [`ERR_NGROK_${x.number}`, x] as [string, PublicError]))('%s', async (_, x) => {
    refused.set(x.number, false);
    const a = await BUILDERS[x.number]!();
    expect(a.json?.error_code, `${x.trigger}: ${JSON.stringify(a.json)}`).toBe(`ERR_NGROK_${x.number}`);
    expect(a.status).toBe(x.status);
    expect(a.json?.status_code).toBe(x.status);
    expect(x.names).toContain(a.json?.details?.code);
    expect(a.json?.msg).toMatch(templatePattern(x.message));
    // every placeholder the message names got a value
    for (const p of placeholders(x.message)) expect(a.json?.msg, `<${p}> not filled`).not.toContain(`<${p}>`);
    refused.set(x.number, true);
  });
});

describe('rules across objects hold on every path that changes them', () => {
  const code = (a: Answer) => a.json?.error_code;

  it('a rule whose CIDR is updated to another rule of its policy (1408), however the CIDR is written', async () => {
    const p = await policy();
    await rule(p, '2001:db8::/32');
    const r = await rule(p, '10.0.0.0/8');
    expect(code(await patch(`/ip_policy_rules/${r}`, { cidr: '2001:DB8:0::/32' }))).toBe('ERR_NGROK_1408');
    expect(
      (await patch(`/ip_policy_rules/${r}`, { cidr: '10.0.0.0/8', description: 'same rule' })).status,
    ).toBe(200);
    // another policy may hold the same CIDR
    expect(
      (await post('/ip_policy_rules', { ip_policy_id: await policy(), cidr: '10.0.0.0/8', action: 'allow' }))
        .status,
    ).toBe(201);
  });

  it('a route whose match is updated to another route of its edge (7126); another edge may have it', async () => {
    const e = await httpsEdge();
    await route(e, { match: '/a' });
    const b = await route(e, { match: '/b' });
    expect(code(await patch(`/edges/https/${e}/routes/${b}`, { match: '/a' }))).toBe('ERR_NGROK_7126');
    expect((await patch(`/edges/https/${e}/routes/${b}`, { match: '/b' })).status).toBe(200);
    expect(
      (await post(`/edges/https/${await httpsEdge()}/routes`, { match_type: 'path_prefix', match: '/a' }))
        .status,
    ).toBe(201);
  });

  it('an edge whose hostports are updated to another edge of its kind (7122)', async () => {
    await httpsEdge({ hostports: ['a.example.com:443'] });
    const b = await httpsEdge({ hostports: ['b.example.com:443'] });
    expect(code(await patch(`/edges/https/${b}`, { hostports: ['a.example.com:443'] }))).toBe(
      'ERR_NGROK_7122',
    );
    expect(
      (await patch(`/edges/https/${b}`, { hostports: ['b.example.com:443', 'c.example.com:443'] })).status,
    ).toBe(200);
  });

  it('login modules: a second one by PUT or PATCH (7079); disabled ones do not count', async () => {
    const e = await httpsEdge();
    const r = await route(e, { oauth: { provider: { github: {} } } });
    expect(code(await put(`/edges/https/${e}/routes/${r}/oidc`, OIDC))).toBe('ERR_NGROK_7079');
    expect(code(await patch(`/edges/https/${e}/routes/${r}`, { oidc: OIDC }))).toBe('ERR_NGROK_7079');
    expect((await put(`/edges/https/${e}/routes/${r}/oidc`, { ...OIDC, enabled: false })).status).toBe(200);
  });

  it('login modules on a second route of an edge (7155), by PUT or PATCH; disabled ones and other edges do not count', async () => {
    const e = await httpsEdge();
    const first = await route(e, { saml: { idp_metadata: '<EntityDescriptor/>' } });
    const other = await route(e, { match: '/admin', oidc: { ...OIDC, enabled: false } });
    expect(code(await put(`/edges/https/${e}/routes/${other}/oidc`, OIDC))).toBe('ERR_NGROK_7155');
    expect(code(await patch(`/edges/https/${e}/routes/${other}`, { oidc: OIDC }))).toBe('ERR_NGROK_7155');
    expect(
      code(await put(`/edges/https/${e}/routes/${other}/saml`, { idp_metadata: '<EntityDescriptor/>' })),
    ).toBe('ERR_NGROK_7155');
    expect((await routeWith({ oidc: OIDC })).status, 'a route of another edge').toBe(201);
    // once the first route has none, the second may
    expect((await del(`/edges/https/${e}/routes/${first}/saml`)).status).toBe(204);
    expect((await put(`/edges/https/${e}/routes/${other}/oidc`, OIDC)).status).toBe(200);
  });

  it("OAuth on the route '/' only (7127): by PATCH of the match, by PUT of the module; exact_path '/' and a disabled module are taken", async () => {
    const e = await httpsEdge();
    const r = await route(e, { oauth: { provider: { github: {} } } });
    const a = await patch(`/edges/https/${e}/routes/${r}`, { match: '/login' });
    expect(code(a)).toBe('ERR_NGROK_7127');
    expect(a.json?.msg).toContain('could not configure for route /login.');
    const admin = await route(e, { match: '/admin' });
    expect(code(await put(`/edges/https/${e}/routes/${admin}/oauth`, { provider: { github: {} } }))).toBe(
      'ERR_NGROK_7127',
    );
    expect(
      (await put(`/edges/https/${e}/routes/${admin}/oauth`, { enabled: false, provider: { github: {} } }))
        .status,
    ).toBe(200);
    const exact = await post(`/edges/https/${await httpsEdge()}/routes`, {
      match_type: 'exact_path',
      match: '/',
      oauth: { provider: { github: {} } },
    });
    expect(exact.status).toBe(201);
  });

  it('mutual TLS and TLS passed upstream, in either order (7062)', async () => {
    const a = id(await made(tlsEdge({ tls_termination: { terminate_at: 'upstream' } })));
    expect(code(await put(`/edges/tls/${a}/mutual_tls`, { certificate_authority_ids: [] }))).toBe(
      'ERR_NGROK_7062',
    );
    const b = id(await made(tlsEdge({ mutual_tls: { certificate_authority_ids: [] } })));
    expect(code(await put(`/edges/tls/${b}/tls_termination`, { terminate_at: 'upstream' }))).toBe(
      'ERR_NGROK_7062',
    );
    expect((await put(`/edges/tls/${b}/tls_termination`, { terminate_at: 'edge' })).status).toBe(200);
  });

  it('a backend another weighted backend uses, weighted or not (6502); free once it is not used', async () => {
    const tg = await tunnelGroup();
    const inner = id(await made(post('/backends/weighted', { backends: { [tg]: 1 } })));
    const outer = id(await made(post('/backends/weighted', { backends: { [inner]: 1 } })));
    expect(code(await del(`/backends/weighted/${inner}`))).toBe('ERR_NGROK_6502');
    expect((await del(`/backends/weighted/${outer}`)).status).toBe(204);
    expect((await del(`/backends/weighted/${inner}`)).status).toBe(204);
    expect((await del(`/backends/tunnel_group/${tg}`)).status).toBe(204);
  });

  it('one IP restriction per type (1802), the others free', async () => {
    const p = await policy();
    for (const type of ['dashboard', 'api', 'agent', 'endpoints'])
      expect((await post('/ip_restrictions', { type, ip_policy_ids: [p] })).status).toBe(201);
    expect(code(await post('/ip_restrictions', { type: 'api', ip_policy_ids: [p] }))).toBe('ERR_NGROK_1802');
  });

  it('a canonical CIDR, a single address with its mask and IPv6 ranges are accepted', async () => {
    const p = await policy();
    for (const cidr of [
      '10.0.0.0/8',
      '10.1.2.3/32',
      '0.0.0.0/0',
      '2001:db8::/32',
      '::1/128',
      '2001:db8:1234::/48',
    ])
      expect((await post('/ip_policy_rules', { ip_policy_id: p, cidr, action: 'allow' })).status, cidr).toBe(
        201,
      );
    const a = await post('/ip_policy_rules', { ip_policy_id: p, cidr: '2001:db8::1/32', action: 'allow' });
    expect(a.json?.msg).toContain('Did you mean 2001:db8::/32?');
  });
});

describe('gap entries with a request are still accepted (flip the entry when enforcing them)', () => {
  // one test over PENDING rather than one each: with no gap left the table is empty
  it('every request in PENDING is for a gap entry, and the emulator takes it', async () => {
    const stray = Object.keys(PENDING)
      .map(Number)
      .filter((n) => catalogueEntry(n).handling !== 'gap');
    expect(stray, 'requests in PENDING for entries that are no gap: move them to BUILDERS').toEqual([]);
    for (const [n, request] of Object.entries(PENDING)) {
      await made(send('POST', '/_emulator/reset', undefined, { version: null }));
      const a = await request();
      expect(a.json?.error_code, `ERR_NGROK_${n}`).not.toBe(`ERR_NGROK_${n}`);
      expect(a.status, `ERR_NGROK_${n}`).toBeLessThan(300);
    }
  });
});

describe('coverage', () => {
  it('the emulator refuses at least 95% of the applicable entries with the public code', () => {
    const applicable = CATALOGUE.filter(isApplicable);
    const ok = applicable.filter((x) => refused.get(x.number) === true);
    const share = ok.length / applicable.length;
    const by = (h: string) => CATALOGUE.filter((x) => x.handling === h).length;
    const gaps = applicable.filter((x) => !refused.get(x.number)).map((x) => x.number);
    process.stdout.write(
      `\npublic error coverage: ${ok.length}/${applicable.length} applicable entries refused with the public code (${(share * 100).toFixed(1)}%); ` +
        `catalogue: ${CATALOGUE.length} entries (emulator ${by('emulator')}, crd ${by('crd')}, operator ${by('operator')}, gap ${by('gap')}, n/a ${by('n/a')}); ` +
        `not refused: ${gaps.map((n) => `ERR_NGROK_${n}`).join(', ') || 'none'}\n`,
    );
    expect(share).toBeGreaterThanOrEqual(0.95);
  });
});
