import { z } from 'zod';
import { MATCH_TYPES } from '../limits.ts';
import { RULES } from '../rules.ts';
import { checked, describe, resourceIn, resourceOut } from './common.ts';
import * as m from './modules.ts';

const Hostports = describe(z.array(checked(RULES.hostport)), 'host:port pairs the edge listens on');
const nullable = <T extends z.ZodType>(t: T) => t.nullable();
const inMod = <T extends z.ZodType>(t: T) => t.nullable().optional();

/** Route modules: wire name -> [input schema, output schema]. The order is the spec's. */
export const ROUTE_MODULES = {
  backend: [m.BackendModuleIn, m.BackendModule],
  ip_restriction: [m.IPRestrictionModuleIn, m.IPRestrictionModule],
  circuit_breaker: [m.CircuitBreakerModuleIn, m.CircuitBreakerModule],
  compression: [m.CompressionModuleIn, m.CompressionModule],
  request_headers: [m.HeadersModuleIn, m.HeadersModule],
  response_headers: [m.HeadersModuleIn, m.HeadersModule],
  webhook_verification: [m.WebhookVerificationModuleIn, m.WebhookVerificationModule],
  oauth: [m.OAuthModuleIn, m.OAuthModule],
  saml: [m.SAMLModuleIn, m.SAMLModule],
  oidc: [m.OIDCModuleIn, m.OIDCModule],
  websocket_tcp_converter: [m.WebsocketTCPConverterModuleIn, m.WebsocketTCPConverterModule],
} as const;
export type RouteModuleName = keyof typeof ROUTE_MODULES;
export const ROUTE_MODULE_NAMES = Object.keys(ROUTE_MODULES) as RouteModuleName[];

/** Edge modules by edge family: wire name -> [input schema, output schema]. */
export const EDGE_MODULES = {
  https: { tls_termination: [m.HTTPSTLSTerminationModuleIn, m.TLSTerminationModule] },
  tcp: { backend: [m.BackendModuleIn, m.BackendModule] },
  tls: {
    backend: [m.BackendModuleIn, m.BackendModule],
    mutual_tls: [m.MutualTLSModuleIn, m.MutualTLSModule],
    tls_termination: [m.TLSTerminationModuleIn, m.TLSTerminationModule],
  },
} as const;
export type EdgeFamily = keyof typeof EDGE_MODULES;

const routeModulesOut = {
  backend: nullable(m.BackendModule),
  ip_restriction: nullable(m.IPRestrictionModule),
  circuit_breaker: nullable(m.CircuitBreakerModule),
  compression: nullable(m.CompressionModule),
  request_headers: nullable(m.HeadersModule),
  response_headers: nullable(m.HeadersModule),
  webhook_verification: nullable(m.WebhookVerificationModule),
  oauth: nullable(m.OAuthModule),
  saml: nullable(m.SAMLModule),
  oidc: nullable(m.OIDCModule),
  websocket_tcp_converter: nullable(m.WebsocketTCPConverterModule),
};
const routeModulesIn = {
  backend: inMod(m.BackendModuleIn),
  ip_restriction: inMod(m.IPRestrictionModuleIn),
  circuit_breaker: inMod(m.CircuitBreakerModuleIn),
  compression: inMod(m.CompressionModuleIn),
  request_headers: inMod(m.HeadersModuleIn),
  response_headers: inMod(m.HeadersModuleIn),
  webhook_verification: inMod(m.WebhookVerificationModuleIn),
  oauth: inMod(m.OAuthModuleIn),
  saml: inMod(m.SAMLModuleIn),
  oidc: inMod(m.OIDCModuleIn),
  websocket_tcp_converter: inMod(m.WebsocketTCPConverterModuleIn),
};

export const HTTPSEdgeRoute = z.object({
  ...resourceOut,
  edge_id: z.string(),
  match_type: z.enum(MATCH_TYPES),
  match: z.string(),
  ...routeModulesOut,
});
export const HTTPSEdgeRouteCreate = z.strictObject({
  ...resourceIn,
  match_type: describe(z.enum(MATCH_TYPES), 'exact_path or path_prefix'),
  match: describe(z.string().min(1), 'path, host, or host plus path'),
  ...routeModulesIn,
});
/** Update: omitted fields and modules stay; a module sent as null is removed. */
export const HTTPSEdgeRouteUpdate = z.strictObject({
  ...resourceIn,
  match_type: z.enum(MATCH_TYPES).optional(),
  match: z.string().min(1).optional(),
  ...routeModulesIn,
});

const edgeIn = { ...resourceIn, hostports: Hostports.optional() };
export const HTTPSEdge = z.object({
  ...resourceOut,
  hostports: z.array(z.string()).nullable(),
  tls_termination: nullable(m.TLSTerminationModule),
  routes: z.array(HTTPSEdgeRoute),
});
export const HTTPSEdgeCreate = z.strictObject({
  ...edgeIn,
  tls_termination: inMod(m.HTTPSTLSTerminationModuleIn),
});
export const HTTPSEdgeUpdate = z.strictObject({ ...edgeIn });

export const TCPEdge = z.object({
  ...resourceOut,
  hostports: z.array(z.string()).nullable(),
  backend: nullable(m.BackendModule),
});
export const TCPEdgeCreate = z.strictObject({ ...edgeIn, backend: inMod(m.BackendModuleIn) });
export const TCPEdgeUpdate = z.strictObject({ ...edgeIn });

export const TLSEdge = z.object({
  ...resourceOut,
  hostports: z.array(z.string()).nullable(),
  backend: nullable(m.BackendModule),
  mutual_tls: nullable(m.MutualTLSModule),
  tls_termination: nullable(m.TLSTerminationModule),
});
export const TLSEdgeCreate = z.strictObject({
  ...edgeIn,
  backend: inMod(m.BackendModuleIn),
  mutual_tls: inMod(m.MutualTLSModuleIn),
  tls_termination: inMod(m.TLSTerminationModuleIn),
});
export const TLSEdgeUpdate = z.strictObject({ ...edgeIn });

export type HTTPSEdgeRoute = z.infer<typeof HTTPSEdgeRoute>;
export type HTTPSEdge = z.infer<typeof HTTPSEdge>;
export type TCPEdge = z.infer<typeof TCPEdge>;
export type TLSEdge = z.infer<typeof TLSEdge>;
