// Pure predicates for the spec's rules. Used by the zod wire schemas (emulator, client)
// and mirrored as CEL by the CRD generator; the table of spec statements in the tests
// exercises both through these.
import { isIP } from 'node:net';

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
