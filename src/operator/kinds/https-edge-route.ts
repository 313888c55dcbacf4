// HTTPSEdgeRoute: a route of an HTTPS edge and every route module.
import { z } from 'zod';
import type { EdgeClient } from '../../api/client.ts';
import {
  MATCH_TYPES,
  NUM_BUCKETS_MAX,
  OAUTH_MANAGED_APP_PROVIDERS,
  OAUTH_PROVIDERS,
  SAML_NAMEID_FORMATS,
  UINT32_MAX,
  WEBHOOK_PROVIDERS,
  WEBHOOK_PROVIDERS_WITHOUT_SECRET,
} from '../../api/limits.ts';
import { idRule, RULES } from '../../api/rules.ts';
import type { HTTPSEdgeRoute as Remote } from '../../api/schemas/edges.ts';
import {
  compact,
  defineBinding,
  type ExportContext,
  exportEnabled,
  type ModuleBinding,
  type Reference,
  refOrID,
  type SecretReference,
} from '../runtime/binding.ts';
import { cel, doc, exactlyOne, immutable, localRef, ruled } from './crd-schema.ts';
import {
  BackendModule,
  backendBody,
  backendRefs,
  backendSpec,
  enabled,
  PolicyChoice,
  policiesRule,
  policyRefs,
} from './shared-fields.ts';

const seconds = (what: string) => doc(z.number().int().min(0).max(UINT32_MAX), what);
const SecretKeyRef = doc(
  z.object({
    name: doc(z.string().min(1).max(253), 'name of the Secret'),
    key: doc(z.string().min(1).max(253), 'key in its data'),
  }),
  'a key of a Secret in the same namespace',
);
const session = {
  optionsPassthrough: doc(z.boolean(), 'do not enforce authentication on OPTIONS requests (CORS)').optional(),
  cookiePrefix: doc(z.string().max(64), 'prefix of the session cookie').optional(),
  inactivityTimeout: seconds('seconds of inactivity before reauthentication').optional(),
  maximumDuration: seconds('maximum session length in seconds').optional(),
};
const strings = (max = 100) => z.array(z.string().max(512)).max(max);
const onOff = (what: string) => z.object({ enabled }).describe(what);
// header names as the API checks them (the wire schema's pattern); map keys need CEL
const headerNames = z.array(ruled(RULES.headerName, 'header names')).max(100);
const headerMap = cel(
  z.record(ruled(RULES.headerName, 'header names'), z.string().max(4096)).meta({ maxProperties: 100 }),
  {
    rule: `self.all(k, k.matches('${RULES.headerName.pattern.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'))`,
    message: 'header names must be HTTP tokens (no spaces)',
  },
);

const OAuthProvider = z.object({
  clientID: doc(
    z.string().min(1).max(512),
    "your OAuth app's client ID (github, facebook, microsoft, google: omit it and the client secret to use the service's managed app)",
  ).optional(),
  clientSecretRef: doc(SecretKeyRef, "the Secret key holding your OAuth app's client secret").optional(),
  scopes: doc(strings(), 'scopes requested from the provider (only with your own app)').optional(),
  emailAddresses: doc(strings(), 'only these email addresses may log in').optional(),
  emailDomains: doc(strings(), 'only email addresses of these domains may log in').optional(),
});
const OAuthGitHub = OAuthProvider.extend({
  teams: doc(
    z.array(ruled(RULES.githubTeam, 'teams')).max(100),
    'only members of these teams, as org-name/team-name',
  ).optional(),
  organizations: doc(strings(), 'only members of these organizations (slugs)').optional(),
});
const providerRules = (p: string) => [
  {
    rule: `!has(self.${p}) || has(self.${p}.clientID) == has(self.${p}.clientSecretRef)`,
    message: `${p}: clientID and clientSecretRef go together`,
  },
  {
    rule: `!has(self.${p}) || !has(self.${p}.scopes) || size(self.${p}.scopes) == 0 || (has(self.${p}.clientID) && has(self.${p}.clientSecretRef))`,
    message: `${p}: scopes need both clientID and clientSecretRef`,
  },
  ...((OAUTH_MANAGED_APP_PROVIDERS as readonly string[]).includes(p)
    ? []
    : [
        {
          rule: `!has(self.${p}) || has(self.${p}.clientID)`,
          message: `${p}: clientID and clientSecretRef are required (no managed app)`,
        },
      ]),
];
const Providers = cel(
  z.object(
    Object.fromEntries(
      OAUTH_PROVIDERS.map((p) => [
        p,
        doc(p === 'github' ? OAuthGitHub : OAuthProvider, `log in with ${p}`).optional(),
      ]),
    ) as Record<(typeof OAUTH_PROVIDERS)[number], z.ZodOptional<typeof OAuthGitHub>>,
  ),
  {
    rule: `[${OAUTH_PROVIDERS.map((p) => `has(self.${p})`).join(', ')}].filter(x, x).size() == 1`,
    message: 'exactly one OAuth provider must be set',
  },
  ...OAUTH_PROVIDERS.flatMap(providerRules),
);

const Modules = {
  backend: doc(BackendModule, 'the backend serving the route').optional(),
  ipRestriction: doc(
    cel(z.object({ enabled, ...PolicyChoice }), policiesRule('ipRestriction needs at least one IP policy')),
    'only source IPs allowed by these IP policies may access the route',
  ).optional(),
  circuitBreaker: doc(
    z.object({
      enabled,
      trippedDuration: seconds('seconds to wait after tripping'),
      rollingWindow: seconds('seconds of the rolling window'),
      numBuckets: doc(
        z.number().int().min(0).max(NUM_BUCKETS_MAX),
        `buckets in the window, at most ${NUM_BUCKETS_MAX}`,
      ),
      volumeThreshold: seconds('requests in a window that can trip the circuit'),
      errorThresholdPercentage: doc(
        z.number().min(0).max(1),
        'error ratio that trips the circuit, 0..1 (not 0-100)',
      ),
    }),
    'stop sending to the backend while it fails, to let it recover',
  ).optional(),
  compression: onOff('compress responses (gzip/deflate) for clients that accept it').optional(),
  requestHeaders: doc(
    z.object({
      enabled,
      add: doc(headerMap, 'header name -> value added before the request goes upstream').optional(),
      remove: doc(headerNames, 'header names removed before the request goes upstream').optional(),
    }),
    'headers added to or removed from requests on their way upstream',
  ).optional(),
  responseHeaders: doc(
    z.object({
      enabled,
      add: doc(headerMap, 'header name -> value added to the response').optional(),
      remove: doc(headerNames, 'header names removed from the response').optional(),
    }),
    'headers added to or removed from responses on their way to the client',
  ).optional(),
  webhookVerification: cel(
    z
      .object({
        enabled,
        provider: doc(z.enum(WEBHOOK_PROVIDERS), 'the webhook provider sending to this route'),
        secretRef: doc(SecretKeyRef, 'the Secret key holding the webhook signing secret').optional(),
      })
      .describe("verify webhook requests by the provider's signature"),
    {
      rule: `has(self.secretRef) || self.provider in [${WEBHOOK_PROVIDERS_WITHOUT_SECRET.map((p) => `'${p}'`).join(', ')}]`,
      message: 'secretRef is required for this provider',
    },
  ).optional(),
  oauth: doc(
    z.object({
      enabled,
      provider: doc(Providers, 'exactly one OAuth provider and its settings'),
      ...session,
      authCheckInterval: seconds(
        'seconds after which the user is rechecked at the provider (bounds access after revocation)',
      ).optional(),
    }),
    'require a login with an OAuth provider',
  ).optional(),
  saml: doc(
    z.object({
      enabled,
      ...session,
      idpMetadata: doc(z.string().min(1).max(100_000), 'the IdP EntityDescriptor XML'),
      forceAuthn: doc(
        z.boolean(),
        'the IdP asks for credentials on every login, even with a session',
      ).optional(),
      allowIdpInitiated: doc(
        z.boolean(),
        'the IdP may start a login itself (RelayState: the target URL)',
      ).optional(),
      authorizedGroups: doc(strings(), 'only members of these groups may access the route').optional(),
      nameIDFormat: doc(
        z.enum(SAML_NAMEID_FORMATS),
        'name identifier format expected from the IdP',
      ).optional(),
    }),
    'require a login with a SAML identity provider (service-provider values in status.saml)',
  ).optional(),
  oidc: doc(
    z.object({
      enabled,
      ...session,
      issuer: doc(ruled(RULES.url, 'issuer'), 'URL of the OpenID provider (base URL for discovery)'),
      clientID: doc(z.string().min(1).max(512), "the app's client ID and audience"),
      clientSecretRef: doc(SecretKeyRef, "the Secret key holding the app's client secret"),
      scopes: doc(strings(), 'scopes requested from the identity provider'),
    }),
    'require a login with an OpenID Connect provider',
  ).optional(),
  websocketTCPConverter: onOff('carry TCP over WebSocket connections to the backend').optional(),
};

const Spec = cel(
  z.object({
    edgeRef: immutable(localRef('HTTPSEdge'), 'edgeRef').optional(),
    edgeID: doc(
      immutable(ruled(idRule('httpsEdge'), 'edgeID'), 'edgeID'),
      'id of an HTTPS edge managed elsewhere (immutable)',
    ).optional(),
    matchType: doc(z.enum(MATCH_TYPES), 'exact_path or path_prefix'),
    match: doc(z.string().min(1).max(2048), 'path, host, or host plus path'),
    ...Modules,
  }),
  ...exactlyOne('edgeRef', 'edgeID'),
);
type Spec = z.infer<typeof Spec>;
type Desired = { edge_id: string; match_type: Remote['match_type']; match: string };

const sessionBody = (m: {
  optionsPassthrough?: boolean;
  cookiePrefix?: string;
  inactivityTimeout?: number;
  maximumDuration?: number;
}) => ({
  options_passthrough: m.optionsPassthrough,
  cookie_prefix: m.cookiePrefix,
  inactivity_timeout: m.inactivityTimeout,
  maximum_duration: m.maximumDuration,
});

// --- export: what the API holds back to spec fields; defaults (false, '', 0, []) are left out
// where the spec's own default gives the same body, kept where the body is compared whole.
const nonEmpty = <T>(v: T[] | Record<string, T> | undefined) => (v && Object.keys(v).length ? v : undefined);
const sessionSpec = (m: {
  options_passthrough?: boolean;
  cookie_prefix?: string;
  inactivity_timeout?: number;
  maximum_duration?: number;
}) => ({
  optionsPassthrough: m.options_passthrough || undefined,
  cookiePrefix: m.cookie_prefix || undefined,
  inactivityTimeout: m.inactivity_timeout || undefined,
  maximumDuration: m.maximum_duration || undefined,
});
const headersSpec = (m: { enabled: boolean; add: Record<string, string>; remove: string[] } | null) =>
  m ? compact({ ...exportEnabled(m), add: nonEmpty(m.add), remove: nonEmpty(m.remove) }) : undefined;
/** An OAuth provider entry as the API holds it, every list kept: the entry is compared whole. */
const providerSpec = (v: Record<string, unknown>, x: ExportContext) =>
  compact({
    clientID: v.client_id,
    clientSecretRef: v.client_secret ? x.secret('oauth-client-secret', v.client_secret as string) : undefined,
    scopes: v.scopes,
    emailAddresses: v.email_addresses,
    emailDomains: v.email_domains,
    teams: v.teams,
    organizations: v.organizations,
  });

function exportRoute(r: Remote, x: ExportContext): Record<string, unknown> {
  const { circuit_breaker: cb, webhook_verification: wv, oauth, saml, oidc } = r;
  return compact({
    ...refOrID(x, r.edge_id, 'edgeRef', 'edgeID'),
    matchType: r.match_type,
    match: r.match,
    backend: backendSpec(r.backend, x),
    ipRestriction: r.ip_restriction
      ? { ...exportEnabled(r.ip_restriction), ...policyRefs(r.ip_restriction.ip_policies, x) }
      : undefined,
    circuitBreaker: cb
      ? {
          ...exportEnabled(cb),
          trippedDuration: cb.tripped_duration,
          rollingWindow: cb.rolling_window,
          numBuckets: cb.num_buckets,
          volumeThreshold: cb.volume_threshold,
          errorThresholdPercentage: cb.error_threshold_percentage,
        }
      : undefined,
    compression: r.compression ? exportEnabled(r.compression) : undefined,
    requestHeaders: headersSpec(r.request_headers),
    responseHeaders: headersSpec(r.response_headers),
    webhookVerification: wv
      ? compact({
          ...exportEnabled(wv),
          provider: wv.provider,
          secretRef: wv.secret ? x.secret('webhook-secret', wv.secret) : undefined,
        })
      : undefined,
    oauth: oauth
      ? compact({
          ...exportEnabled(oauth),
          provider: Object.fromEntries(
            Object.entries(oauth.provider).map(([n, v]) => [n, providerSpec(v, x)]),
          ),
          ...sessionSpec(oauth),
          authCheckInterval: oauth.auth_check_interval || undefined,
        })
      : undefined,
    saml: saml
      ? compact({
          ...exportEnabled(saml),
          ...sessionSpec(saml),
          idpMetadata: saml.idp_metadata,
          forceAuthn: saml.force_authn || undefined,
          allowIdpInitiated: saml.allow_idp_initiated || undefined,
          authorizedGroups: nonEmpty(saml.authorized_groups),
          nameIDFormat: saml.nameid_format || undefined,
        })
      : undefined,
    oidc: oidc
      ? compact({
          ...exportEnabled(oidc),
          ...sessionSpec(oidc),
          issuer: oidc.issuer,
          clientID: oidc.client_id,
          clientSecretRef: x.secret('oidc-client-secret', oidc.client_secret),
          scopes: oidc.scopes,
        })
      : undefined,
    websocketTCPConverter: r.websocket_tcp_converter ? exportEnabled(r.websocket_tcp_converter) : undefined,
  });
}

type Mods = EdgeClient['httpsEdgeRouteModules'];
function routeModule(
  name: keyof Mods & string,
  desired: ModuleBinding<Spec>['desired'],
  secretPaths?: string[],
): ModuleBinding<Spec> {
  return {
    name,
    desired,
    secretPaths,
    put: (c, id, body, owner) =>
      (c.httpsEdgeRouteModules[name].put as (e: string, i: string, b: unknown) => Promise<unknown>)(
        owner.edge_id as string,
        id,
        body,
      ),
    delete: (c, id, owner) => c.httpsEdgeRouteModules[name].delete(owner.edge_id as string, id),
  };
}

export const HTTPSEdgeRoute = defineBinding<Spec, Remote, Desired>({
  kind: 'HTTPSEdgeRoute',
  plural: 'httpsedgeroutes',
  shortNames: ['edgeroute'],
  description:
    'A route of an HTTPS edge and its modules (backend, IP restriction, circuit breaker, headers, webhook verification, OAuth, SAML, OIDC...).',
  spec: Spec,
  status: z.object({
    edgeID: z.string().optional(),
    secretDigests: doc(
      z.record(z.string(), z.string()),
      'keyed digests of the Secret values applied, per module',
    ).optional(),
    saml: doc(
      z.object({
        entityID: z.string().optional(),
        metadataURL: z.string().optional(),
        assertionConsumerServiceURL: z.string().optional(),
        singleLogoutURL: z.string().optional(),
        requestSigningCertificatePEM: z.string().optional(),
        idpMetadataURL: z.string().optional(),
      }),
      'service-provider values to give the IdP',
    ).optional(),
  }),
  columns: [
    { name: 'Match', type: 'string', jsonPath: '.spec.match' },
    { name: 'Type', type: 'string', jsonPath: '.spec.matchType', priority: 1 },
  ],
  references: (s) => {
    const refs: Reference[] = [];
    if (s.edgeRef) refs.push({ path: 'spec.edgeRef', kind: 'HTTPSEdge', name: s.edgeRef.name });
    refs.push(...backendRefs('spec.backend', s.backend));
    for (const [i, r] of (s.ipRestriction?.ipPolicyRefs ?? []).entries())
      refs.push({ path: `spec.ipRestriction.ipPolicyRefs[${i}]`, kind: 'IPPolicy', name: r.name });
    return refs;
  },
  secrets: (s) => {
    const out: SecretReference[] = [];
    if (s.webhookVerification?.secretRef)
      out.push({ path: 'spec.webhookVerification.secretRef', ...s.webhookVerification.secretRef });
    for (const [p, v] of Object.entries(s.oauth?.provider ?? {}))
      if (v?.clientSecretRef)
        out.push({ path: `spec.oauth.provider.${p}.clientSecretRef`, ...v.clientSecretRef });
    if (s.oidc) out.push({ path: 'spec.oidc.clientSecretRef', ...s.oidc.clientSecretRef });
    return out;
  },
  desired: (s, ref) => ({
    edge_id: s.edgeID ?? ref('HTTPSEdge', s.edgeRef!.name),
    match_type: s.matchType,
    match: s.match,
  }),
  observe: (r) => ({ edge_id: r.edge_id, match_type: r.match_type, match: r.match }),
  updatable: ['match_type', 'match'],
  modules: [
    routeModule('backend', (s, ref) => backendBody(s.backend, ref)),
    routeModule('ip_restriction', (s, ref) =>
      s.ipRestriction
        ? {
            enabled: s.ipRestriction.enabled ?? true,
            ip_policy_ids: [
              ...(s.ipRestriction.ipPolicyRefs ?? []).map((r) => ref('IPPolicy', r.name)),
              ...(s.ipRestriction.ipPolicyIDs ?? []),
            ],
          }
        : null,
    ),
    routeModule('circuit_breaker', (s) => {
      const m = s.circuitBreaker;
      return m
        ? {
            enabled: m.enabled ?? true,
            tripped_duration: m.trippedDuration,
            rolling_window: m.rollingWindow,
            num_buckets: m.numBuckets,
            volume_threshold: m.volumeThreshold,
            error_threshold_percentage: m.errorThresholdPercentage,
          }
        : null;
    }),
    routeModule('compression', (s) => (s.compression ? { enabled: s.compression.enabled ?? true } : null)),
    routeModule('request_headers', (s) =>
      s.requestHeaders
        ? {
            enabled: s.requestHeaders.enabled ?? true,
            add: s.requestHeaders.add ?? {},
            remove: s.requestHeaders.remove ?? [],
          }
        : null,
    ),
    routeModule('response_headers', (s) =>
      s.responseHeaders
        ? {
            enabled: s.responseHeaders.enabled ?? true,
            // the API returns added response header names lower-cased
            add: Object.fromEntries(
              Object.entries(s.responseHeaders.add ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
            ),
            remove: s.responseHeaders.remove ?? [],
          }
        : null,
    ),
    routeModule(
      'webhook_verification',
      (s, _ref, secret) => {
        const m = s.webhookVerification;
        return m
          ? compact({
              enabled: m.enabled ?? true,
              provider: m.provider,
              secret: m.secretRef ? secret(m.secretRef.name, m.secretRef.key) : undefined,
            })
          : null;
      },
      ['secret'],
    ),
    routeModule(
      'oauth',
      (s, _ref, secret) => {
        const m = s.oauth;
        if (!m) return null;
        const provider = Object.fromEntries(
          Object.entries(m.provider)
            .filter(([, v]) => v)
            .map(([name, p]) => [
              name,
              compact({
                client_id: p!.clientID,
                client_secret: p!.clientSecretRef
                  ? secret(p!.clientSecretRef.name, p!.clientSecretRef.key)
                  : undefined,
                scopes: p!.scopes,
                email_addresses: p!.emailAddresses,
                email_domains: p!.emailDomains,
                teams: p!.teams,
                organizations: p!.organizations,
              }),
            ]),
        );
        return compact({
          enabled: m.enabled ?? true,
          provider,
          ...sessionBody(m),
          auth_check_interval: m.authCheckInterval,
        });
      },
      ['provider.*.client_secret'],
    ),
    routeModule('saml', (s) => {
      const m = s.saml;
      return m
        ? compact({
            enabled: m.enabled ?? true,
            ...sessionBody(m),
            idp_metadata: m.idpMetadata,
            force_authn: m.forceAuthn,
            allow_idp_initiated: m.allowIdpInitiated,
            authorized_groups: m.authorizedGroups,
            nameid_format: m.nameIDFormat,
          })
        : null;
    }),
    routeModule(
      'oidc',
      (s, _ref, secret) => {
        const m = s.oidc;
        return m
          ? compact({
              enabled: m.enabled ?? true,
              ...sessionBody(m),
              issuer: m.issuer,
              client_id: m.clientID,
              client_secret: secret(m.clientSecretRef.name, m.clientSecretRef.key),
              scopes: m.scopes,
            })
          : null;
      },
      ['client_secret'],
    ),
    routeModule('websocket_tcp_converter', (s) =>
      s.websocketTCPConverter ? { enabled: s.websocketTCPConverter.enabled ?? true } : null,
    ),
  ],
  api: {
    create: (c, { edge_id, ...body }) => c.httpsEdgeRoutes.create(edge_id, body as never),
    get: (c, id, d) => c.httpsEdgeRoutes.get(d.edge_id, id),
    update: (c, id, { edge_id: _e, ...patch }, d) => c.httpsEdgeRoutes.update(d.edge_id, id, patch),
    delete: (c, id, status) => c.httpsEdgeRoutes.delete(status.edgeID as string, id),
    // routes have no list of their own: the edges list carries them
    list: (c, d, opts) => ({
      async *[Symbol.asyncIterator]() {
        if (d.edge_id) yield* (await c.httpsEdges.get(d.edge_id)).routes;
        else for await (const e of c.httpsEdges.list(opts)) yield* e.routes;
      },
    }),
  },
  exportSpec: exportRoute,
  statusOf: (r) => ({
    edgeID: r.edge_id,
    ...(r.saml
      ? {
          saml: {
            entityID: r.saml.entity_id,
            metadataURL: r.saml.metadata_url,
            assertionConsumerServiceURL: r.saml.assertion_consumer_service_url,
            singleLogoutURL: r.saml.single_logout_url,
            requestSigningCertificatePEM: r.saml.request_signing_certificate_pem,
            idpMetadataURL: r.saml.idp_metadata_url,
          },
        }
      : {}),
  }),
});
