// Route and edge modules: what is stored (the input with defaults) and what is returned.
import { SAML_DEFAULT_NAMEID_FORMAT } from '../api/limits.ts';
import { selfSignedPem } from '../util/x509.ts';
import { type Ctx, ref } from './context.ts';
import { badRequest } from './errors.ts';
import type { Rec } from './store.ts';

type M = Record<string, unknown>;
export const BACKEND_COLLS = ['tunnelGroupBackends', 'weightedBackends', 'httpResponseBackends'];
export const findBackend = (ctx: Ctx, id: string) =>
  BACKEND_COLLS.map((c) => ctx.store.get(c, id)).find(Boolean);

export function mustExist(
  ctx: Ctx,
  coll: string | string[],
  id: string,
  field: string,
  what: string,
  code = 'ERR_REFERENCE_NOT_FOUND',
): void {
  const colls = Array.isArray(coll) ? coll : [coll];
  if (!colls.some((c) => ctx.store.get(c, id)))
    throw badRequest(code, `${field}: ${what} ${id} does not exist`);
}

const SESSION_DEFAULTS = {
  options_passthrough: false,
  cookie_prefix: 'edge.',
  inactivity_timeout: 0,
  maximum_duration: 0,
};

/**
 * Validates references and fills defaults. `owner` is the route or edge the module is
 * attached to (its id names SAML URLs and keeps its signing certificate across PUTs).
 */
export async function storeModule(ctx: Ctx, name: string, input: M, owner: Rec, previous?: M): Promise<M> {
  const m: M = { enabled: true, ...input };
  switch (name) {
    case 'backend':
      if (!findBackend(ctx, m.backend_id as string)) {
        throw badRequest(
          'ERR_BACKEND_NOT_FOUND',
          `backend.backend_id: backend ${m.backend_id} does not exist`,
        );
      }
      return m;
    case 'ip_restriction':
      for (const id of m.ip_policy_ids as string[])
        mustExist(
          ctx,
          'ipPolicies',
          id,
          'ip_restriction.ip_policy_ids',
          'IP policy',
          'ERR_MODULE_IP_POLICY_NOT_FOUND',
        );
      return m;
    case 'mutual_tls':
      for (const id of m.certificate_authority_ids as string[]) {
        mustExist(
          ctx,
          'certificateAuthorities',
          id,
          'mutual_tls.certificate_authority_ids',
          'certificate authority',
        );
      }
      return m;
    case 'request_headers':
    case 'response_headers':
      return { add: {}, remove: [], ...m };
    case 'oauth':
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
        _cert: (previous?._cert as string | undefined) ?? (await selfSignedPem(`${owner.id}.saml.edge`)),
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
