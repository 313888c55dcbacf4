// zod issues -> the API's error body: the public number and message where the reference has one
// (src/emulator/errors.json), the field path, and a stable descriptive code in details.code.
import { isIP } from 'node:net';
import type { z } from 'zod';
import { SAML_NAMEID_FORMATS, TLS_MIN_VERSIONS, WEBHOOK_PROVIDERS } from '../api/limits.ts';
import {
  canonicalCidr,
  HEADER_NAME_MAX_BYTES,
  HEADER_VALUE_MAX_BYTES,
  OIDC_ISSUER_MAX,
} from '../api/rules.ts';
import { EDGE_MODULES, ROUTE_MODULE_NAMES } from '../api/schemas/edges.ts';
import { entryByName } from './catalogue.ts';
import { EmulatorError, type MessageValues, refuse } from './errors.ts';

const CODE_BY_ISSUE: Record<string, string> = {
  unrecognized_keys: 'ERR_UNKNOWN_FIELD',
  invalid_type: 'ERR_INVALID_TYPE',
  invalid_value: 'ERR_INVALID_VALUE',
  invalid_format: 'ERR_INVALID_FORMAT',
  too_big: 'ERR_OUT_OF_RANGE',
  too_small: 'ERR_OUT_OF_RANGE',
  invalid_union: 'ERR_INVALID_VALUE',
  invalid_key: 'ERR_INVALID_VALUE',
  custom: 'ERR_INVALID',
};

/** A map key's own issue, reported at the map's path (and the key as its input). */
const flatten = (issue: z.core.$ZodIssue): z.core.$ZodIssue =>
  issue.code === 'invalid_key' && issue.issues[0]
    ? flatten({ ...issue.issues[0], path: [...issue.path, ...issue.issues[0].path] } as z.core.$ZodIssue)
    : issue;

/** The first thing wrong, as one line (`path: message`, `at` before the path), and how many more. */
export const firstIssue = (err: z.ZodError, at: PropertyKey[] = []) => {
  const issue = err.issues[0]!;
  const more = err.issues.length > 1 ? ` (and ${err.issues.length - 1} more)` : '';
  return describeIssue({ ...issue, path: [...at, ...issue.path] } as z.core.$ZodIssue).msg + more;
};

export function describeIssue(raw: z.core.$ZodIssue): { code: string; msg: string } {
  const issue = flatten(raw);
  const path = issue.path.map(String).join('.');
  const custom = (issue as { params?: { error_code?: string } }).params?.error_code;
  if (issue.code === 'unrecognized_keys') {
    const at = path ? ` in ${path}` : '';
    return {
      code: 'ERR_UNKNOWN_FIELD',
      msg: `unknown field${issue.keys.length > 1 ? 's' : ''}${at}: ${issue.keys.join(', ')}`,
    };
  }
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) {
    return { code: 'ERR_MISSING_FIELD', msg: `${path}: is required` };
  }
  const code =
    custom ??
    (issue.code === 'invalid_format' && issue.format === 'regex'
      ? 'ERR_INVALID_FORMAT'
      : (CODE_BY_ISSUE[issue.code] ?? 'ERR_INVALID'));
  return { code, msg: path ? `${path}: ${issue.message}` : issue.message };
}

/** Where a body was sent: the operation (its name in the operations table) and its schema. */
export interface BodyContext {
  operation: string;
  schema?: z.ZodType;
}

export function zodToApiError(err: z.ZodError, ctx?: BodyContext): EmulatorError {
  const issues = err.issues.map(describeIssue);
  const first = issues[0] ?? { code: 'ERR_INVALID', msg: 'invalid request' };
  const more =
    issues.length > 1
      ? ` (and ${issues.length - 1} more: ${issues
          .slice(1)
          .map((i) => i.msg)
          .join('; ')})`
      : '';
  if (!ctx || !err.issues[0]) return new EmulatorError(400, first.code, first.msg + more);
  const e = publicRefusal(err.issues[0], ctx);
  return new EmulatorError(e.status, e.code, e.message + more, e.headers);
}

// --- one issue of an API body as the public API refuses it

type Obj = Record<string, unknown>;
const bytes = (v: unknown) => Buffer.byteLength(String(v ?? ''), 'utf8');
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** The family of resources an operation acts on, and the module its body is (module PUTs). */
function scope(operation: string): { family: string; module?: string; op: string } {
  const parts = operation.split('.');
  const op = parts.at(-1)!;
  if (parts[0] === 'httpsEdgeRouteModules') return { family: 'httpsEdgeRoutes', module: parts[1], op };
  const edge = /^(https|tcp|tls)EdgeModules$/.exec(parts[0]!);
  if (edge) return { family: `${edge[1]}Edges`, module: parts[1], op };
  return { family: parts[0]!, op };
}

/** The object schema at `path` of a body schema (through optionals, defaults, lists and maps). */
function schemaAt(root: z.ZodType | undefined, path: readonly PropertyKey[]): z.ZodType | undefined {
  let s = root;
  const unwrap = () => {
    for (let i = 0; s && i < 10; i++) {
      const d = s._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
      if (d.innerType) s = d.innerType;
      else if (d.type === 'pipe' && d.in) s = d.in;
      else return;
    }
  };
  unwrap();
  for (const seg of path) {
    if (!s) return undefined;
    const d = s._zod.def as {
      type: string;
      shape?: Record<string, z.ZodType>;
      element?: z.ZodType;
      valueType?: z.ZodType;
    };
    s = d.type === 'object' ? d.shape?.[String(seg)] : d.type === 'array' ? d.element : d.valueType;
    unwrap();
  }
  return s;
}
const keysAt = (root: z.ZodType | undefined, path: readonly PropertyKey[]) => {
  const s = schemaAt(root, path);
  const shape = (s?._zod.def as { shape?: Obj } | undefined)?.shape;
  return shape ? Object.keys(shape) : [];
};

const EDGE_FAMILY_MODULES: Record<string, readonly string[]> = {
  httpsEdges: Object.keys(EDGE_MODULES.https),
  tcpEdges: Object.keys(EDGE_MODULES.tcp),
  tlsEdges: Object.keys(EDGE_MODULES.tls),
};
const ALL_MODULES = new Set([...ROUTE_MODULE_NAMES, ...Object.values(EDGE_FAMILY_MODULES).flat()]);
const EDGE_TYPE: Record<string, string> = { httpsEdges: 'https', tcpEdges: 'tcp', tlsEdges: 'tls' };
const EDGE_FAMILIES = new Set(['httpsEdges', 'tcpEdges', 'tlsEdges', 'httpsEdgeRoutes']);
const BACKEND_FAMILIES = new Set(['tunnelGroupBackends', 'weightedBackends']);

/** The descriptive name (and message values) the public API's number for a field's size has. */
function sizeName(
  family: string,
  field: 'description' | 'metadata',
  value: unknown,
): [string, MessageValues] {
  const max = field === 'description' ? 255 : 4096;
  const got = bytes(value);
  if (family === 'ipPolicyRules' && field === 'description')
    return ['ERR_IP_POLICY_RULE_DESCRIPTION_TOO_LONG', { MAX: max, SIZE: got }];
  if (BACKEND_FAMILIES.has(family))
    return [
      field === 'description' ? 'ERR_BACKEND_DESCRIPTION_TOO_LONG' : 'ERR_BACKEND_METADATA_TOO_LONG',
      { MAX: max, VAL: got },
    ];
  if (family === 'sshCredentials')
    return [
      field === 'description' ? 'ERR_CREDENTIAL_DESCRIPTION_TOO_LONG' : 'ERR_CREDENTIAL_METADATA_TOO_LONG',
      { MAX: max, VAL: got },
    ];
  if (EDGE_FAMILIES.has(family))
    return [
      field === 'description' ? 'ERR_EDGE_DESCRIPTION_TOO_LONG' : 'ERR_EDGE_METADATA_TOO_LONG',
      { MAX: max, VAL: got },
    ];
  return field === 'description'
    ? ['ERR_DESCRIPTION_TOO_LONG', { NAME: 'description' }]
    : ['ERR_METADATA_TOO_LONG', { VAL: got, MAX: max }];
}

/** The provider an OAuth issue is about (the segment after `provider`). */
const providerOf = (path: string) => /(?:^|\.)provider\.(\w+)/.exec(path)?.[1] ?? '';

export function publicRefusal(raw: z.core.$ZodIssue, ctx: BodyContext): EmulatorError {
  const issue = flatten(raw);
  const { family, module, op } = scope(ctx.operation);
  const segs = [...(module ? [module] : []), ...issue.path.map(String)];
  const path = segs.join('.');
  const last = segs.at(-1) ?? '';
  const input = (issue as { input?: unknown }).input;
  const field = (f: string) => (isObj(input) ? input[f] : input);
  const ends = (suffix: string) => path === suffix || path.endsWith(`.${suffix}`);
  const generic = describeIssue(raw);
  // the field and what is wrong with it follow the reference's words, in parentheses
  const r = (name: string, values: MessageValues = {}, detail: string = generic.msg) =>
    refuse(name, values, name === 'ERR_UNKNOWN_FIELD' ? undefined : detail);

  const params = (issue as { params?: { error_code?: string; values?: MessageValues } }).params;
  const coded = params?.error_code;
  if (coded) {
    switch (coded) {
      case 'ERR_INVALID_CIDR':
        return r(coded, { CIDR: String(input) });
      case 'ERR_CIDR_NOT_CANONICAL': {
        const cidr = String(field('cidr'));
        return r(coded, { CIDR: cidr, SUGGESTION: canonicalCidr(cidr) ?? '' });
      }
      case 'ERR_CIDR_WITHOUT_MASK': {
        const ip = String(field('cidr'));
        return r(coded, { IP: ip, BITS: isIP(ip) === 6 ? 128 : 32 });
      }
      case 'ERR_INVALID_RULE_POLICY_ID':
        return r(coded, {}, `ip_policy_id: ${String(input)}`);
      case 'ERR_INVALID_IP_POLICY_ID':
      case 'ERR_INVALID_CA_ID':
      case 'ERR_INVALID_BACKEND_ID':
        return r(coded, { VAL: String(input) });
      case 'ERR_INVALID_OWNER_ID':
        return r(coded, { VAL: String(input), PREFIXES: 'usr_, bot_' });
      case 'ERR_INVALID_WEIGHTED_BACKEND_KEY':
        return r(coded, { ID: String(input) });
      case 'ERR_WEIGHT_OUT_OF_RANGE':
        return r(coded, { ID: last, VAL: String(input), MIN: 0, MAX: 10_000 });
      case 'ERR_ERROR_THRESHOLD_RANGE':
        return r(coded, { VAL: String(input) });
      case 'ERR_CIRCUIT_BREAKER_TRIPPED_DURATION':
      case 'ERR_CIRCUIT_BREAKER_ROLLING_WINDOW':
        return r(coded, { VAL: String(input) });
      case 'ERR_CIRCUIT_BREAKER_NUM_BUCKETS':
        // the spec allows 128: "less than 129" says so in the reference's words
        return r(coded, { VAL: String(input), MAX: 129 });
      case 'ERR_INACTIVITY_TIMEOUT_TOO_LONG':
        return r(coded, { ACTUAL: String(input) });
      case 'ERR_OIDC_ISSUER_TOO_LONG':
        return r(coded, { MAX: OIDC_ISSUER_MAX, N: bytes(input) });
      case 'ERR_OAUTH_GITHUB_TEAM':
        return input === ''
          ? r('ERR_OAUTH_EMPTY_TEAM', { PROVIDER: 'github' })
          : r(coded, { TEAM: String(input) });
      case 'ERR_OAUTH_EMPTY_EMAIL':
      case 'ERR_OAUTH_EMPTY_EMAIL_DOMAIN':
      case 'ERR_OAUTH_EMPTY_ORGANIZATION':
        return r(coded, { PROVIDER: providerOf(path) });
      case 'ERR_INVALID_ACL':
        return r(coded, { RULE: Array.isArray(input) ? '*' : String(input) });
      case 'ERR_INVALID_HEADER_NAME':
        return r(coded, { KEY: String(input) });
      // the reference quotes the start of a header that is too long
      case 'ERR_HEADER_NAME_TOO_LONG':
        return r(coded, { PREFIX: String(input).slice(0, 16), BYTES: HEADER_NAME_MAX_BYTES });
      case 'ERR_HEADER_VALUE_TOO_LONG':
        return r(coded, {
          HEADERKEY: last,
          PREFIX: String(input).slice(0, 16),
          BYTES: HEADER_VALUE_MAX_BYTES,
        });
      case 'ERR_INVALID_HEADER_VALUE':
        return r(coded, {
          VAL: JSON.stringify(String(input)),
          REASON: 'it holds a NUL, CR, LF or DEL character',
        });
      case 'ERR_OAUTH_EMAIL_INVALID':
      case 'ERR_OAUTH_EMAIL_DOMAIN_INVALID':
        return r(coded, { PROVIDER: providerOf(path), NAME: String(input) });
      case 'ERR_COOKIE_PREFIX':
        return r(coded, { PREFIX: String(input) });
      case 'ERR_SAML_METADATA_UNPARSABLE':
        return r(coded, { ERR: 'not an EntityDescriptor (or EntitiesDescriptor) XML document' });
      case 'ERR_WEBHOOK_SECRET_REQUIRED':
        return r(coded, { T: String(field('provider')) });
      case 'ERR_MIN_VERSION_WITH_UPSTREAM':
        return r(coded, { PARAMETER: 'min_version' });
      case 'ERR_OAUTH_CLIENT_SECRET_REQUIRED':
      case 'ERR_OAUTH_CLIENT_ID_REQUIRED':
      case 'ERR_OAUTH_SCOPES_NEED_CLIENT':
        return r(coded);
      case 'ERR_OAUTH_CLIENT_REQUIRED':
        return r(coded, { PROVIDER: providerOf(path) });
      case 'ERR_OAUTH_ONE_PROVIDER': {
        const given = isObj(input) ? Object.keys(input).filter((k) => input[k] !== undefined) : [];
        return given.length === 0
          ? r('ERR_OAUTH_NO_PROVIDER')
          : r('ERR_OAUTH_MANY_PROVIDERS', { PROVIDER_NAMES: given.join(', ') });
      }
      case 'ERR_LABEL_HAS_EQUALS': {
        const labels = field('labels');
        const bad = isObj(labels)
          ? Object.entries(labels)
              .flatMap(([k, v]) => [k, String(v)])
              .find((x) => x.includes('='))
          : undefined;
        return r(coded, { ID: bad ?? '' });
      }
      case 'ERR_INVALID_SSH_PUBLIC_KEY':
        return input === ''
          ? r('ERR_SSH_KEY_MISSING')
          : r(coded, {
              PUBKEY: String(input),
              ERR: 'not an OpenSSH public key line ("ssh-ed25519 AAAA... comment")',
            });
      case 'ERR_INVALID_HOSTPORT': {
        const m = /^(.+):(\d+)$/.exec(String(input));
        const port = m ? Number(m[2]) : undefined;
        return port !== undefined && (port < 1 || port > 65_535)
          ? r('ERR_HOSTPORT_PORT_RANGE', { HOSTPORT: String(input), PORT: m![2]! })
          : r(coded, { INVALID: String(input) });
      }
      case 'ERR_DESCRIPTION_TOO_LONG':
      case 'ERR_METADATA_TOO_LONG': {
        const [name, values] = sizeName(
          family,
          coded === 'ERR_DESCRIPTION_TOO_LONG' ? 'description' : 'metadata',
          input,
        );
        return r(name, values, generic.msg);
      }
    }
    // a name the catalogue has: its message (with the values the check gave); else the
    // emulator's own (no public number)
    return tryRefuse(coded, params?.values ?? {}, generic.msg);
  }

  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    if (family === 'ipPolicies' && key === 'action' && path === '') return r('ERR_IP_POLICY_ACTION');
    if (ctx.operation === 'sshCredentials.update' && key === 'owner_id') return r('ERR_SSH_KEY_OWNER_FIXED');
    if (
      ctx.operation === 'sshCredentials.create' &&
      ['owner_email', 'scim_user_id'].includes(key) &&
      field('owner_id') !== undefined
    )
      return r('ERR_OWNER_AMBIGUOUS');
    if (EDGE_TYPE[family] && op === 'create' && path === '' && ALL_MODULES.has(key as never))
      return r('ERR_MODULE_NOT_SUPPORTED', { NAME: key, TYPE: EDGE_TYPE[family]! });
    if (family === 'httpsEdges' && ends('tls_termination') && key === 'terminate_at')
      return r('ERR_HTTPS_TERMINATE_AT');
    if (ends('oauth.provider')) return r('ERR_OAUTH_PROVIDER_UNSUPPORTED', {}, `provider ${key}`);
    if (ends('saml') && key === 'idp_metadata_url' && field('idp_metadata') !== undefined)
      return r('ERR_SAML_METADATA_AND_URL');
    const at = path ? `${path}.${key}` : key;
    return r('ERR_UNKNOWN_FIELD', { NAME: at, SUPPORTED: keysAt(ctx.schema, issue.path).join(', ') });
  }

  // a field not sent at all
  const missing = input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_value');
  const empty = issue.code === 'too_small';
  const invalidValue = issue.code === 'invalid_value';
  if (family === 'ipPolicyRules' && op === 'create' && missing)
    return r('ERR_IP_POLICY_RULE_PARAM_MISSING', { PARAM: path });
  if (family === 'ipPolicyRules' && path === 'action') return r('ERR_IP_POLICY_RULE_ACTION');
  if (family === 'ipRestrictions' && path === 'type')
    return r('ERR_IP_RESTRICTION_TYPE', {
      TYPE: missing ? '' : String(input),
      SUPPORTED: 'dashboard, api, agent, endpoints',
    });
  if (family === 'ipRestrictions' && path === 'ip_policy_ids' && (missing || empty))
    return r('ERR_IP_RESTRICTION_NO_POLICY');
  if (ends('ip_restriction.ip_policy_ids') && (missing || empty))
    return r('ERR_IP_RESTRICTION_MODULE_NO_POLICY');
  if (family === 'httpsEdgeRoutes' && path === 'match' && (missing || empty))
    return r('ERR_ROUTE_MATCH_REQUIRED');
  if (family === 'httpsEdgeRoutes' && path === 'match_type') return r('ERR_ROUTE_MATCH_TYPE');
  if (ends('webhook_verification.provider')) {
    const list = WEBHOOK_PROVIDERS.join(', ');
    return missing || input === ''
      ? r('ERR_WEBHOOK_PROVIDER_MISSING', { T: list })
      : r('ERR_WEBHOOK_PROVIDER_UNSUPPORTED', { T: String(input), TYPE: list });
  }
  if (ends('oidc.issuer') && (missing || empty)) return r('ERR_OIDC_ISSUER_REQUIRED');
  if (ends('oidc.client_id') && (missing || empty)) return r('ERR_OIDC_CLIENT_ID_REQUIRED');
  if (ends('oidc.client_secret') && (missing || empty)) return r('ERR_OIDC_CLIENT_SECRET_REQUIRED');
  if (ends('saml.idp_metadata') && (missing || empty)) return r('ERR_SAML_METADATA_REQUIRED');
  if (ends('saml.nameid_format') && invalidValue)
    return r(
      'ERR_SAML_NAMEID_FORMAT',
      { FORMAT: String(input) },
      `supported: ${SAML_NAMEID_FORMATS.join(', ')}`,
    );
  if (ends('tls_termination.min_version') && invalidValue)
    return r('ERR_TLS_MIN_VERSION', { TLSVERSION: String(input), SUPPORTED: TLS_MIN_VERSIONS.join(', ') });
  if (ends('tls_termination.terminate_at') && invalidValue)
    return r('ERR_TERMINATE_AT', { VAL: String(input) });
  if (family === 'sshCredentials' && path === 'public_key' && missing) return r('ERR_SSH_KEY_MISSING');
  // no number of its own: the reference's "invalid value" for the field, and what is wrong with it
  return tryRefuse(generic.code, { NAME: path || 'body' }, generic.msg);
}

/** The catalogue's refusal where it has the name; the emulator's own error otherwise. */
function tryRefuse(name: string, values: MessageValues, detail: string): EmulatorError {
  return entryByName(name) ? refuse(name, values, detail) : new EmulatorError(400, name, detail);
}
