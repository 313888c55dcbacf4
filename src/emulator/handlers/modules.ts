// Route and edge modules: what is stored (the input with defaults) and what is returned.
import { createPublicKey } from 'node:crypto';
import { domainToUnicode } from 'node:url';
import { SAML_DEFAULT_NAMEID_FORMAT } from '../../api/limits.ts';
import { selfSignedPem } from '../../util/x509.ts';
import { type Ctx, ref } from '../context.ts';
import { EmulatorError, refuse } from '../errors.ts';
import type { Rec } from '../store.ts';
import { BACKEND_COLLS, mustExist } from './common.ts';
import type { Handler } from './crud.ts';

type M = Record<string, unknown>;

const SESSION_DEFAULTS = {
  options_passthrough: false,
  cookie_prefix: 'edge.',
  inactivity_timeout: 0,
  maximum_duration: 0,
};

/**
 * A SAML module's signing certificate for its owner, made before anything is loaded: it is the
 * one thing that waits, and a write handler that loaded, checked and waited before storing
 * would store what another request changed meanwhile (an acknowledged write lost, a uniqueness
 * check passed twice). Undefined when none is needed: no SAML in the body, or one already kept.
 */
export async function samlCertFor(body: M, ownerId: string, kept?: M): Promise<string | undefined> {
  if (!body || kept?._cert !== undefined) return undefined;
  return selfSignedPem(`${ownerId}.saml.edge`);
}

/**
 * Validates references and fills defaults, at once (nothing waits: see samlCertFor). `owner` is
 * the route or edge the module is attached to (its id names SAML URLs, and a SAML module keeps
 * its signing certificate across PUTs; `cert` is a new one's).
 */
export function storeModule(ctx: Ctx, name: string, input: M, owner: Rec, previous?: M, cert?: string): M {
  const m: M = { enabled: true, ...input };
  switch (name) {
    case 'backend':
      mustExist(ctx, BACKEND_COLLS, m.backend_id as string, () =>
        refuse('ERR_BACKEND_NOT_FOUND', { ID: m.backend_id as string }, 'backend.backend_id'),
      );
      return m;
    case 'ip_restriction':
      for (const id of m.ip_policy_ids as string[])
        mustExist(ctx, 'ipPolicies', id, () =>
          refuse('ERR_MODULE_IP_POLICY_NOT_FOUND', { ID: id }, 'ip_restriction.ip_policy_ids'),
        );
      return m;
    case 'mutual_tls':
      for (const id of m.certificate_authority_ids as string[])
        mustExist(ctx, 'certificateAuthorities', id, () =>
          refuse('ERR_MUTUAL_TLS_CA_NOT_FOUND', { ID: id }, 'mutual_tls.certificate_authority_ids'),
        );
      return m;
    case 'request_headers':
    case 'response_headers':
      checkHeaders(name, m);
      return { add: {}, remove: [], ...m };
    case 'webhook_verification':
      if (m.provider === 'sendgrid' && !isEcdsaPublicKey(m.secret as string | undefined))
        throw refuse('ERR_SENDGRID_KEY', { ERROR: 'not a base64-encoded DER (SPKI) ECDSA public key' });
      return m;
    case 'oauth':
      checkOAuthProvider(m.provider as Record<string, M>);
      return { ...SESSION_DEFAULTS, auth_check_interval: 0, ...m };
    case 'oidc':
      return { ...SESSION_DEFAULTS, ...m };
    case 'saml':
      return {
        ...SESSION_DEFAULTS,
        force_authn: false,
        allow_idp_initiated: false,
        authorized_groups: [],
        nameid_format: SAML_DEFAULT_NAMEID_FORMAT,
        ...m,
        _cert: (previous?._cert as string | undefined) ?? certOrThrow(cert, owner),
      };
    case 'tls_termination':
      return { terminate_at: 'edge', min_version: m.terminate_at === 'upstream' ? null : '1.2', ...m };
    default:
      return m;
  }
}

export function renderModule(ctx: Ctx, name: string, m: M | null | undefined, owner: Rec): M | null {
  if (!m) return null;
  const { enabled } = m;
  switch (name) {
    case 'backend':
      return { enabled, backend: ref(ctx, m.backend_id as string) };
    case 'ip_restriction':
      return { enabled, ip_policies: (m.ip_policy_ids as string[]).map((id) => ref(ctx, id)) };
    case 'mutual_tls':
      return {
        enabled,
        certificate_authorities: (m.certificate_authority_ids as string[]).map((id) => ref(ctx, id)),
      };
    case 'response_headers':
      return {
        enabled,
        add: Object.fromEntries(
          Object.entries(m.add as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
        ),
        remove: m.remove,
      };
    case 'saml': {
      const { _cert, ...rest } = m;
      const base = `${ctx.origin}/saml/${owner.id}`;
      return {
        ...rest,
        idp_metadata_url: '',
        entity_id: `${base}/metadata`,
        metadata_url: `${base}/metadata`,
        assertion_consumer_service_url: `${base}/acs`,
        single_logout_url: `${base}/slo`,
        request_signing_certificate_pem: _cert,
      };
    }
    default:
      return { ...m };
  }
}

/** Inline modules given at create: validated and stored like a PUT. */
export function inlineModules(ctx: Ctx, names: readonly string[], body: M, owner: Rec, samlCert?: string): M {
  const modules: M = {};
  for (const n of names) {
    const v = body[n];
    if (v) modules[n] = storeModule(ctx, n, v as M, owner, undefined, samlCert);
  }
  return modules;
}

const certOrThrow = (cert: string | undefined, owner: Rec) => {
  if (!cert)
    throw new Error(`emulator: a SAML module of ${owner.id} stored without its certificate made first`);
  return cert;
};

/** Each of `names` as a top-level field of the owner (null where it has none). */
export const renderModules = (ctx: Ctx, names: readonly string[], rec: Rec) =>
  Object.fromEntries(
    names.map((n) => [n, renderModule(ctx, n, (rec.modules as M | undefined)?.[n] as M, rec)]),
  );

/** PUT, GET and DELETE of one module of the records `load` finds in `coll` (an edge's, a route's). */
export function moduleHandlers(
  coll: string,
  name: string,
  load: (ctx: Ctx, p: Record<string, string>) => Rec,
  /** What the module's owner must still satisfy with the module in place. */
  allowed?: (ctx: Ctx, rec: Rec, mods: M) => void,
): Record<string, Handler> {
  const get = (ctx: Ctx, p: Record<string, string>) => {
    const rec = load(ctx, p);
    return { rec, mods: { ...((rec.modules as M | undefined) ?? {}) } };
  };
  return {
    put: async (ctx, p, body) => {
      const before = get(ctx, p);
      const cert =
        name === 'saml' ? await samlCertFor(body, before.rec.id, before.mods.saml as M) : undefined;
      // loaded again after the wait: a write meanwhile is kept
      const { rec, mods } = get(ctx, p);
      mods[name] = storeModule(ctx, name, body, rec, mods[name] as M, cert);
      allowed?.(ctx, rec, mods);
      ctx.store.put(coll, { ...rec, modules: mods });
      return { status: 200, body: renderModule(ctx, name, mods[name] as M, rec) };
    },
    get: (ctx, p) => {
      const { rec, mods } = get(ctx, p);
      if (!mods[name])
        throw new EmulatorError(404, 'ERR_MODULE_NOT_CONFIGURED', `${name} is not configured on ${rec.id}`);
      return { status: 200, body: renderModule(ctx, name, mods[name] as M, rec) };
    },
    delete: (ctx, p) => {
      const { rec, mods } = get(ctx, p);
      delete mods[name];
      ctx.store.put(coll, { ...rec, modules: mods });
      return { status: 204 };
    },
  };
}

// --- what the API refuses in a module beyond its schema (the emulator's side only: admission
// cannot state these, see the error catalogue)

function checkHeaders(name: string, m: M): void {
  const add = (m.add ?? {}) as Record<string, string>;
  const seen = new Map<string, string>();
  // a value's characters and lengths are the wire schema's (src/api/rules.ts)
  for (const k of Object.keys(add)) {
    const lower = k.toLowerCase();
    const other = seen.get(lower);
    if (other !== undefined)
      throw refuse('ERR_DUPLICATE_HEADER', { HEADER: lower, CASE_ONE: other, CASE_TWO: k }, `${name}.add`);
    seen.set(lower, k);
  }
}

/** A base64 DER (SPKI) ECDSA public key: what SendGrid signs webhooks with. */
function isEcdsaPublicKey(secret: string | undefined): boolean {
  if (!secret || !/^[A-Za-z0-9+/]+={0,2}$/.test(secret)) return false;
  try {
    return (
      createPublicKey({ key: Buffer.from(secret, 'base64'), format: 'der', type: 'spki' })
        .asymmetricKeyType === 'ec'
    );
  } catch {
    return false;
  }
}

/** A domain whose xn-- labels are valid punycode (undefined when one is not). */
function punycodeOk(domain: string): boolean {
  return domain
    .split('.')
    .filter((l) => l.toLowerCase().startsWith('xn--'))
    .every((l) => domainToUnicode(l) !== '' && !domainToUnicode(l).startsWith('xn--'));
}

/** The first value a list holds twice. */
const repeated = (l: readonly string[] | undefined) => l?.find((x, i) => l.indexOf(x) !== i);

const OAUTH_LISTS = [
  ['email_addresses', 'ERR_OAUTH_DUPLICATE_EMAIL'],
  ['email_domains', 'ERR_OAUTH_DUPLICATE_EMAIL_DOMAIN'],
  ['teams', 'ERR_OAUTH_DUPLICATE_TEAM'],
  ['organizations', 'ERR_OAUTH_DUPLICATE_ORGANIZATION'],
] as const;

function checkOAuthProvider(providers: Record<string, M>): void {
  for (const [provider, p] of Object.entries(providers)) {
    if (!p) continue;
    for (const [list, name] of OAUTH_LISTS) {
      const twice = repeated(p[list] as string[] | undefined);
      if (twice !== undefined) throw refuse(name, { PROVIDER: provider, DUPLICATE: twice });
    }
    for (const email of (p.email_addresses ?? []) as string[]) {
      if (email !== email.toLowerCase()) throw refuse('ERR_OAUTH_EMAIL_NOT_LOWERCASE', { EMAIL: email });
      const domain = email.slice(email.lastIndexOf('@') + 1);
      if (email.includes('@') && !punycodeOk(domain))
        throw refuse('ERR_OAUTH_EMAIL_PUNYCODE', { PROVIDER: provider, NAME: email });
    }
    for (const domain of (p.email_domains ?? []) as string[]) {
      if (domain !== domain.toLowerCase())
        throw refuse('ERR_OAUTH_EMAIL_DOMAIN_NOT_LOWERCASE', { DOMAIN: domain });
      if (!punycodeOk(domain))
        throw refuse('ERR_OAUTH_EMAIL_DOMAIN_PUNYCODE', { PROVIDER: provider, NAME: domain });
    }
  }
}
