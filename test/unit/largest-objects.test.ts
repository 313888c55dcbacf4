// What admission accepts, the API accepts, at its largest too: the API bounds the size of a
// request (the emulator's body limit, 413 above it), so the CRDs bound every string, list and
// map, and this file proves those bounds hold. For each kind it builds the LARGEST object the
// CRD's openAPIV3Schema admits (every optional field present, every string at its maxLength in
// the characters that cost the most bytes in JSON, every list at maxItems, every map at
// maxProperties; one choice per exclusive group), checks the binding's zod spec schema takes
// it, turns it into the create body the engine sends (modules inline, references as ids of
// objects that exist, the engine's description and metadata at their largest) and sends it to
// the in-process emulator, then PUTs each module body on its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { ID_PREFIX, METADATA_MAX_BYTES } from '../../src/api/limits.ts';
import {
  ACL_RULE_PATTERN,
  COOKIE_PREFIX_PATTERN,
  EMAIL_ADDRESS_PATTERN,
  EMAIL_DOMAIN_PATTERN,
  GITHUB_TEAM_PATTERN,
  HEADER_NAME_PATTERN,
  HOSTPORT_PATTERN,
  RULES,
  SAML_METADATA_PATTERN,
  SSH_PUBLIC_KEY_PATTERN,
} from '../../src/api/rules.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { crdFor, specSchema } from '../../src/operator/kinds/crd.ts';
import { USER_METADATA_MAX_BYTES } from '../../src/operator/kinds/crd-schema.ts';
import { BODY_BUDGET } from '../../src/operator/kinds/derive.ts';
import { HTTPSEdgeRoute } from '../../src/operator/kinds/https-edge-route.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { AnyBinding } from '../../src/operator/runtime/bindings/binding.ts';
import { encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { selfSignedCaPem } from '../../src/util/x509.ts';
import { sshPublicKey } from '../integration/harness.ts';

type Json = Record<string, unknown>;
interface Node {
  type?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  maxProperties?: number;
  maximum?: number;
  'x-kubernetes-validations'?: { rule: string }[];
}

// --- the costliest valid value of each kind of string, `n` characters long, distinct per seed

/**
 * C0 control characters that JSON writes as \u00XX: 6 bytes each, the most any character costs
 * in a JSON body (no other character takes more than 4). Not whitespace to JavaScript or RE2,
 * so the patterns that exclude whitespace (teams, ACL rules) take them too.
 */
const COSTLY = [...Array(32).keys()]
  .filter((c) => (c >= 1 && c <= 7) || c >= 14)
  .map((c) => String.fromCharCode(c));
/** `seed` in base `digits.length`, left-padded with the zero digit to `n` characters. */
const fixed = (digits: string | string[], n: number, seed: number) => {
  const d = [...digits];
  let s = '';
  let x = seed;
  do {
    s = d[x % d.length] + s;
    x = Math.floor(x / d.length);
  } while (x > 0);
  if (s.length > n) throw new Error(`no ${n}-character value for seed ${seed}`);
  return d[0]!.repeat(n - s.length) + s;
};
const free = (n: number, seed: number) => fixed(COSTLY, n, seed);
const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DNS = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A DNS name of `n` characters: labels of 63 at most. */
function dnsName(n: number, seed: number): string {
  const labels: string[] = [];
  for (let left = n; left > 0; ) {
    const len = left <= 63 ? left : Math.min(63, left - 2);
    labels.push(fixed(DNS, len, labels.length === 0 ? seed : 0));
    left -= left <= 63 ? len : len + 1;
  }
  return labels.join('.');
}
/** host:port of `n` characters: the largest port. */
const hostport = (n: number, seed: number) => `${dnsName(n - 6, seed)}:65535`;
/** An e-mail domain (two labels at least) of `n` characters. */
const domain = (n: number, seed: number) => `${dnsName(n - 4, seed)}.com`;

const KEY = sshPublicKey('').trim();
/** A pattern as the CRD writes it (zod escapes `/`). */
const source = (pattern: string) => new RegExp(pattern).source;
const GENERATORS: Record<string, (n: number, seed: number) => string> = {
  // lower-case: response header names are sent lower-cased, and must stay distinct
  [source(HEADER_NAME_PATTERN)]: (n, seed) => fixed(DNS, n, seed),
  [source(HOSTPORT_PATTERN)]: hostport,
  [source(GITHUB_TEAM_PATTERN)]: (n, seed) =>
    `${free(Math.floor((n - 1) / 2), seed)}/${free(Math.ceil((n - 1) / 2), 0)}`,
  [source(ACL_RULE_PATTERN)]: (n, seed) => `bind:${free(n - 5, seed)}`,
  // a real key (the API decodes it), the rest a comment
  [source(SSH_PUBLIC_KEY_PATTERN)]: (n, seed) => `${KEY} ${free(n - KEY.length - 1, seed)}`,
  // lower-case: the API refuses an address with capitals (ERR_NGROK_7067)
  [source(EMAIL_ADDRESS_PATTERN)]: (n, seed) => `${fixed(DNS, n - 12, seed)}@example.com`,
  [source(EMAIL_DOMAIN_PATTERN)]: domain,
  [source(COOKIE_PREFIX_PATTERN)]: (n, seed) => fixed(ALNUM, n, seed),
  // the pattern sees the root element and the end: free text between
  [source(SAML_METADATA_PATTERN)]: (n, seed) => `<EntityDescriptor>${free(n - 37, seed)}</EntityDescriptor>`,
};
/** An id pattern (`^(ipp)_[A-Za-z0-9]+$`): the first prefix, padded to `n`. */
const idGenerator = (pattern: string) => {
  const m = /^\^\(([a-z]+)(?:\|[a-z]+)*\)_\[A-Za-z0-9\]\+\$$/.exec(pattern);
  return m ? (n: number, seed: number) => `${m[1]}_${fixed(ALNUM, n - m[1]!.length - 1, seed)}` : undefined;
};
// Kubernetes' isURL (Go's url.Parse) takes no control characters: 3-byte characters instead
const url = (n: number) => `https://example.com/${'€'.repeat(n - 20)}`;
const CIDR = 'ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128';
const URL_RULE = RULES.url.cel;

// --- the CEL rules the generator knows, and what each asks of it

const rulesOf = (n: Node) => (n['x-kubernetes-validations'] ?? []).map((r) => r.rule);
/** Rules that every field present (and no `*` ACL rule) satisfies; the zod schema checks all. */
const HOLD_WHEN_FULL = [
  /^has\(self\.\w+\) \|\| self\.\w+ in \[.*\]$/, // required unless
  /^!has\(self\.\w+\) \|\| has\(self\.\w+\)$/, // required with
  /^has\(self\.\w+\)( && has\(self\.\w+\))+$/, // required all
  /^!has\(self\.\w+\) \|\| size\(self\.\w+\) == 0 \|\| \(.*\)$/, // only with
  /^\(has\(self\.\w+\) \? size\(self\.\w+\) : 0\) \+ .* >= 1$/, // at least one reference
  /^!self\.exists\(r, r == '\*'\) \|\| size\(self\) == 1$/, // a lone `*`
  /^bytes\(self\)\.size\(\) <= \d+$/, // 1-byte characters: bytes == characters
];
const PAIR = /^has\(self\.(\w+)\) != has\(self\.(\w+)\)$/;
const ONE_OF = /^\[(has\(self\.\w+\)(, )?)+\]\.filter\(x, x\)\.size\(\) == 1$/;
const UNSET_WHEN = /^!\(has\(self\.(\w+)\) && self\.\1 == '(\w+)' && has\(self\.(\w+)\)\)$/;
const KEY_PATTERN = /^self\.all\(k, k\.matches\('(.*)'\)\)$/;
const KEY_SIZE = /^self\.all\(k, size\(k\) <= (\d+)\)$/;
/** Header values: no NUL, CR, LF or DEL, which the costly characters are not. */
const VALUE_PATTERN = /^self\.all\(k, self\[k\]\.matches\('\^\[\^\\\\x00\\\\r\\\\n\\\\x7f\]\*\$'\)\)$/;
/** One login module enabled at most: the largest object's are all disabled (false is longer). */
const ONE_ENABLED =
  /^\[(has\(self\.(\w+)\) && \(!has\(self\.\2\.enabled\) \|\| self\.\2\.enabled\)(, )?)+\]\.filter\(x, x\)\.size\(\) <= 1$/;
/** OAuth on the route '/' only: held, as the largest object's login modules are disabled. */
const ENABLED_ONLY_AT_ROOT =
  /^!\(has\(self\.(\w+)\) && \(!has\(self\.\1\.enabled\) \|\| self\.\1\.enabled\)\) \|\| self\.\w+ == '\/'$/;
/** Lower-case items (OAuth e-mail addresses and domains): the generators write lower case. */
const LOWER_CASE_ITEMS = /^self\.all\(v, v == v\.lowerAscii\(\)\)$/;
/** Items unique: the generator's items differ by their seed (checked). */
const UNIQUE_ITEMS = /^self\.all\(v, self\.exists_one\(w, w == v\)\)$/;
/** Header names unique whatever their case: the generator's keys differ in lower case (checked). */
const KEYS_UNIQUE_IGNORING_CASE =
  /^self\.all\(k, self\.filter\(j, j\.lowerAscii\(\) == k\.lowerAscii\(\)\)\.size\(\) == 1\)$/;
/** The characters of a map's values together (header values): the generator fills it exactly. */
const VALUES_TOTAL = /^self\.map\(k, size\(self\[k\]\)\)\.sum\(\) <= (\d+)$/;
/** A module refused while another's setting holds: held, as the largest object's modules are disabled (checked). */
const NOT_WHILE_ENABLED = /^!\(has\(self\.(\w+)\) && self\.\1\.enabled && /;
const known = (rule: string) =>
  rule.includes('oldSelf') || // transition rules: no old object at create
  [
    ...HOLD_WHEN_FULL,
    PAIR,
    ONE_OF,
    UNSET_WHEN,
    KEY_PATTERN,
    KEY_SIZE,
    VALUE_PATTERN,
    ONE_ENABLED,
    ENABLED_ONLY_AT_ROOT,
    LOWER_CASE_ITEMS,
    UNIQUE_ITEMS,
    KEYS_UNIQUE_IGNORING_CASE,
    NOT_WHILE_ENABLED,
    VALUES_TOTAL,
  ].some((re) => re.test(rule)) ||
  ['isIP(self) || isCIDR(self)', URL_RULE].includes(rule);

/** The largest value `node` admits; throws on what admission leaves unbounded. */
function largest(node: Node, path: string, seed = 0): unknown {
  for (const rule of rulesOf(node))
    if (!known(rule)) throw new Error(`${path}: no generator knows the rule ${JSON.stringify(rule)}`);
  if (node.enum) return [...node.enum].sort((a, b) => String(b).length - String(a).length)[0];
  switch (node.type) {
    case 'boolean':
      return false; // one byte more than true
    case 'integer':
    case 'number':
      if (node.maximum === undefined) throw new Error(`${path}: a number without maximum`);
      return node.maximum;
    case 'string':
      return largestString(node, path, seed);
    case 'array': {
      if (node.maxItems === undefined) throw new Error(`${path}: a list without maxItems`);
      const items = [...Array(node.maxItems).keys()].map((i) => largest(node.items!, `${path}[${i}]`, i));
      if (
        rulesOf(node).some((r) => UNIQUE_ITEMS.test(r)) &&
        new Set(items.map((x) => JSON.stringify(x))).size < items.length
      )
        throw new Error(`${path}: the generated items repeat`);
      return items;
    }
    case 'object':
      return node.additionalProperties ? largestMap(node, path) : largestObject(node, path, seed);
  }
  throw new Error(`${path}: no generator for type ${node.type}`);
}

function largestString(node: Node, path: string, seed: number): string {
  const n = node.maxLength;
  if (n === undefined) throw new Error(`${path}: a string without maxLength`);
  const rules = rulesOf(node);
  if (rules.includes(URL_RULE)) return url(n);
  if (rules.includes('isIP(self) || isCIDR(self)')) return CIDR.slice(0, n);
  if (!node.pattern) return free(n, seed);
  const gen = GENERATORS[node.pattern] ?? idGenerator(node.pattern);
  if (!gen) throw new Error(`${path}: no generator for the pattern ${node.pattern}`);
  return gen(n, seed);
}

function largestMap(node: Node, path: string): Json {
  const rules = rulesOf(node);
  const size = rules.map((r) => KEY_SIZE.exec(r)).find(Boolean);
  if (node.maxProperties === undefined) throw new Error(`${path}: a map without maxProperties`);
  if (!size) throw new Error(`${path}: a map whose keys have no length bound`);
  const keyPattern = rules.map((r) =>
    KEY_PATTERN.exec(r)?.[1]?.replaceAll("\\'", "'").replaceAll('\\\\', '\\'),
  );
  const pattern = keyPattern.find(Boolean);
  const key = pattern ? GENERATORS[source(pattern)] : free;
  if (!key) throw new Error(`${path}: no generator for keys matching ${pattern}`);
  // values as long as they may be until their total is spent: the same characters in all,
  // however they are spread
  let left = Number(rules.map((r) => VALUES_TOTAL.exec(r)?.[1]).find(Boolean) ?? Infinity);
  const value = (i: number) => {
    const v = node.additionalProperties!;
    const n = Math.min(v.maxLength ?? Infinity, left);
    left -= Number.isFinite(n) ? n : 0;
    return n === 0
      ? ''
      : largest(n === v.maxLength || !Number.isFinite(n) ? v : { ...v, maxLength: n }, `${path}[${i}]`, i);
  };
  const out = Object.fromEntries(
    [...Array(node.maxProperties).keys()].map((i) => [key(Number(size[1]), i), value(i)]),
  );
  const keys = Object.keys(out);
  if (
    rules.some((r) => KEYS_UNIQUE_IGNORING_CASE.test(r)) &&
    new Set(keys.map((k) => k.toLowerCase())).size < keys.length
  )
    throw new Error(`${path}: the generated keys repeat in lower case`);
  return out;
}

function largestObject(node: Node, path: string, seed: number): Json {
  const out: Json = Object.fromEntries(
    Object.entries(node.properties ?? {}).map(([k, v]) => [k, largest(v, `${path}.${k}`, seed)]),
  );
  for (const rule of rulesOf(node)) {
    const module = NOT_WHILE_ENABLED.exec(rule)?.[1];
    if (module && (out[module] as Json | undefined)?.enabled !== false)
      throw new Error(`${path}.${module}: enabled, where a rule holds only for a disabled one`);
    const pair = PAIR.exec(rule);
    // exactly one of a reference or an id: the id (64 characters; a reference resolves to one)
    if (pair) delete out[pair[1]!.endsWith('Ref') ? pair[1]! : pair[2]!];
    // exactly one provider: the first (GitHub, which has the most fields)
    if (ONE_OF.test(rule))
      for (const k of [...rule.matchAll(/has\(self\.(\w+)\)/g)].slice(1).map((m) => m[1]!)) delete out[k];
    // a field unset when another has a value: that other takes its next-longest value
    const unset = UNSET_WHEN.exec(rule);
    if (unset && out[unset[1]!] === unset[2]) {
      const values = node.properties![unset[1]!]!.enum!.filter((v) => v !== unset[2]);
      out[unset[1]!] = values.sort((a, b) => String(b).length - String(a).length)[0];
    }
  }
  return out;
}

// --- the emulator, and objects for every id a body names

const COLL: Record<string, string> = {
  [ID_PREFIX.ipPolicy]: 'ipPolicies',
  [ID_PREFIX.tunnelGroupBackend]: 'tunnelGroupBackends',
  [ID_PREFIX.weightedBackend]: 'weightedBackends',
  [ID_PREFIX.certificateAuthority]: 'certificateAuthorities',
  [ID_PREFIX.httpsEdge]: 'httpsEdges',
};
const KIND_PREFIX: Record<string, string> = {
  IPPolicy: ID_PREFIX.ipPolicy,
  TunnelGroupBackend: ID_PREFIX.tunnelGroupBackend,
  WeightedBackend: ID_PREFIX.weightedBackend,
  HTTPSEdge: ID_PREFIX.httpsEdge,
};
/** Secret values are outside admission (any size a Secret holds): a typical one. */
const SECRET = 's'.repeat(64);

let emu: Emulator;
let api: EdgeClient;
let limit: number;
const templates = new Map<string, Json>();
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  limit = emu.app.initialConfig.bodyLimit!;
  api = createClient({
    baseUrl: emu.url,
    apiKey: emu.apiKey,
    rateLimitPerMinute: Infinity,
    retry: { maxAttempts: 1 },
  });
  const tg = await api.tunnelGroupBackends.create({ labels: {} });
  const made: Record<string, string> = {
    ipPolicies: (await api.ipPolicies.create({})).id,
    tunnelGroupBackends: tg.id,
    weightedBackends: (await api.weightedBackends.create({ backends: { [tg.id]: 1 } })).id,
    certificateAuthorities: (await api.certificateAuthorities.create({ ca_pem: await selfSignedCaPem('CA') }))
      .id,
    httpsEdges: (await api.httpsEdges.create({})).id,
  };
  for (const [coll, id] of Object.entries(made)) templates.set(coll, emu.store.get(coll, id)!);
});
afterAll(async () => {
  await api?.close();
  await emu?.close();
});

/** Every id in a body (values and keys) exists in the emulator: copies of real objects. */
function provide(value: unknown): void {
  if (typeof value === 'string') {
    const m = /^([a-z]+)_[A-Za-z0-9]+$/.exec(value);
    const coll = m && COLL[m[1]!];
    if (coll && !emu.store.get(coll, value)) emu.store.put(coll, { ...templates.get(coll)!, id: value });
  } else if (Array.isArray(value)) value.forEach(provide);
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      provide(k);
      provide(v);
    }
}

/** The engine's metadata at its largest: the owner marker and the costliest user metadata that fit. */
function largestMetadata(kind: string): string {
  const owner = {
    cluster: 'c'.repeat(63),
    uid: '00000000-0000-0000-0000-000000000000',
    object: `${kind}/${'n'.repeat(63)}/${'o'.repeat(253)}`,
  };
  // a quote is 2 bytes in the marker's JSON and 4 in the body's: the costliest character
  let n = USER_METADATA_MAX_BYTES;
  while (Buffer.byteLength(encodeMetadata(owner, '"'.repeat(n))) > METADATA_MAX_BYTES) n--;
  return encodeMetadata(owner, '"'.repeat(n));
}

const bytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));

describe('the largest object admission accepts, the API accepts', () => {
  it('leaves room below the API limit for Secret values (which admission cannot bound)', () => {
    expect(BODY_BUDGET).toBeLessThan(limit);
  });

  it('refuses the route that once passed admission and not the API: 100 headers of 4,096 bytes', async () => {
    const add = Object.fromEntries([...Array(100).keys()].map((i) => [`x-header-${i}`, 'v'.repeat(4096)]));
    const spec = { edgeID: 'edghts_1', matchType: 'path_prefix', match: '/', requestHeaders: { add } };
    expect(specSchema(HTTPSEdgeRoute).safeParse(spec).success).toBe(false);
    const one = { ...spec, requestHeaders: { add: { 'x-header-0': 'v' } } };
    expect(specSchema(HTTPSEdgeRoute).safeParse(one).success).toBe(true);
    await expect(
      api.httpsEdgeRoutes.create(templates.get('httpsEdges')!.id as string, {
        match_type: 'path_prefix',
        match: '/',
        request_headers: { add },
      }),
    ).rejects.toMatchObject({ status: 413 });
  });

  it.each(BINDINGS.map((b) => [b.kind, b] as const))('%s', async (kind, b: AnyBinding) => {
    const crd = crdFor(b) as {
      spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Node } } } }[] };
    };
    const spec = largest(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec, 'spec') as Json;

    // the zod spec schema (admission's checks, CEL included) takes it: the test is not vacuous
    const parsed = specSchema(b).safeParse(spec);
    expect(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(
      [],
    );
    const s = parsed.data as Json;

    const seeds = new Map<string, number>();
    const ref = (k: string, name: string) => {
      const key = `${k}/${name}`;
      if (!seeds.has(key)) seeds.set(key, seeds.size);
      const prefix = KIND_PREFIX[k]!;
      return `${prefix}_${fixed(ALNUM, 64 - prefix.length - 1, 1_000_000 + seeds.get(key)!)}`;
    };
    const desired = b.desired(s as never, ref);
    const modules = Object.fromEntries(
      (b.modules ?? []).flatMap((m) => {
        const body = m.desired(s as never, ref, () => SECRET);
        return body ? [[m.name, body]] : [];
      }),
    );
    expect(Object.keys(modules).sort()).toEqual((b.modules ?? []).map((m) => m.name).sort());
    const body = {
      ...desired,
      description: s.description as string,
      metadata: largestMetadata(kind),
      ...modules,
    };
    provide(body);

    const size = bytes(body);
    expect.soft(size, `${kind} create body of ${size} bytes`).toBeLessThanOrEqual(BODY_BUDGET);
    const created = (await b.api.create(api, body as never)) as { id: string };
    expect(created.id).toBeTruthy();
    for (const m of b.modules ?? []) {
      expect(bytes(modules[m.name])).toBeLessThan(size);
      await m.put(api, created.id, modules[m.name] as Json, desired);
    }
  });
});
