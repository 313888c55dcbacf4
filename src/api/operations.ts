// Every operation of the API, once. The client binds a method per entry, the emulator
// mounts a route per entry, and a test checks the table against the spec.
import type { z } from 'zod';
import * as a from './schemas/agents.ts';
import * as b from './schemas/backends.ts';
import { listResponse } from './schemas/common.ts';
import * as c from './schemas/credentials.ts';
import * as e from './schemas/edges.ts';
import * as ip from './schemas/ip.ts';
import * as m from './schemas/modules.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface OpDef<
  P extends string = string,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType | undefined = z.ZodType | undefined,
> {
  kind: 'op';
  method: Method;
  path: P;
  body: B;
  /** undefined: the API answers 204 with an empty body. */
  response: R;
  /** A POST that creates a resource: never retried once it may have reached the server. */
  creates: boolean;
}
export interface ListDef<
  P extends string = string,
  K extends string = string,
  I extends z.ZodType = z.ZodType,
> {
  kind: 'list';
  method: 'GET';
  path: P;
  key: K;
  item: I;
  response: ReturnType<typeof listResponse<K, I>>;
}
export type AnyOp = OpDef | ListDef;

const op = <P extends string, B extends z.ZodType | undefined, R extends z.ZodType | undefined>(
  method: Method,
  path: P,
  body: B,
  response: R,
  creates = false,
): OpDef<P, B, R> => ({ kind: 'op', method, path, body, response, creates });

const list = <P extends string, K extends string, I extends z.ZodType>(
  path: P,
  key: K,
  item: I,
): ListDef<P, K, I> => ({
  kind: 'list',
  method: 'GET',
  path,
  key,
  item,
  response: listResponse(key, item),
});

function crud<
  B extends string,
  K extends string,
  R extends z.ZodType,
  C extends z.ZodType,
  U extends z.ZodType,
>(base: B, key: K, res: R, create: C, update: U) {
  const one = `${base}/{id}` as `${B}/{id}`;
  return {
    create: op('POST', base, create, res, true),
    list: list(base, key, res),
    get: op('GET', one, undefined, res),
    update: op('PATCH', one, update, res),
    delete: op('DELETE', one, undefined, undefined),
  };
}

function moduleOps<B extends string, I extends z.ZodType, O extends z.ZodType>(path: B, input: I, output: O) {
  return {
    put: op('PUT', path, input, output),
    get: op('GET', path, undefined, output),
    delete: op('DELETE', path, undefined, undefined),
  };
}

const ROUTE = '/edges/https/{edge_id}/routes/{id}';
type RouteModules = typeof e.ROUTE_MODULES;
type ModuleOps<P extends string, I extends z.ZodType, O extends z.ZodType> = ReturnType<
  typeof moduleOps<P, I, O>
>;
const routeModule = <N extends e.RouteModuleName>(name: N) =>
  moduleOps(`${ROUTE}/${name}`, e.ROUTE_MODULES[name][0], e.ROUTE_MODULES[name][1]) as unknown as ModuleOps<
    `${typeof ROUTE}/${N}`,
    RouteModules[N][0],
    RouteModules[N][1]
  >;
const agentCommand = <C extends string>(cmd: C) =>
  op('POST', `/tunnel_sessions/{id}/${cmd}` as `/tunnel_sessions/{id}/${C}`, a.AgentCommand, undefined);

export const operations = {
  ipPolicies: crud('/ip_policies', 'ip_policies', ip.IPPolicy, ip.IPPolicyCreate, ip.IPPolicyUpdate),
  ipPolicyRules: crud(
    '/ip_policy_rules',
    'ip_policy_rules',
    ip.IPPolicyRule,
    ip.IPPolicyRuleCreate,
    ip.IPPolicyRuleUpdate,
  ),
  ipRestrictions: crud(
    '/ip_restrictions',
    'ip_restrictions',
    ip.IPRestriction,
    ip.IPRestrictionCreate,
    ip.IPRestrictionUpdate,
  ),
  tunnelGroupBackends: crud(
    '/backends/tunnel_group',
    'backends',
    b.TunnelGroupBackend,
    b.TunnelGroupBackendCreate,
    b.TunnelGroupBackendUpdate,
  ),
  weightedBackends: crud(
    '/backends/weighted',
    'backends',
    b.WeightedBackend,
    b.WeightedBackendCreate,
    b.WeightedBackendUpdate,
  ),
  sshCredentials: crud(
    '/ssh_credentials',
    'ssh_credentials',
    c.SSHCredential,
    c.SSHCredentialCreate,
    c.SSHCredentialUpdate,
  ),
  certificateAuthorities: crud(
    '/certificate_authorities',
    'certificate_authorities',
    c.CertificateAuthority,
    c.CertificateAuthorityCreate,
    c.CertificateAuthorityUpdate,
  ),
  tunnelSessions: {
    list: list('/tunnel_sessions', 'tunnel_sessions', a.TunnelSession),
    get: op('GET', '/tunnel_sessions/{id}', undefined, a.TunnelSession),
    restart: agentCommand('restart'),
    stop: agentCommand('stop'),
    update: agentCommand('update'),
  },
  tunnels: {
    list: list('/tunnels', 'tunnels', a.Tunnel),
    get: op('GET', '/tunnels/{id}', undefined, a.Tunnel),
  },
  httpsEdges: crud('/edges/https', 'https_edges', e.HTTPSEdge, e.HTTPSEdgeCreate, e.HTTPSEdgeUpdate),
  tcpEdges: crud('/edges/tcp', 'tcp_edges', e.TCPEdge, e.TCPEdgeCreate, e.TCPEdgeUpdate),
  tlsEdges: crud('/edges/tls', 'tls_edges', e.TLSEdge, e.TLSEdgeCreate, e.TLSEdgeUpdate),
  httpsEdgeRoutes: {
    create: op('POST', '/edges/https/{edge_id}/routes', e.HTTPSEdgeRouteCreate, e.HTTPSEdgeRoute, true),
    get: op('GET', ROUTE, undefined, e.HTTPSEdgeRoute),
    update: op('PATCH', ROUTE, e.HTTPSEdgeRouteUpdate, e.HTTPSEdgeRoute),
    delete: op('DELETE', ROUTE, undefined, undefined),
  },
  httpsEdgeRouteModules: {
    backend: routeModule('backend'),
    ip_restriction: routeModule('ip_restriction'),
    circuit_breaker: routeModule('circuit_breaker'),
    compression: routeModule('compression'),
    request_headers: routeModule('request_headers'),
    response_headers: routeModule('response_headers'),
    webhook_verification: routeModule('webhook_verification'),
    oauth: routeModule('oauth'),
    saml: routeModule('saml'),
    oidc: routeModule('oidc'),
    websocket_tcp_converter: routeModule('websocket_tcp_converter'),
  },
  httpsEdgeModules: {
    tls_termination: moduleOps(
      '/edges/https/{id}/tls_termination',
      m.HTTPSTLSTerminationModuleIn,
      m.TLSTerminationModule,
    ),
  },
  tcpEdgeModules: {
    backend: moduleOps('/edges/tcp/{id}/backend', m.BackendModuleIn, m.BackendModule),
  },
  tlsEdgeModules: {
    backend: moduleOps('/edges/tls/{id}/backend', m.BackendModuleIn, m.BackendModule),
    mutual_tls: moduleOps('/edges/tls/{id}/mutual_tls', m.MutualTLSModuleIn, m.MutualTLSModule),
    tls_termination: moduleOps(
      '/edges/tls/{id}/tls_termination',
      m.TLSTerminationModuleIn,
      m.TLSTerminationModule,
    ),
  },
} as const;

export type Operations = typeof operations;

/** Flattens the table to [dotted name, definition] pairs. */
export function flattenOperations(tree: object = operations, prefix = ''): [string, AnyOp][] {
  const out: [string, AnyOp][] = [];
  for (const [k, v] of Object.entries(tree)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && 'kind' in v) out.push([name, v as AnyOp]);
    else out.push(...flattenOperations(v as object, name));
  }
  return out;
}

export const pathParams = (path: string): string[] =>
  [...path.matchAll(/\{(\w+)\}/g)].map((x) => x[1] as string);
