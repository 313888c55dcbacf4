// The spec's rules on single values, each stated once (RULES): the wire schemas (emulator,
// client) check a value with `test`; CRD admission with `pattern` (an OpenAPI pattern,
// which RE2 and JavaScript read alike) or, where no regular expression says it, `cel`. The
// parity tests hold the two sides to each other.
import { isIP } from 'node:net';
import { z } from 'zod';
import { ID_PREFIX, type IdKind } from './limits.ts';
import { HEADER_NAME_MAX_BYTES, TEXT_RULES } from './text-rules.ts';

export {
  COOKIE_PREFIX_PATTERN,
  EMAIL_ADDRESS_PATTERN,
  EMAIL_DOMAIN_PATTERN,
  HEADER_NAME_MAX_BYTES,
  HEADER_VALUE_MAX_BYTES,
  HEADER_VALUE_PATTERN,
  SAML_METADATA_PATTERN,
} from './text-rules.ts';

export const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

export function isCidr(value: string): boolean {
  const slash = value.indexOf('/');
  const addr = slash === -1 ? value : value.slice(0, slash);
  const family = isIP(addr);
  if (family === 0) return false;
  if (slash === -1) return true;
  const bits = value.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/** The bytes of an IPv4 or IPv6 address, or undefined. */
function ipBytes(addr: string): number[] | undefined {
  const family = isIP(addr);
  if (family === 4) return addr.split('.').map(Number);
  if (family !== 6) return undefined;
  let host: string;
  try {
    // the URL parser writes IPv6 in its one canonical form (lower case, no embedded IPv4)
    host = new URL(`http://[${addr}]`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head, tail] = host.includes('::') ? host.split('::') : [host, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.flatMap((g) => {
    const n = Number.parseInt(g, 16);
    return [n >> 8, n & 255];
  });
}

function formatIp(bytes: number[]): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1);
}

/**
 * A CIDR with a mask, written with the lowest address of its range ("10.1.2.3/8" gives
 * "10.0.0.0/8"); undefined for anything else (a bare address, not a CIDR).
 */
export function canonicalCidr(value: string): string | undefined {
  const slash = value.indexOf('/');
  if (slash === -1 || !isCidr(value)) return undefined;
  const bytes = ipBytes(value.slice(0, slash));
  if (!bytes) return undefined;
  const bits = Number(value.slice(slash + 1));
  const masked = bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  return `${formatIp(masked)}/${bits}`;
}

/** True when a CIDR's host bits are zero (a bare address or a non-CIDR is not this rule's business). */
export function isCanonicalCidr(value: string): boolean {
  const canonical = canonicalCidr(value);
  if (canonical === undefined) return true;
  const slash = value.indexOf('/');
  const a = ipBytes(value.slice(0, slash))!;
  const b = ipBytes(canonical.slice(0, canonical.indexOf('/')))!;
  return a.every((x, i) => x === b[i]);
}

/**
 * host:port with a DNS name (wildcards allowed on the left, labels of 1..63 characters) and a
 * port in 1..65535, as one regular expression: the wire schema and the CRD's admission use it
 * alike (RE2 and JavaScript read it the same).
 */
export const HOSTPORT_PATTERN =
  '^(\\*\\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$';

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
/** A GitHub team as the OAuth module takes it: org-name/team-name. */
export const GITHUB_TEAM_PATTERN = '^[^/\\s]+/[^/\\s]+$';

const SSH_KEY_TYPES = [
  'ssh-rsa',
  'ssh-ed25519',
  'ssh-dss',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
];
/**
 * The base64 a key of this type begins with: its blob starts with the type's length (4 bytes)
 * and name, so the whole 3-byte groups of those are fixed characters.
 */
const blobPrefix = (type: string) => {
  const head = Buffer.concat([Buffer.from([0, 0, 0, type.length]), Buffer.from(type, 'latin1')]);
  return head.subarray(0, head.length - (head.length % 3)).toString('base64');
};
/**
 * Regex form used for CRD admission: a type, its key data (which must begin as a key of that
 * type does: a truncated or mislabelled key is refused too), an optional comment; surrounding
 * whitespace, such as the newline a YAML block leaves, is trimmed by the operator. The emulator
 * additionally decodes the blob.
 */
export const SSH_PUBLIC_KEY_PATTERN = `^\\s*(${SSH_KEY_TYPES.map((t) => `${t.replaceAll('.', '\\.')}[ \\t]+${blobPrefix(t).replaceAll('+', '\\+')}`).join('|')})[A-Za-z0-9+/]+={0,3}([ \\t].*)?\\s*$`;

/** An OpenSSH public key line whose base64 blob really starts with its declared type. */
export function isSshPublicKey(value: string): boolean {
  const parts = value.trim().split(/\s+/);
  const [type, blob] = parts;
  if (!type || !blob || !SSH_KEY_TYPES.includes(type)) return false;
  if (!/^[A-Za-z0-9+/]+={0,3}$/.test(blob)) return false;
  const raw = Buffer.from(blob, 'base64');
  if (raw.length < 4) return false;
  const len = raw.readUInt32BE(0);
  if (len !== type.length || raw.length < 4 + len + 4) return false;
  return raw.subarray(4, 4 + len).toString('latin1') === type;
}

/** Bind ACL rules (`bind:<target>`), or the single rule `*`. */
export const ACL_RULE_PATTERN = '^(\\*|bind:(\\*\\.)?[^\\s*=]+|bind:(\\*|[^\\s*=]+)=(\\*|[^\\s*=]+))$';

/** One rule of the spec on a string value, for both sides. */
export interface Rule {
  /** What a valid value is: "<field> must ..." */
  must: string;
  /** The error code of the API's 400 answer. */
  errorCode: string;
  test(value: string): boolean;
  /** Admission: an OpenAPI pattern saying exactly what `test` says. */
  pattern?: string;
  /** Admission: a CEL expression on `self`, where no pattern says it. */
  cel?: string;
  /** Admission: a length bound (CEL cost, and what any valid value fits in). */
  maxLength: number;
}

/** The longest OIDC issuer the API takes (ERR_NGROK_7087), counted in characters as admission counts. */
export const OIDC_ISSUER_MAX = 255;

type PatternSpec = Omit<Rule, 'test' | 'cel'> & { pattern: string };
const patternRule = (r: PatternSpec): Rule & { pattern: string } => {
  const re = new RegExp(r.pattern);
  return { ...r, test: (v) => re.test(v) };
};
const patternRules = <K extends string>(specs: Record<K, PatternSpec>) =>
  Object.fromEntries(Object.entries<PatternSpec>(specs).map(([k, r]) => [k, patternRule(r)])) as Record<
    K,
    Rule & { pattern: string }
  >;
const anyUrl = z.url();

export const RULES = {
  cidr: {
    must: 'be an IPv4 or IPv6 address or range in CIDR notation',
    errorCode: 'ERR_INVALID_CIDR',
    test: isCidr,
    cel: 'isIP(self) || isCIDR(self)',
    maxLength: 49,
  },
  hostport: patternRule({
    must: 'be host:port with a port in 1..65535',
    errorCode: 'ERR_INVALID_HOSTPORT',
    pattern: HOSTPORT_PATTERN,
    maxLength: 260,
  }),
  headerName: patternRule({
    must: 'be an HTTP header name',
    errorCode: 'ERR_INVALID_HEADER_NAME',
    pattern: HEADER_NAME_PATTERN,
    maxLength: HEADER_NAME_MAX_BYTES,
  }),
  ...patternRules(TEXT_RULES),
  githubTeam: patternRule({
    must: 'be org-name/team-name',
    errorCode: 'ERR_OAUTH_GITHUB_TEAM',
    pattern: GITHUB_TEAM_PATTERN,
    maxLength: 512,
  }),
  url: {
    must: 'be a URL',
    errorCode: 'ERR_INVALID_FORMAT',
    test: (v: string) => anyUrl.safeParse(v).success,
    // isURL alone takes a path (/realms/x), as Go's ParseRequestURI does: the API wants a URL
    cel: "isURL(self) && url(self).getScheme() != '' && url(self).getHost() != ''",
    // the one URL of the spec is the OIDC issuer, which the API holds to 255 (ERR_NGROK_7087)
    maxLength: OIDC_ISSUER_MAX,
  },
  aclRule: patternRule({
    must: 'be a bind rule (bind:<domain>, bind:*.<domain>, bind:<host:port>, bind:<key>=<value>) or "*"',
    errorCode: 'ERR_INVALID_ACL',
    pattern: ACL_RULE_PATTERN,
    maxLength: 512,
  }),
  sshPublicKey: {
    must: 'be an SSH public key in OpenSSH form ("ssh-ed25519 AAAA... comment")',
    errorCode: 'ERR_INVALID_SSH_PUBLIC_KEY',
    test: isSshPublicKey,
    // the pattern checks the form; the API also decodes the key, which admission cannot
    pattern: SSH_PUBLIC_KEY_PATTERN,
    maxLength: 16_384,
  },
} satisfies Record<string, Rule>;

/** An id of one of these kinds (their prefixes from the spec's conventions). */
export const idRule = (...kinds: IdKind[]): Rule => {
  const prefixes = kinds.map((k) => ID_PREFIX[k]);
  return patternRule({
    must:
      prefixes.length === 1
        ? `be an id with the prefix ${prefixes[0]}_`
        : `be an id with one of the prefixes ${prefixes.map((p) => `${p}_`).join(', ')}`,
    errorCode: 'ERR_INVALID_ID',
    pattern: `^(${prefixes.join('|')})_[A-Za-z0-9]+$`,
    maxLength: 64,
  });
};

/** A rule on a list as a whole, for both sides (the items have their own). */
export interface ListRule {
  must: string;
  errorCode: string;
  test(list: readonly unknown[]): boolean;
  cel: string;
}
export const LIST_RULES = {
  /** `*` allows everything: it stands alone. */
  loneStar: {
    must: 'hold the rule "*" only on its own',
    errorCode: 'ERR_INVALID_ACL',
    test: (l) => !l.includes('*') || l.length === 1,
    cel: "!self.exists(r, r == '*') || size(self) == 1",
  },
} satisfies Record<string, ListRule>;

// --- rules across the fields of one object

const present = (v: unknown) =>
  v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0);
const celList = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(', ')}]`;

/**
 * One of the spec's rules across the fields of one object, for both sides: the wire schema
 * checks `test` reading fields by their wire names; CRD admission gets `cel`, written with
 * the CRD's field names (camelCase, a secret's `...Ref`), and the CRD's zod side runs `test`
 * on those names too.
 */
export interface CrossRule {
  /** The wire field the error points at. */
  field: string;
  /** What is wrong, after the field's name ("<field> <must>"), naming fields as `name` does. */
  must(name: (field: string) => string): string;
  errorCode: string;
  test(get: (field: string) => unknown): boolean;
  cel(name: (field: string) => string): string;
  /** The API's wording where it names the value at fault; `must` otherwise. */
  wireMessage?(get: (field: string) => unknown): string;
}

export const CROSS = {
  /** `field` must be set unless `by` is one of `values`. */
  requiredUnless: (field: string, by: string, values: readonly string[], errorCode: string): CrossRule => ({
    field,
    must: (n) => `is required unless ${n(by)} is ${values.join(' or ')}`,
    errorCode,
    test: (get) => present(get(field)) || values.includes(get(by) as string),
    cel: (n) => `has(self.${n(field)}) || self.${n(by)} in ${celList(values)}`,
    wireMessage: (get) => `is required for ${by} ${String(get(by))}`,
  }),
  /** `field` must be set when `other` is. */
  requiredWith: (field: string, other: string, errorCode: string): CrossRule => ({
    field,
    must: (n) => `is required when ${n(other)} is given`,
    errorCode,
    test: (get) => !present(get(other)) || present(get(field)),
    cel: (n) => `!has(self.${n(other)}) || has(self.${n(field)})`,
  }),
  /** A non-empty `field` needs every one of `others`. */
  onlyWith: (field: string, others: string[], errorCode: string): CrossRule => ({
    field,
    must: (n) => `may be set only when ${others.map(n).join(' and ')} are given`,
    errorCode,
    test: (get) => !present(get(field)) || others.every((o) => present(get(o))),
    cel: (n) =>
      `!has(self.${n(field)}) || size(self.${n(field)}) == 0 || (${others.map((o) => `has(self.${n(o)})`).join(' && ')})`,
  }),
  /** Every one of `fields` must be set (reported at the first). */
  requiredAll: (fields: string[], why: string, errorCode: string): CrossRule => ({
    field: fields[0]!,
    must: (n) => `and ${fields.slice(1).map(n).join(', ')} are required ${why}`,
    errorCode,
    test: (get) => fields.every((f) => present(get(f))),
    cel: (n) => fields.map((f) => `has(self.${n(f)})`).join(' && '),
  }),
  /** `field` must be unset when `by` is `value`. */
  unsetWhen: (field: string, by: string, value: string, errorCode: string): CrossRule => ({
    field,
    must: (n) => `must be unset when ${n(by)} is ${value}`,
    errorCode,
    test: (get) => get(by) !== value || get(field) == null,
    cel: (n) => `!(has(self.${n(by)}) && self.${n(by)} == '${value}' && has(self.${n(field)}))`,
  }),
  /** Exactly one of `fields` is set (reported at the object itself: field ''). */
  exactlyOne: (fields: readonly string[], errorCode: string): CrossRule => ({
    field: '',
    must: (n) => `must hold exactly one of ${fields.map(n).join(', ')}`,
    errorCode,
    test: (get) => fields.filter((f) => get(f) !== undefined).length === 1,
    cel: (n) => `[${fields.map((f) => `has(self.${n(f)})`).join(', ')}].filter(x, x).size() == 1`,
    wireMessage: (get) =>
      `must hold exactly one of ${fields.join(', ')}, got ${fields.filter((f) => get(f) !== undefined).length}`,
  }),
} as const;

// --- rules the API holds one object to, stated for both sides (CRD names via `n`); a route's
// login modules have theirs in route-rules.ts

const celOnlyWhenSet = (f: string, test: string) => `!has(self.${f}) || size(self.${f}) == 0 || (${test})`;

export const OBJECT_RULES = {
  /** An IP policy rule's CIDR has a mask: one address is a range of one (ERR_NGROK_1413). */
  cidrMask: {
    field: 'cidr',
    must: () => 'must have a mask: a single address is written as /32 (IPv4) or /128 (IPv6)',
    errorCode: 'ERR_CIDR_WITHOUT_MASK',
    test: (get) => {
      const v = get('cidr');
      return typeof v !== 'string' || isIP(v) === 0;
    },
    cel: (n) => celOnlyWhenSet(n('cidr'), `self.${n('cidr')}.contains('/')`),
  },
  /** An IP policy rule's CIDR is written with the lowest address of its range (ERR_NGROK_1409). */
  cidrCanonical: {
    field: 'cidr',
    must: () =>
      'must be written with the lowest address of its range (its host bits zero: 10.0.0.0/8, not 10.1.2.3/8)',
    errorCode: 'ERR_CIDR_NOT_CANONICAL',
    test: (get) => {
      const v = get('cidr');
      return typeof v !== 'string' || isCanonicalCidr(v);
    },
    cel: (n) => {
      const f = `self.${n('cidr')}`;
      return celOnlyWhenSet(n('cidr'), `!isCIDR(${f}) || cidr(${f}) == cidr(${f}).masked()`);
    },
  },
  /** Tunnel group labels: no '=' in a key or a value (ERR_NGROK_6531). */
  labelsWithoutEquals: {
    field: 'labels',
    must: () => "must not hold '=' in a key or a value",
    errorCode: 'ERR_LABEL_HAS_EQUALS',
    test: (get) => {
      const l = get('labels');
      return (
        !l ||
        typeof l !== 'object' ||
        Object.entries(l as Record<string, unknown>).every(
          ([k, v]) => !k.includes('=') && !String(v).includes('='),
        )
      );
    },
    cel: (n) => {
      const f = `self.${n('labels')}`;
      return celOnlyWhenSet(n('labels'), `${f}.all(k, !k.contains('=') && !${f}[k].contains('='))`);
    },
  },
} satisfies Record<string, CrossRule>;
