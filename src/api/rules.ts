// The spec's rules on single values, each stated once (RULES): the wire schemas (emulator,
// client) check a value with `test`; CRD admission with `pattern` (an OpenAPI pattern,
// which RE2 and JavaScript read alike) or, where no regular expression says it, `cel`. The
// parity tests hold the two sides to each other.
import { isIP } from 'node:net';
import { z } from 'zod';
import { ID_PREFIX, type IdKind } from './limits.ts';

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

/**
 * host:port with a DNS name (wildcards allowed on the left, labels of 1..63 characters) and a
 * port in 1..65535, as one regular expression: the wire schema and the CRD's admission use it
 * alike (RE2 and JavaScript read it the same).
 */
export const HOSTPORT_PATTERN =
  '^(\\*\\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$';
const hostport = new RegExp(HOSTPORT_PATTERN);
export const isHostport = (value: string): boolean => hostport.test(value);

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
/** Regex form used for CRD admission (the emulator additionally decodes the blob). */
export const SSH_PUBLIC_KEY_PATTERN = `^(${SSH_KEY_TYPES.map((t) => t.replaceAll('.', '\\.')).join('|')}) [A-Za-z0-9+/]+={0,3}( .*)?$`;

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
const aclRule = new RegExp(ACL_RULE_PATTERN);
export function aclProblem(acl: readonly string[]): string | undefined {
  for (const [i, rule] of acl.entries()) {
    if (!aclRule.test(rule))
      return `acl[${i}] "${rule}" is not a bind rule (bind:<domain>, bind:*.<domain>, bind:<host:port>, bind:<key>=<value>) or "*"`;
  }
  if (acl.includes('*') && acl.length > 1) return 'acl: the rule "*" must be the only rule';
  return undefined;
}

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

const patternRule = (r: Omit<Rule, 'test' | 'cel'> & { pattern: string }): Rule & { pattern: string } => {
  const re = new RegExp(r.pattern);
  return { ...r, test: (v) => re.test(v) };
};
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
    maxLength: 256,
  }),
  githubTeam: patternRule({
    must: 'be org-name/team-name',
    errorCode: 'ERR_INVALID_FORMAT',
    pattern: GITHUB_TEAM_PATTERN,
    maxLength: 512,
  }),
  url: {
    must: 'be a URL',
    errorCode: 'ERR_INVALID_FORMAT',
    test: (v: string) => anyUrl.safeParse(v).success,
    cel: 'isURL(self)',
    maxLength: 2048,
  },
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
