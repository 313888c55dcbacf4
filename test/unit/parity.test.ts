// Parity between what admission accepts and what the API accepts. A value the CRD schema
// takes but the API refuses reaches users as Stalled/APIRejected after the fact instead of
// an error at `kubectl apply`: each field of each kind is probed with values on both sides
// of the spec's rules, and every spec the CRD's zod schema accepts must be accepted by the
// API (the in-process emulator) when the binding turns it into a create.
import { evaluate } from '@marcbachmann/cel-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { EdgeClient } from '../../src/api/client.ts';
import { createClient } from '../../src/api/client.ts';
import { ApiError } from '../../src/api/errors.ts';
import { ID_PREFIX, type IdKind, OAUTH_PROVIDERS } from '../../src/api/limits.ts';
import { operations } from '../../src/api/operations.ts';
import { ROUTE_RULES } from '../../src/api/route-rules.ts';
import { idRule, RULES, type Rule } from '../../src/api/rules.ts';
import { tagOf } from '../../src/api/schemas/common.ts';
import { SSHCredentialCreate } from '../../src/api/schemas/credentials.ts';
import { EDGE_MODULES, ROUTE_MODULES } from '../../src/api/schemas/edges.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { crdFor, specSchema } from '../../src/operator/kinds/crd.ts';
import { HTTPSEdgeRoute } from '../../src/operator/kinds/https-edge-route.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { AnyBinding } from '../../src/operator/runtime/bindings/binding.ts';
import { selfSignedCaPem } from '../../src/util/x509.ts';
import { sshPublicKey } from '../integration/harness.ts';

// --- each rule: its admission pattern says what the API's check says

const VALID: Record<keyof typeof RULES, string[]> = {
  cidr: ['10.0.0.0/8', '192.168.1.1', '2001:db8::/32', '::1'],
  hostport: ['app.example.com:443', '*.example.com:8443', 'a:1', 'x.io:65535'],
  headerName: ['X-Request-Id', 'accept', "x!#$%&'*+.^_`|~"],
  githubTeam: ['my-org/my-team', 'o/t'],
  url: ['https://id.example.com', 'http://localhost:8080/realms/x'],
  sshPublicKey: [sshPublicKey()],
  aclRule: ['*', 'bind:example.com', 'bind:*.example.com', 'bind:app.example.com:443', 'bind:team=web'],
  headerValue: ['', 'max-age=63072000', 'a\tb', 'é', '\x01\x1f'],
  emailAddress: ['a@example.com', 'Alice.B+tag@mail.example.co.uk', 'a@xn--zz.example.com'],
  emailDomain: ['example.com', 'Example.com', 'a-b.c.example', 'xn--zz.example.com'],
  cookiePrefix: ['', 'edge.', 'Sso.1'],
  samlMetadata: [
    '<EntityDescriptor/>',
    '<?xml version="1.0"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x">\n</md:EntityDescriptor>\n',
    '<EntitiesDescriptor><EntityDescriptor/></EntitiesDescriptor>',
  ],
};
const INVALID: Record<keyof typeof RULES, string[]> = {
  cidr: ['', '10.0.0.0/33', '300.1.1.1', '10.0.0.0/', 'host'],
  hostport: [
    '',
    'app.example.com',
    'app.example.com:0',
    'app.example.com:99999',
    `${'a'.repeat(70)}.example.com:443`,
    'UPPER.example.com:443',
    'a b:80',
  ],
  headerName: ['', 'bad header', 'x:y', 'é'],
  githubTeam: ['', 'team', 'org/', '/team', 'a/b/c', 'org /team'],
  url: ['', 'not a url', 'example.com'],
  sshPublicKey: ['', 'ssh-ed25519', 'ssh-rsa AAAA', 'ssh-ed25519 not-base64!'],
  aclRule: ['', 'example.com', 'bind:', 'bind:a b', 'bind:*', '**'],
  headerValue: ['a\r\nset-cookie: b', 'a\nb', 'nul\x00', 'del\x7f'],
  emailAddress: [
    '',
    'a',
    'a@',
    '@example.com',
    'a@b',
    'a b@example.com',
    'a@example..com',
    'a@-x.example.com',
  ],
  emailDomain: ['', 'example', '.example.com', 'example.com.', 'a b.com', '-x.example.com', 'a@example.com'],
  cookiePrefix: ['edge_', 'a-b', 'a b', 'é'],
  samlMetadata: [
    '',
    'not xml',
    'https://idp.example.com/metadata',
    '<html></html>',
    '<EntityDescriptorX/>',
    '<EntityDescriptor',
    'x<EntityDescriptor/>',
  ],
};

describe('each rule is one check on both sides', () => {
  for (const [name, rule] of Object.entries(RULES) as [keyof typeof RULES, Rule][]) {
    it(`${name}: valid values pass, invalid ones fail, and its admission pattern agrees`, () => {
      for (const v of VALID[name]) expect(rule.test(v), `${name} ${JSON.stringify(v)}`).toBe(true);
      for (const v of INVALID[name]) expect(rule.test(v), `${name} ${JSON.stringify(v)}`).toBe(false);
      if (!rule.pattern) return expect(rule.cel).toBeTruthy();
      const re = new RegExp(rule.pattern);
      for (const v of [...VALID[name], ...INVALID[name]]) {
        // admission cannot decode an SSH key: its pattern may only be the looser of the two
        if (name === 'sshPublicKey' && !rule.test(v)) continue;
        expect(re.test(v), `pattern of ${name} on ${JSON.stringify(v)}`).toBe(rule.test(v));
      }
      for (const v of VALID[name]) expect(v.length).toBeLessThanOrEqual(rule.maxLength);
    });
  }

  it('id rules take the spec prefixes only', () => {
    for (const kind of Object.keys(ID_PREFIX) as IdKind[]) {
      const r = idRule(kind);
      expect(r.test(`${ID_PREFIX[kind]}_2k9XbQ`)).toBe(true);
      expect(r.test(`${ID_PREFIX[kind]}_`)).toBe(false);
      expect(r.test(`x${ID_PREFIX[kind]}_2k9XbQ`)).toBe(false);
      expect(new RegExp(r.pattern!).test(`${ID_PREFIX[kind]}_2k9XbQ`)).toBe(true);
    }
    expect(idRule('tunnelGroupBackend', 'weightedBackend').test('bkdwd_1')).toBe(true);
    expect(idRule('tunnelGroupBackend', 'weightedBackend').test('bkdhr_1')).toBe(false);
  });
});

// --- each rule across fields, and on whole lists: its CEL says what its check says

/** Every wire object (and list) that carries a rule of its own, from the modules' inputs down. */
function* ruledSchemas(s: z.ZodType, seen = new Set<z.ZodType>()): Generator<z.ZodType> {
  if (seen.has(s)) return;
  seen.add(s);
  const tag = tagOf(s);
  if (tag?.cross || tag?.list) yield s;
  const d = s._zod.def as { innerType?: z.ZodType; element?: z.ZodType; shape?: Record<string, z.ZodType> };
  for (const next of [d.innerType, d.element, ...Object.values(d.shape ?? {})])
    if (next) yield* ruledSchemas(next, seen);
}
const WIRE_INPUTS = [
  ...Object.values(ROUTE_MODULES).map(([input]) => input),
  ...Object.values(EDGE_MODULES).flatMap((family) => Object.values(family).map(([input]) => input)),
  SSHCredentialCreate,
];
/** Values of a field's type that CEL may see (the CRD schema refused the rest, '' among them). */
function samples(s: z.ZodType): unknown[] {
  const d = s._zod.def as { type: string; innerType?: z.ZodType; entries?: Record<string, string> };
  if (d.innerType) return samples(d.innerType);
  if (d.type === 'enum') return Object.values(d.entries!);
  if (d.type === 'string') return ['x'];
  if (d.type === 'array') return [[], ['x']];
  if (d.type === 'boolean') return [true, false];
  if (d.type === 'object') return [{}];
  return [0, 1];
}

describe('each rule across fields is one check on both sides', () => {
  const schemas = [...new Set(WIRE_INPUTS.flatMap((s) => [...ruledSchemas(s)]))];

  it('finds the rules of webhooks, OAuth providers, TLS termination and ACLs', () => {
    const rules = schemas.flatMap((s): { errorCode: string }[] => tagOf(s)!.cross ?? [tagOf(s)!.list!]);
    expect(rules.map((r) => r.errorCode)).toEqual(
      expect.arrayContaining([
        'ERR_WEBHOOK_SECRET_REQUIRED',
        'ERR_OAUTH_ONE_PROVIDER',
        'ERR_OAUTH_CLIENT_SECRET_REQUIRED',
        'ERR_OAUTH_CLIENT_ID_REQUIRED',
        'ERR_OAUTH_SCOPES_NEED_CLIENT',
        'ERR_OAUTH_CLIENT_REQUIRED',
        'ERR_MIN_VERSION_WITH_UPSTREAM',
        'ERR_INVALID_ACL',
      ]),
    );
  });

  it('on every combination of the fields a rule reads, CEL and the check agree', () => {
    let cases = 0;
    for (const s of schemas) {
      for (const r of tagOf(s)!.cross ?? []) {
        const expr = r.cel((f) => f);
        const fields = [...new Set([...expr.matchAll(/self\.(\w+)/g)].map((m) => m[1]!))];
        const shape = (s._zod.def as unknown as { shape: Record<string, z.ZodType> }).shape;
        // a required field is always there when CEL runs: the schema saw to it
        const values = (f: string) => [
          ...(['optional', 'default'].includes(shape[f]!._zod.def.type) ? [undefined] : []),
          ...samples(shape[f]!),
        ];
        const combos = fields.reduce<Record<string, unknown>[]>(
          (acc, f) => acc.flatMap((o) => values(f).map((v) => (v === undefined ? o : { ...o, [f]: v }))),
          [{}],
        );
        for (const o of combos) {
          cases++;
          expect(evaluate(expr, { self: o }), `${r.errorCode} ${expr} on ${JSON.stringify(o)}`).toBe(
            r.test((f) => o[f]),
          );
        }
      }
      const list = tagOf(s)!.list;
      if (list)
        for (const l of [[], ['*'], ['*', 'bind:x'], ['bind:x', 'bind:y'], ['bind:x']]) {
          cases++;
          expect(evaluate(list.cel, { self: l }), `${list.cel} on ${JSON.stringify(l)}`).toBe(list.test(l));
        }
    }
    expect(cases).toBeGreaterThan(100);
  });
});

describe('rules CEL states on a whole route and on map values', () => {
  type CrdNode = { properties?: Record<string, CrdNode>; 'x-kubernetes-validations'?: { rule: string }[] };
  const spec = (
    crdFor(HTTPSEdgeRoute) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: CrdNode } } } }[] };
    }
  ).spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
  const rules = (n: CrdNode | undefined) => (n?.['x-kubernetes-validations'] ?? []).map((r) => r.rule);

  it('one login module enabled per route: the CRD rule and the check agree on every combination', () => {
    const r = ROUTE_RULES.oneLoginModule;
    expect(rules(spec)).toContain(r.cel((f) => f));
    const states = [undefined, {}, { enabled: true }, { enabled: false }];
    let cases = 0;
    for (const oauth of states)
      for (const saml of states)
        for (const oidc of states) {
          const o = Object.fromEntries(
            Object.entries({ oauth, saml, oidc }).filter(([, v]) => v !== undefined),
          );
          cases++;
          expect(
            evaluate(
              r.cel((f) => f),
              { self: o },
            ),
            JSON.stringify(o),
          ).toBe(r.test((f) => o[f]));
        }
    expect(cases).toBe(64);
  });

  it("OAuth on the route '/' only: the CRD rule, the check and the API agree on every combination", async () => {
    const r = ROUTE_RULES.oauthAtRoot;
    expect(rules(spec)).toContain(r.cel((f) => f));
    const schema = specSchema(HTTPSEdgeRoute);
    let refused = 0;
    for (const oauth of [undefined, { enabled: true }, { enabled: false }])
      for (const matchType of ['path_prefix', 'exact_path'])
        for (const match of ['/', '/admin', '//', '/ ', 'app.example.com/']) {
          const o = {
            ...ROUTE,
            matchType,
            match,
            ...(oauth ? { oauth: { provider: { github: {} }, ...oauth } } : {}),
          };
          const where = JSON.stringify(o);
          const admitted = schema.safeParse(o);
          expect(
            evaluate(
              r.cel((f) => f),
              { self: o },
            ),
            where,
          ).toBe(r.test((f) => (o as Json)[f]));
          expect(admitted.success, where).toBe(r.test((f) => (o as Json)[f]));
          // what admission takes the API takes; what it refuses the API refuses with the public number
          const api = await apiRefusal(HTTPSEdgeRoute as AnyBinding, (admitted.data ?? o) as Json);
          if (admitted.success) expect(api, where).toBeUndefined();
          else {
            refused++;
            expect(api, where).toMatch(/^ERR_NGROK_7127: OAuth may not currently be configured/);
          }
        }
    expect(refused).toBe(8);
  });

  it('header values: the CRD rule over the map says what the check of the API says', () => {
    for (const headers of ['requestHeaders', 'responseHeaders']) {
      const add = spec.properties![headers]!.properties!.add;
      const rule = rules(add).find((x) => x.includes('self[k]'))!;
      expect(rule, headers).toBeTruthy();
      for (const v of [...VALID.headerValue, ...INVALID.headerValue])
        expect(evaluate(rule, { self: { 'x-a': 'ok', 'x-b': v } }), JSON.stringify(v)).toBe(
          RULES.headerValue.test(v),
        );
    }
  });
});

// --- each field of each kind: admission never takes what the API refuses

const STRINGS = [
  '',
  'a',
  'x'.repeat(300),
  `${'a'.repeat(70)}.example.com:443`,
  'app.example.com:0',
  'app.example.com:99999',
  'app.example.com:443',
  'bad header',
  'not a url',
  'https://id.example.com',
  'team',
  'org/team',
  '10.0.0.0/33',
  '10.0.0.0/8',
  'ipp_',
  'ca_x1',
  'bkdhr_x1',
  '*',
  'bind:*.example.com',
  'ü',
];
const NUMBERS = [-1, 0, 0.5, 1, 1.5, 100, 2 ** 32];

type Json = Record<string, unknown>;
type Path = (string | number)[];

/** Every leaf (and record key) of a spec, with a setter for a probe value. */
function* probes(
  spec: unknown,
  path: Path = [],
): Generator<{ path: Path; values: unknown[]; key?: boolean }> {
  if (typeof spec === 'string') yield { path, values: STRINGS };
  else if (typeof spec === 'number') yield { path, values: NUMBERS };
  else if (Array.isArray(spec)) for (const [i, v] of spec.entries()) yield* probes(v, [...path, i]);
  else if (spec && typeof spec === 'object')
    for (const [k, v] of Object.entries(spec)) {
      if (path.at(-1) === 'add') yield { path: [...path, k], values: STRINGS, key: true };
      yield* probes(v, [...path, k]);
    }
}
function withValue(spec: Json, path: Path, value: unknown, key: boolean): Json {
  const out = structuredClone(spec);
  let node = out as Record<string | number, unknown>;
  for (const p of path.slice(0, -1)) node = node[p] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (key) {
    const v = node[last];
    delete node[last];
    node[value as string] = v;
  } else node[last] = value;
  return out;
}

const ROUTE = { edgeRef: { name: 'app' }, matchType: 'path_prefix', match: '/' };
const secretRef = { name: 'auth', key: 'value' };
const session = {
  optionsPassthrough: true,
  cookiePrefix: 'sso',
  inactivityTimeout: 3600,
  maximumDuration: 86400,
};
/** A spec per kind (several for routes) that uses every field. */
const SPECS = (ids: Record<string, string>): [string, Json][] => [
  ['IPPolicy', { description: 'office', metadata: 'team=a' }],
  ['IPPolicyRule', { cidr: '10.0.0.0/8', action: 'allow', ipPolicyRef: { name: 'p' } }],
  ['IPPolicyRule', { cidr: '10.0.0.0/8', action: 'deny', ipPolicyID: ids.IPPolicy }],
  [
    'IPRestriction',
    { type: 'dashboard', enforced: true, ipPolicyRefs: [{ name: 'p' }], ipPolicyIDs: [ids.IPPolicy] },
  ],
  ['TunnelGroupBackend', { labels: { app: 'web' } }],
  [
    'WeightedBackend',
    {
      backends: [
        { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 1 },
        { backendID: ids.TunnelGroupBackend, weight: 10 },
      ],
    },
  ],
  [
    'SSHCredential',
    { publicKey: ids.key, acl: ['bind:*.example.com', 'bind:app.example.com:443'], ownerID: 'usr_emulator' },
  ],
  ['HTTPSEdge', { hostports: ['app.example.com:443'], tlsTermination: { minVersion: '1.2' } }],
  ['TCPEdge', { hostports: ['1.tcp.example.com:20001'], backend: { backendID: ids.TunnelGroupBackend } }],
  [
    'TLSEdge',
    {
      hostports: ['tls.example.com:443'],
      tlsTermination: { terminateAt: 'edge', minVersion: '1.3' },
      mutualTLS: { certificateAuthorityIDs: [ids.ca] },
      backend: { backendRef: { kind: 'TunnelGroupBackend', name: 'web' } },
    },
  ],
  [
    'HTTPSEdgeRoute',
    {
      ...ROUTE,
      backend: { backendRef: { kind: 'WeightedBackend', name: 'split' } },
      ipRestriction: { ipPolicyRefs: [{ name: 'p' }] },
      circuitBreaker: {
        trippedDuration: 10,
        rollingWindow: 60,
        numBuckets: 10,
        volumeThreshold: 20,
        errorThresholdPercentage: 0.5,
      },
      compression: {},
      requestHeaders: { add: { 'X-From': 'edge' }, remove: ['Cookie'] },
      responseHeaders: { add: { 'Strict-Transport-Security': 'max-age=63072000' }, remove: ['Server'] },
      webhookVerification: { provider: 'stripe', secretRef },
      websocketTCPConverter: {},
    },
  ],
  [
    'HTTPSEdgeRoute',
    {
      ...ROUTE,
      oauth: {
        provider: {
          github: {
            clientID: 'app',
            clientSecretRef: secretRef,
            scopes: ['read:org'],
            emailAddresses: ['a@example.com'],
            emailDomains: ['example.com'],
            teams: ['org/team'],
            organizations: ['org'],
          },
        },
        ...session,
        authCheckInterval: 600,
      },
    },
  ],
  [
    'HTTPSEdgeRoute',
    {
      ...ROUTE,
      saml: {
        idpMetadata: '<EntityDescriptor/>',
        forceAuthn: true,
        allowIdpInitiated: false,
        authorizedGroups: ['eng'],
        nameIDFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
        ...session,
      },
    },
  ],
  [
    'HTTPSEdgeRoute',
    {
      ...ROUTE,
      oidc: {
        issuer: 'https://id.example.com',
        clientID: 'app',
        clientSecretRef: secretRef,
        scopes: ['openid'],
        ...session,
      },
    },
  ],
  ...OAUTH_PROVIDERS.filter((p) => p !== 'github').map((p): [string, Json] => [
    'HTTPSEdgeRoute',
    {
      ...ROUTE,
      oauth: {
        provider: {
          [p]: {
            clientID: 'app',
            clientSecretRef: secretRef,
            scopes: ['email'],
            emailAddresses: ['a@example.com'],
            emailDomains: ['example.com'],
          },
        },
      },
    },
  ]),
];

let emu: Emulator;
let api: EdgeClient;
let ids: Record<string, string>;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  api = createClient({
    baseUrl: emu.url,
    apiKey: emu.apiKey,
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  const tg = await api.tunnelGroupBackends.create({ labels: { app: 'web' } });
  ids = {
    IPPolicy: (await api.ipPolicies.create({})).id,
    HTTPSEdge: (await api.httpsEdges.create({})).id,
    TunnelGroupBackend: tg.id,
    WeightedBackend: (await api.weightedBackends.create({ backends: { [tg.id]: 1 } })).id,
    ca: (await api.certificateAuthorities.create({ ca_pem: await selfSignedCaPem('Parity CA') })).id,
  };
});
afterAll(async () => {
  await api?.close();
  await emu?.close();
});

/** The API's answer to the create the binding makes of a spec: undefined when accepted. */
async function apiRefusal(b: AnyBinding, spec: Json): Promise<string | undefined> {
  const ref = (kind: string) => ids[kind]!;
  const desired = b.desired(spec as never, ref);
  const modules = Object.fromEntries(
    (b.modules ?? []).flatMap((m) => {
      const body = m.desired(spec as never, ref, () => 'secret-value');
      return body ? [[m.name, body]] : [];
    }),
  );
  try {
    const created = (await b.api.create(api, { ...desired, ...modules })) as { id: string };
    await b.api.delete(api, created.id, { edgeID: ids.HTTPSEdge });
    return undefined;
  } catch (err) {
    // what admission cannot know (an id that does not exist) is not drift
    if (err instanceof ApiError && err.status === 400)
      return /does not exist/.test(err.apiMessage ?? '')
        ? undefined
        : `${err.errorCode}: ${err.apiMessage ?? err.message}`;
    throw err;
  }
}

describe('every spec admission accepts, the API accepts', { timeout: 60_000 }, () => {
  it('covers every kind', async () => {
    const kinds = new Set(SPECS({}).map(([k]) => k));
    expect([...kinds].sort()).toEqual(BINDINGS.map((b) => b.kind).sort());
  });

  it.each(BINDINGS.map((b) => [b.kind, b] as const))('%s', async (kind, b) => {
    const schema = specSchema(b);
    const drift: string[] = [];
    let tried = 0;
    for (const [k, base] of SPECS({ ...ids, key: sshPublicKey() })) {
      if (k !== kind) continue;
      const spec = schema.parse(base) as Json;
      // the base itself is valid on both sides, else every probe below proves nothing
      expect(await apiRefusal(b, spec), `${kind} base spec`).toBeUndefined();
      for (const p of probes(base)) {
        if (p.path[0] === 'metadata') continue; // the engine adds the owner marker (own limit)
        for (const v of p.values) {
          const parsed = schema.safeParse(withValue(base, p.path, v, !!p.key));
          if (!parsed.success) continue;
          tried++;
          const refusal = await apiRefusal(b, parsed.data as Json);
          if (refusal)
            drift.push(`${p.path.join('.')}${p.key ? ' (key)' : ''} = ${JSON.stringify(v)}: ${refusal}`);
        }
      }
    }
    expect(tried).toBeGreaterThan(0);
    expect(drift).toEqual([]);
  });
});

// --- every field the API takes at create can be set from a spec

const CREATE: Record<string, z.ZodType> = {
  IPPolicy: operations.ipPolicies.create.body,
  IPPolicyRule: operations.ipPolicyRules.create.body,
  IPRestriction: operations.ipRestrictions.create.body,
  TunnelGroupBackend: operations.tunnelGroupBackends.create.body,
  WeightedBackend: operations.weightedBackends.create.body,
  SSHCredential: operations.sshCredentials.create.body,
  HTTPSEdge: operations.httpsEdges.create.body,
  HTTPSEdgeRoute: operations.httpsEdgeRoutes.create.body,
  TCPEdge: operations.tcpEdges.create.body,
  TLSEdge: operations.tlsEdges.create.body,
};

/** Dotted paths of an object schema's fields, through optional/nullable/default and arrays. */
function fieldPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = (
    schema as unknown as {
      def: {
        type: string;
        innerType?: z.ZodType;
        element?: z.ZodType;
        shape?: Record<string, z.ZodType>;
        in?: z.ZodType;
      };
    }
  ).def;
  if (def.innerType) return fieldPaths(def.innerType, prefix);
  if (def.type === 'pipe' && def.in) return fieldPaths(def.in, prefix);
  if (def.type === 'array' && def.element) return fieldPaths(def.element, prefix);
  if (def.type === 'object' && def.shape)
    return Object.entries(def.shape).flatMap(([k, v]) => {
      const p = prefix ? `${prefix}.${k}` : k;
      const sub = fieldPaths(v, p);
      return sub.length ? sub : [p];
    });
  return [];
}
function valuePaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => valuePaths(v, prefix));
  if (
    value &&
    typeof value === 'object' &&
    !(prefix.endsWith('.add') || prefix === 'labels' || prefix === 'backends')
  )
    return Object.entries(value).flatMap(([k, v]) => {
      const p = prefix ? `${prefix}.${k}` : k;
      const sub = valuePaths(v, p);
      return sub.length ? sub : [p];
    });
  return prefix ? [prefix] : [];
}

describe('every field the API takes at create is reachable from a spec', () => {
  it.each(BINDINGS.map((b) => [b.kind, b] as const))('%s', (kind, b) => {
    const reached = new Set<string>(['description', 'metadata']); // the engine's common fields
    const ids = { IPPolicy: 'ipp_1', TunnelGroupBackend: 'bkdtg_1', ca: 'ca_1', key: sshPublicKey() };
    for (const [k, base] of SPECS(ids)) {
      if (k !== kind) continue;
      const spec = specSchema(b).parse(base) as Json;
      const ref = (kind: string) => `${kind}-id`;
      const body = {
        ...b.desired(spec as never, ref),
        ...Object.fromEntries(
          (b.modules ?? []).map((m) => [m.name, m.desired(spec as never, ref, () => 's')]),
        ),
      };
      for (const p of valuePaths(body)) reached.add(p);
    }
    const missing = fieldPaths(CREATE[kind]!).filter((p) => !reached.has(p));
    expect(missing).toEqual([]);
  });
});
