// Module comparison: what the API returns for a module is turned back into the input
// shape (Refs to ids), secrets are removed from both sides and compared by keyed hash.
import { createHmac } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

type Obj = Record<string, unknown>;

const REF_INPUTS: Record<string, string> = {
  backend: 'backend_id',
  ip_policies: 'ip_policy_ids',
  certificate_authorities: 'certificate_authority_ids',
};

/** API output -> input shape: Refs become the id fields the input takes. */
export function outputToInput(out: Obj): Obj {
  const r: Obj = {};
  for (const [k, v] of Object.entries(out)) {
    const input = REF_INPUTS[k];
    if (input)
      r[input] = Array.isArray(v) ? v.map((x) => (x as { id: string }).id) : (v as { id: string } | null)?.id;
    else r[k] = v;
  }
  return r;
}

function walk(o: unknown, path: string[], fn: (parent: Obj, key: string) => void): void {
  if (!o || typeof o !== 'object' || path.length === 0) return;
  const [head, ...rest] = path as [string, ...string[]];
  const keys = head === '*' ? Object.keys(o as Obj) : [head];
  for (const k of keys) {
    if (rest.length === 0) {
      if (k in (o as Obj)) fn(o as Obj, k);
    } else walk((o as Obj)[k], rest, fn);
  }
}

export function withoutSecrets(body: Obj, paths: string[] = []): Obj {
  const copy = structuredClone(body);
  for (const p of paths) walk(copy, p.split('.'), (parent, k) => delete parent[k]);
  return copy;
}

function hmacOfSecrets(body: Obj, paths: string[], key: string, scope?: string): string | undefined {
  const values: string[] = [];
  for (const p of paths) walk(body, p.split('.'), (parent, k) => values.push(`${p}=${String(parent[k])}`));
  if (!values.length) return undefined;
  const text = values.sort().join('\n');
  // a namespace name holds no newline: the scope cannot run into the values
  return createHmac('sha256', key)
    .update(scope === undefined ? text : `${scope}\n${text}`)
    .digest('hex')
    .slice(0, 32);
}

/** Digests keyed by the operator's own key and the object's namespace carry this prefix. */
const DIGEST_PREFIX = 'k2:';
/** The format before: the operator's key alone, so equal secrets had equal digests in every namespace. */
const UNSCOPED_PREFIX = 'k1:';

/**
 * A keyed hash of the secret values, for status: the key lives in a Secret of the operator's
 * namespace, so someone who can read the object cannot test guesses against it; the object's
 * namespace is hashed in, so a tenant cannot compare another namespace's digests with its own
 * (its own secrets, or guesses it puts in them).
 */
export function secretDigest(
  body: Obj,
  paths: string[] = [],
  key: string,
  namespace: string,
): string | undefined {
  const h = hmacOfSecrets(body, paths, key, namespace);
  return h && `${DIGEST_PREFIX}${h}`;
}

/** The form before: keyed by the operator's key alone. */
export function unscopedSecretDigest(body: Obj, paths: string[] = [], key: string): string | undefined {
  const h = hmacOfSecrets(body, paths, key);
  return h && `${UNSCOPED_PREFIX}${h}`;
}

/** The oldest form: keyed by the object's uid (readable by anyone who can read the object). */
export function legacySecretDigest(body: Obj, paths: string[] = [], uid = ''): string | undefined {
  return hmacOfSecrets(body, paths, uid);
}

/**
 * Whether a digest an earlier version wrote is of these secrets. A match spares the module's
 * PUT; the next status write replaces the digest with the scoped one.
 */
export function earlierDigestMatches(
  was: string,
  body: Obj,
  paths: string[] = [],
  key: string,
  uid = '',
): boolean {
  if (was.startsWith(DIGEST_PREFIX)) return false;
  return (
    was ===
    (was.startsWith(UNSCOPED_PREFIX)
      ? unscopedSecretDigest(body, paths, key)
      : legacySecretDigest(body, paths, uid))
  );
}

/**
 * Every top-level field the spec sets equals what the API holds; fields the API adds
 * (defaults, SAML's output-only URLs) are ignored. Values compare exactly, so a header
 * dropped from a map is noticed.
 */
export function covers(want: Obj, have: Obj): boolean {
  return Object.entries(want).every(([k, v]) => v === undefined || isDeepStrictEqual(v, have[k]));
}
