// A request as a handler gets it: whose key it carries (and the API version it asks for), its
// body checked against the operation's wire schema, its query parameters checked against what
// the endpoint takes. Every refusal is the public API's, in its one error body.
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { ID_PREFIX } from '../api/limits.ts';
import type { AnyOp } from '../api/operations.ts';
import type { AccountKey } from './accounts.ts';
import { refuse } from './errors.ts';
import { zodToApiError } from './validation.ts';

const SUPPORTED_VERSION = '2';

/** A redacted credential for a message: enough to recognise it, never the whole. */
const redact = (token: string) => (token.length > 8 ? `${token.slice(0, 4)}...` : '...');

/** The key a request's Authorization header carries, once it asks for a version this API speaks. */
export function authenticate(keys: readonly AccountKey[], req: FastifyRequest): AccountKey {
  const auth = req.headers.authorization;
  if (!auth) throw refuse('ERR_UNAUTHORIZED', {}, 'missing Authorization: Bearer <API key> header');
  const m = /^Bearer (.+)$/.exec(auth);
  if (!m)
    throw refuse(
      'ERR_BAD_AUTHORIZATION',
      { VAL: auth.split(' ')[0] ?? '' },
      'use Authorization: Bearer <API key>',
    );
  // an API key is printable ASCII without spaces: anything else cannot be one
  if (!/^[\x21-\x7e]+$/.test(m[1]!)) throw refuse('ERR_MALFORMED_CREDENTIAL', { TOKEN: redact(m[1]!) });
  const key = keys.find((k) => k.key === m[1]);
  if (!key) throw refuse('ERR_FORBIDDEN', { TOKEN: redact(m[1]!) });
  const version = req.headers['service-version'] || req.headers['ngrok-version'];
  if (version === undefined || version === '')
    throw refuse('ERR_MISSING_VERSION', { SUPPORTED: SUPPORTED_VERSION }, 'send Service-Version: 2');
  if (version !== SUPPORTED_VERSION)
    throw refuse('ERR_UNSUPPORTED_VERSION', { VERSION: String(version), SUPPORTED: SUPPORTED_VERSION });
  return key;
}

/** A request that carries a body (a Content-Length above 0, or a chunked one). */
export const hasBody = (req: FastifyRequest) =>
  Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

export function parseBody(operation: string, def: AnyOp, raw: unknown): Record<string, unknown> {
  if (def.kind !== 'op' || !def.body) return {};
  const input = raw === undefined ? {} : raw;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw refuse('ERR_INVALID_BODY', { CTYPE: 'application/json' }, 'the request body must be a JSON object');
  }
  const r = (def.body as z.ZodType).safeParse(input, { reportInput: true });
  if (!r.success) throw zodToApiError(r.error, { operation, schema: def.body as z.ZodType });
  return r.data as Record<string, unknown>;
}

const LIST_PARAMETERS = ['limit', 'before_id', 'filter'];
const LIMIT_MAX = 100;

/** The id prefix of what each list holds (before_id must be one of them). */
const LIST_ID_PREFIX: Record<string, string> = {
  '/ip_policies': ID_PREFIX.ipPolicy,
  '/ip_policy_rules': ID_PREFIX.ipPolicyRule,
  '/ip_restrictions': ID_PREFIX.ipRestriction,
  '/backends/tunnel_group': ID_PREFIX.tunnelGroupBackend,
  '/backends/weighted': ID_PREFIX.weightedBackend,
  '/ssh_credentials': ID_PREFIX.sshCredential,
  '/certificate_authorities': ID_PREFIX.certificateAuthority,
  '/tunnel_sessions': ID_PREFIX.tunnelSession,
  '/tunnels': ID_PREFIX.tunnel,
  '/edges/https': ID_PREFIX.httpsEdge,
  '/edges/tcp': ID_PREFIX.tcpEdge,
  '/edges/tls': ID_PREFIX.tlsEdge,
};

export function parseQuery(
  def: AnyOp,
  raw: Record<string, string | string[]>,
  url: string,
): Record<string, string> {
  // the query as sent: a malformed percent-encoding is refused, never read as something else
  const search = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  for (const part of search.split('&')) {
    try {
      decodeURIComponent(part.replaceAll('+', ' '));
    } catch {
      throw refuse('ERR_INVALID_QUERY', { ERR: `malformed percent-encoding in ${part}` });
    }
  }
  // never ignore a query parameter: one this endpoint does not know is refused
  const allowed = def.kind === 'list' ? LIST_PARAMETERS : [];
  const unknown = Object.keys(raw).filter((k) => !allowed.includes(k));
  if (unknown.length) {
    throw refuse('ERR_UNKNOWN_QUERY_PARAMETER', {
      UNKNOWN: unknown.join(', '),
      SUPPORTED: allowed.join(', ') || 'none',
    });
  }
  const repeated = Object.entries(raw).find(([, v]) => Array.isArray(v));
  if (repeated) {
    const values = repeated[1] as string[];
    throw refuse('ERR_REPEATED_QUERY_PARAMETER', {
      NAME: repeated[0],
      COUNT: values.length,
      VALUES: values.join(', '),
    });
  }
  if (def.kind !== 'list') return {};
  const q = raw as Record<string, string>;
  if (q.limit !== undefined) {
    if (!/^(0|[1-9]\d*)$/.test(q.limit))
      throw refuse('ERR_LIMIT_NOT_A_NUMBER', { MAX: LIMIT_MAX, VAL: q.limit });
    if (Number(q.limit) < 1 || Number(q.limit) > LIMIT_MAX)
      throw refuse('ERR_INVALID_LIMIT', { MAX: LIMIT_MAX, VAL: q.limit });
  }
  if (q.before_id !== undefined) {
    if (!/^[a-z]+_[A-Za-z0-9]+$/.test(q.before_id))
      throw refuse('ERR_INVALID_ID', { ID: q.before_id }, 'before_id');
    const prefix = LIST_ID_PREFIX[def.path];
    if (prefix && !q.before_id.startsWith(`${prefix}_`))
      throw refuse('ERR_ID_WRONG_PREFIX', { VAL: q.before_id, PREFIX: prefix }, 'before_id');
  }
  return q;
}
