// What the store holds, per collection: the shape a data file's record must have to be
// loaded. Derived from the wire schemas: a stored record is its resource as the API returns
// it, without what is computed when it is rendered (uri, references as {id, uri}, modules
// as top-level fields, an edge's routes) and with what is stored instead (the referenced
// ids, the modules by name as accepted, with their defaults).
import { z } from 'zod';
import * as a from '../api/schemas/agents.ts';
import * as b from '../api/schemas/backends.ts';
import * as c from '../api/schemas/credentials.ts';
import * as e from '../api/schemas/edges.ts';
import { EDGE_MODULES, type EdgeFamily, ROUTE_MODULES } from '../api/schemas/edges.ts';
import * as ip from '../api/schemas/ip.ts';
import { AgentSpec } from './agent-spec.ts';

type Shape = z.core.$ZodLooseShape;
const mask = (keys: readonly string[]) => Object.fromEntries(keys.map((k) => [k, true as const]));
/** A resource schema less the fields its rendering computes, plus the fields stored instead. */
const stored = (resource: z.ZodObject, rendered: readonly string[], instead: Shape = {}) =>
  resource.omit(mask([...('uri' in resource.shape ? ['uri'] : []), ...rendered]) as never).extend(instead);

/** Fields storing a module always fills in (handlers/modules.ts storeModule) and rendering relies on. */
const headers = { add: z.record(z.string(), z.string()), remove: z.array(z.string()) };
const STORED_DEFAULTS: Record<string, Shape> = { request_headers: headers, response_headers: headers };

/**
 * A module as stored: its input schema's output (defaults filled, so they are present) with
 * `enabled` always set; what storing adds beyond the input (SAML's signing certificate, an
 * HTTPS edge's terminate_at) is let through. Rules across the module's own fields held when
 * it was accepted and are not checked again.
 */
const storedModule = (name: string, input: z.ZodType) => {
  const shape = (input as z.ZodObject).shape as Record<string, z.ZodType>;
  const fields = Object.fromEntries(
    Object.entries(shape).map(([k, v]) => [k, v instanceof z.ZodDefault ? v.unwrap() : v]),
  );
  return z.looseObject({ ...fields, ...STORED_DEFAULTS[name], enabled: z.boolean() });
};
const modules = (table: Record<string, readonly [z.ZodType, z.ZodType]>) =>
  z.strictObject(
    Object.fromEntries(Object.entries(table).map(([n, [input]]) => [n, storedModule(n, input).optional()])),
  );

const edge = (family: EdgeFamily, resource: z.ZodObject, rendered: readonly string[] = []) =>
  stored(resource, [...Object.keys(EDGE_MODULES[family]), ...rendered], {
    modules: modules(EDGE_MODULES[family]),
  });

/** Every collection the emulator keeps, and the shape of its records. */
export const STORED_RECORDS: Record<string, z.ZodType> = {
  ipPolicies: stored(ip.IPPolicy, []),
  ipPolicyRules: stored(ip.IPPolicyRule, ['ip_policy'], { ip_policy_id: z.string() }),
  ipRestrictions: stored(ip.IPRestriction, ['ip_policies'], { ip_policy_ids: z.array(z.string()) }),
  tunnelGroupBackends: stored(b.TunnelGroupBackend, ['tunnels']),
  weightedBackends: stored(b.WeightedBackend, []),
  sshCredentials: stored(c.SSHCredential, []),
  certificateAuthorities: stored(c.CertificateAuthority, []),
  httpsEdges: edge('https', e.HTTPSEdge, ['routes']),
  httpsEdgeRoutes: stored(e.HTTPSEdgeRoute, Object.keys(ROUTE_MODULES), { modules: modules(ROUTE_MODULES) }),
  tcpEdges: edge('tcp', e.TCPEdge),
  tlsEdges: edge('tls', e.TLSEdge),
  tunnelSessions: stored(a.TunnelSession, ['credential'], { agent: z.string(), credential_id: z.string() }),
  tunnels: stored(a.Tunnel, ['tunnel_session', 'endpoint', 'backends'], {
    session_id: z.string(),
    endpoint_id: z.string().optional(),
  }),
  // simulated agents: not an API resource; the spec they were started from and their state
  agents: z.object({
    id: z.string(),
    name: z.string(),
    spec: AgentSpec,
    version: z.string(),
    pending_version: z.string().nullable(),
    session_id: z.string(),
    state: z.string(),
    update_done_at: z.number().nullable(),
  }),
};
