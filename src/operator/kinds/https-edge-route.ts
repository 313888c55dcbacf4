// HTTPSEdgeRoute: a route of an HTTPS edge and every route module.
import { z } from 'zod';
import type { EdgeClient } from '../../api/client.ts';
import { OAUTH_PROVIDERS } from '../../api/limits.ts';
import { ROUTE_RULES } from '../../api/route-rules.ts';
import {
  HTTPSEdgeRouteCreate,
  HTTPSEdgeRouteUpdate,
  type HTTPSEdgeRoute as Remote,
  type RouteModuleName,
} from '../../api/schemas/edges.ts';
import {
  CircuitBreakerModuleIn,
  CompressionModuleIn,
  HeadersModuleIn,
  IPRestrictionModuleIn,
  OAuthModuleIn,
  OIDCModuleIn,
  SAMLModuleIn,
  WebhookVerificationModuleIn,
  WebsocketTCPConverterModuleIn,
} from '../../api/schemas/modules.ts';
import { compact, defineBinding, type ModuleBinding } from '../runtime/bindings/binding.ts';
import { cel, doc } from './crd-schema.ts';
import { camel, type FieldMap, noSecrets } from './derive.ts';
import { kindSpec, type ModuleOf, moduleOf } from './kind-spec.ts';
import { backendIdsOf, backendModule, policyChoice, refOrIDChoice } from './shared-fields.ts';

// Bounds (BODY_BUDGET in derive.ts): a route's largest create body holds every module at once,
// its free text at up to 6 bytes a character in JSON: match 12 KB, two header modules 36 KB
// each, OAuth 45 KB, SAML 70 KB, OIDC 11 KB, IP restriction 3 KB, description and metadata
// 9 KB: 223 KB in all (test/unit/largest-objects.test.ts).
const session: FieldMap = { cookie_prefix: { max: 64 } };
/** A list of short values (scopes, email addresses, groups): 10 of 128 characters, 7.7 KB. */
const shortList = { max: 10, itemMax: 128 };
const OAUTH_PROVIDER: FieldMap = {
  client_id: { max: 256 },
  client_secret: { secret: 'oauth-client-secret' },
  scopes: shortList,
  // unique and lower case (ERR_NGROK_7046, 7047, 7067, 7068)
  email_addresses: { max: 20, itemMax: 128, unique: true, lowercase: true },
  email_domains: { ...shortList, unique: true, lowercase: true },
};
const GITHUB: FieldMap = {
  ...OAUTH_PROVIDER,
  // unique (ERR_NGROK_7048, 7049)
  teams: { ...shortList, unique: true },
  organizations: { max: 10, itemMax: 64, unique: true },
};
/**
 * Header names of 128 characters at most, values as long as the API takes (1,024: a
 * Content-Security-Policy is often longer than 256) and 5,120 characters together: 20 added
 * (34 KB), 20 removed.
 */
const headers: FieldMap = {
  // one name in two cases: the API refuses it (ERR_NGROK_7069), or keeps one (response headers)
  add: { max: 20, keyMax: 128, itemMax: 1024, valuesTotalMax: 20 * 256, keysUniqueIgnoringCase: true },
  remove: { max: 20, itemMax: 128 },
};
const lowerKeys = (add: unknown) =>
  Object.fromEntries(Object.entries(add as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));

/** Route modules by wire name, each derived from the API's module schema. */
const MODULES = {
  backend: backendModule('the backend serving the route'),
  ip_restriction: moduleOf(
    IPRestrictionModuleIn,
    'only source IPs allowed by these IP policies may access the route',
    // 20 references and 20 ids: 2.7 KB
    { ip_policy_ids: { replace: policyChoice('ipRestriction needs at least one IP policy', 20) } },
  ),
  circuit_breaker: moduleOf(
    CircuitBreakerModuleIn,
    'stop sending to the backend while it fails, to let it recover',
    // the API takes absent numbers as 0; the CRD asks for each, as 0 rarely is what was meant
    Object.fromEntries(
      [
        'tripped_duration',
        'rolling_window',
        'num_buckets',
        'volume_threshold',
        'error_threshold_percentage',
      ].map((k) => [k, { required: true }]),
    ),
  ),
  compression: moduleOf(CompressionModuleIn, 'compress responses (gzip/deflate) for clients that accept it'),
  request_headers: moduleOf(
    HeadersModuleIn,
    'headers added to or removed from requests on their way upstream',
    headers,
  ),
  response_headers: moduleOf(
    HeadersModuleIn,
    'headers added to or removed from responses on their way to the client',
    // the API returns added response header names lower-cased
    { ...headers, add: { ...headers.add, toWire: lowerKeys } },
  ),
  webhook_verification: moduleOf(
    WebhookVerificationModuleIn,
    "verify webhook requests by the provider's signature",
    { secret: { secret: 'webhook-secret' } },
  ),
  oauth: moduleOf(OAuthModuleIn, 'require a login with an OAuth provider', {
    ...session,
    provider: {
      fields: Object.fromEntries(
        OAUTH_PROVIDERS.map((p) => [p, { fields: p === 'github' ? GITHUB : OAUTH_PROVIDER }]),
      ),
    },
  }),
  saml: moduleOf(
    SAMLModuleIn,
    'require a login with a SAML identity provider (service-provider values in status.saml)',
    {
      ...session,
      // IdP metadata XML is typically 2..10 KB: 10,240 characters, 61 KB in the worst case
      idp_metadata: { max: 10_240 },
      authorized_groups: shortList,
      nameid_format: { name: 'nameIDFormat' },
    },
  ),
  oidc: moduleOf(OIDCModuleIn, 'require a login with an OpenID Connect provider', {
    ...session,
    issuer: { max: 512 },
    client_id: { max: 256 },
    client_secret: { secret: 'oidc-client-secret' },
    scopes: { required: true, ...shortList },
  }),
  websocket_tcp_converter: moduleOf(
    WebsocketTCPConverterModuleIn,
    'carry TCP over WebSocket connections to the backend',
  ),
} satisfies Record<RouteModuleName, ModuleOf>;
type ModuleName = keyof typeof MODULES;
const MODULE_NAMES = Object.keys(MODULES) as ModuleName[];

// the edge is the route's parent in the API's paths, not a field of its body
const edge = refOrIDChoice(
  'HTTPSEdge',
  'httpsEdge',
  ['edgeRef', 'edgeID'],
  (r) => r.edge_id as string,
  'an HTTPS edge',
);
const own = kindSpec(HTTPSEdgeRouteCreate, HTTPSEdgeRouteUpdate, {
  match: { max: 2048 },
  ...Object.fromEntries(MODULE_NAMES.map((n) => [n, { omit: true }])),
});
// one login module per route (ERR_NGROK_7079), OAuth on the route '/' only (ERR_NGROK_7127):
// what one object shows, admission refuses
const { oneLoginModule: oneLogin, oauthAtRoot } = ROUTE_RULES;
const Spec = cel(
  z
    .object({
      ...edge.crd,
      ...own.schema.shape,
      ...Object.fromEntries(MODULE_NAMES.map((n) => [camel(n), MODULES[n].crd])),
    })
    .refine((s) => oneLogin.test((f) => s[camel(f)]), oneLogin.must(camel))
    .refine((s) => oauthAtRoot.test((f) => s[camel(f)]), {
      message: oauthAtRoot.must(camel),
      path: [camel(oauthAtRoot.field)],
    }),
  ...edge.rules!,
  { rule: oneLogin.cel(camel), message: oneLogin.must(camel) },
  {
    rule: oauthAtRoot.cel(camel),
    message: `${camel(oauthAtRoot.field)} ${oauthAtRoot.must(camel)}`,
    fieldPath: `.${camel(oauthAtRoot.field)}`,
  },
);
type Spec = {
  edgeRef?: { name: string };
  edgeID?: string;
  matchType: Remote['match_type'];
  match: string;
} & Record<string, unknown>;
type Desired = { edge_id: string; match_type: Remote['match_type']; match: string };

/** Where a module's body holds values from Secrets: compared by keyed digest, never echoed. */
const SECRET_PATHS: Partial<Record<ModuleName, string[]>> = {
  webhook_verification: ['secret'],
  oauth: ['provider.*.client_secret'],
  oidc: ['client_secret'],
};

type Mods = EdgeClient['httpsEdgeRouteModules'];
function routeModule(name: ModuleName): ModuleBinding<Spec> {
  const m = MODULES[name];
  return {
    name,
    desired: (s, ref, secret) => m.body(s[camel(name)], { ref, secret }),
    secretPaths: SECRET_PATHS[name],
    put: (c, id, body, owner) =>
      (
        c.httpsEdgeRouteModules[name as keyof Mods].put as (
          e: string,
          i: string,
          b: unknown,
        ) => Promise<unknown>
      )(owner.edge_id as string, id, body),
    delete: (c, id, owner) => c.httpsEdgeRouteModules[name as keyof Mods].delete(owner.edge_id as string, id),
  };
}

export const HTTPSEdgeRoute = defineBinding<Spec, Remote, Desired>({
  kind: 'HTTPSEdgeRoute',
  plural: 'httpsedgeroutes',
  shortNames: ['edgeroute'],
  partOf: 'HTTPSEdge',
  tunnels: 'through',
  tunnelIds: backendIdsOf,
  description:
    'A route of an HTTPS edge and its modules (backend, IP restriction, circuit breaker, headers, webhook verification, OAuth, SAML, OIDC...).',
  spec: Spec,
  status: z.object({
    edgeID: doc(z.string(), 'id of the HTTPS edge the route belongs to').optional(),
    secretDigests: doc(
      z.record(z.string(), z.string()),
      'keyed digests of the Secret values applied, per module',
    ).optional(),
    saml: doc(
      z.object({
        entityID: doc(z.string(), "the service provider's entity ID").optional(),
        metadataURL: doc(z.string(), "URL of the service provider's SAML metadata, for the IdP").optional(),
        assertionConsumerServiceURL: doc(
          z.string(),
          'where the IdP sends its assertions (ACS URL)',
        ).optional(),
        singleLogoutURL: doc(z.string(), "the service provider's single logout URL").optional(),
        requestSigningCertificatePEM: doc(
          z.string(),
          'certificate (PEM) the service provider signs its requests with',
        ).optional(),
        idpMetadataURL: doc(z.string(), "URL of the IdP's metadata, when the API has one").optional(),
      }),
      'service-provider values to give the IdP',
    ).optional(),
  }),
  columns: [
    { name: 'Match', type: 'string', jsonPath: '.spec.match' },
    { name: 'Type', type: 'string', jsonPath: '.spec.matchType', priority: 1 },
  ],
  references: (s) => [
    ...edge.references!(s, 'spec'),
    ...MODULE_NAMES.flatMap((n) => MODULES[n].references(s[camel(n)], `spec.${camel(n)}`)),
  ],
  secrets: (s) => MODULE_NAMES.flatMap((n) => MODULES[n].secrets(s[camel(n)], `spec.${camel(n)}`)),
  desired: (s, ref) =>
    ({ edge_id: edge.toWire(s, { ref, secret: noSecrets }) as string, ...own.desired(s, ref) }) as Desired,
  fromRemote: (r) => ({ edge_id: r.edge_id, match_type: r.match_type, match: r.match }),
  desiredFromStatus: (st) => ({ edge_id: st.edgeID as string }),
  updatable: own.updatable as (keyof Desired)[],
  conflict: {
    key: (d) => `${d.edge_id} ${d.match_type} ${d.match}`,
    what: 'the same match on the same edge',
  },
  modules: MODULE_NAMES.map(routeModule),
  api: {
    create: (c, { edge_id, ...body }) => c.httpsEdgeRoutes.create(edge_id, body as never),
    get: (c, id, d) => c.httpsEdgeRoutes.get(d.edge_id, id),
    update: (c, id, { edge_id: _e, ...patch }, d) => c.httpsEdgeRoutes.update(d.edge_id, id, patch),
    delete: (c, id, status) => c.httpsEdgeRoutes.delete(status.edgeID as string, id),
    // routes have no list of their own: the edges list carries them (bulk observation reads them
    // from HTTPSEdge's pass, `carries`; this one serves recovery, export, and an operator without that kind)
    list: (c, d, opts) => ({
      async *[Symbol.asyncIterator]() {
        if (d.edge_id) yield* (await c.httpsEdges.get(d.edge_id)).routes;
        else for await (const e of c.httpsEdges.list(opts)) yield* e.routes;
      },
    }),
  },
  exportSpec: (r, x) =>
    compact({
      ...edge.fromWire(r, x),
      ...own.fromWire(r, x),
      ...Object.fromEntries(MODULE_NAMES.map((n) => [camel(n), MODULES[n].spec(r[n], x)])),
    }),
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
