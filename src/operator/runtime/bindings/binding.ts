// What a kind declares. The engine does everything else: finalizer, references, create,
// adopt, update, drift, delete, status, conditions, events. A binding knows the API only
// through the typed client, and Kubernetes not at all.
import type { z } from 'zod';
import type { EdgeClient, ListOptions } from '../../../api/client.ts';

/** Fields every remote resource has; the engine owns description and metadata. */
export interface RemoteBase {
  id: string;
  uri: string;
  created_at?: string;
  description?: string;
  metadata?: string;
}
export interface Common {
  description: string;
  metadata: string;
}

export interface Reference {
  /** Spec path, for messages ("spec.ipPolicyRef"). */
  path: string;
  kind: string;
  name: string;
}

/** Resolves a reference to the id of the referenced object's remote resource. */
export type ResolveRef = (kind: string, name: string) => string;
/** Resolves a Secret key (already read by the engine) to its value. */
export type ResolveSecret = (name: string, key: string) => string;

export interface SecretReference {
  path: string;
  name: string;
  key: string;
}

/**
 * A module of the remote resource (a route's OAuth, an edge's TLS termination...): sent
 * inline at create, then PUT when it differs and DELETEd when the spec drops it.
 */
export interface ModuleBinding<Spec = Record<string, unknown>> {
  /** Wire name: the key in the remote resource and the module's path segment. */
  name: string;
  /** The module's input body, or null when the spec does not configure it. */
  desired(spec: Spec, ref: ResolveRef, secret: ResolveSecret): Record<string, unknown> | null;
  /** Dotted paths of secret values in the body ('*' matches any key): compared by hash, never echoed. */
  secretPaths?: string[];
  /** `owner` is the desired state of the resource the module belongs to (a route's edge_id). */
  put(
    c: EdgeClient,
    id: string,
    body: Record<string, unknown>,
    owner: Record<string, unknown>,
  ): Promise<unknown>;
  delete(c: EdgeClient, id: string, owner: Record<string, unknown>): Promise<unknown>;
}

/** What `edgectl export` gives a binding to turn a remote resource back into a spec. */
export interface ExportContext {
  /** The exported object holding this id, or undefined: the spec then keeps the raw id. */
  ref(id: string): { kind: string; name: string } | undefined;
  /** Where a secret value of the resource goes: a key of a Secret beside the object. */
  secret(key: string, value: string): { name: string; key: string };
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'boolean' | 'date';
  jsonPath: string;
  priority?: number;
  description?: string;
}

export interface Binding<
  Spec = Record<string, unknown>,
  Remote extends RemoteBase = RemoteBase,
  Desired extends Record<string, unknown> = Record<string, unknown>,
> {
  kind: string;
  plural: string;
  shortNames: string[];
  /** One paragraph for `kubectl explain`. */
  description: string;
  /** Kind-specific spec fields (camelCase); the engine adds description, metadata, deletionPolicy. */
  spec: z.ZodObject;
  /** Kind-specific status fields. */
  status?: z.ZodObject;
  columns?: PrinterColumn[];
  /**
   * Whether traffic of this kind is served by online tunnels, which status then shows:
   * 'serves', the tunnels the API lists as serving this resource; 'through', the sum of the
   * referenced objects' (a weighted backend's children, a route's or an edge's backend).
   */
  tunnels?: 'serves' | 'through';
  /**
   * The backends a 'through' kind names by id rather than by reference: `listed` when the API
   * lists the tunnels serving that id (a tunnel group backend); any other is counted only
   * through an object of the namespace that holds it.
   */
  tunnelIds?(spec: Spec): { id: string; listed: boolean }[];
  references?(spec: Spec): Reference[];
  /**
   * The kind of the object this one belongs to, through one of its references (a route's
   * edge, a rule's policy): `edgectl trace` shows it under that object instead of the other
   * way round.
   */
  partOf?: string;
  /** Secrets the spec names; the engine watches them and re-applies on rotation. */
  secrets?(spec: Spec): SecretReference[];
  /** The remote state the spec asks for, in the API's field names. */
  desired(spec: Spec, ref: ResolveRef): Desired;
  /**
   * The parent ids a GET of a deleting object's resource needs, from its status (its
   * references may be gone by then): a route's edge.
   */
  desiredFromStatus?(status: Record<string, unknown>): Partial<Desired>;
  modules?: ModuleBinding<Spec>[];
  /**
   * What the API keeps unique among resources of the kind (the same CIDR in one IP policy, one
   * route per match on an edge...), from a desired or an observed shape: two objects with one
   * key collide, and the later one is told so before a request the API must refuse.
   */
  conflict?: { key(d: Desired): string; what: string };
  /** The same shape read back from a remote resource, for comparison. */
  fromRemote(remote: Remote): Desired;
  /** Fields the API's update accepts; any other difference cannot be put right in place. */
  updatable: readonly (keyof Desired & string)[];
  api: {
    /** The body also carries the configured modules, inline. */
    create(c: EdgeClient, body: Desired & Common & Record<string, unknown>): Promise<Remote>;
    get(c: EdgeClient, id: string, desired: Desired): Promise<Remote>;
    update(c: EdgeClient, id: string, patch: Partial<Desired & Common>, desired: Desired): Promise<Remote>;
    delete(c: EdgeClient, id: string, status: Record<string, unknown>): Promise<void>;
    /**
     * Every remote resource of the kind that could be this object's; with an empty
     * `desired`, every one of the account (bulk observation). Paged by the client.
     */
    list(c: EdgeClient, desired: Partial<Desired>, opts?: ListOptions): AsyncIterable<Remote>;
  };
  /**
   * Another kind whose resources this kind's list carries in a field (HTTPSEdgeRoute: the routes
   * of each listed HTTPS edge). One pass of this kind's list observes both kinds, on this kind's
   * schedule; the resources this kind keeps from it are without the field, as `api.create`,
   * `get` and `update` must return them (`api.list` returns them with it).
   */
  carries?: { kind: string; field: string };
  /** Kind-specific status fields from the remote resource. */
  statusOf?(remote: Remote, desired: Desired): Record<string, unknown>;
  /**
   * The spec that asks for exactly this remote resource, modules included (`edgectl export`):
   * applied with the id annotation it adopts the resource without an API write. The engine's
   * fields (description, metadata) are not the binding's. What a user would write: the spec's
   * input shape, defaults left out.
   */
  exportSpec(remote: Remote, x: ExportContext): Record<string, unknown>;
}

/** A reference to the exported object holding `id`, else the id itself: `{ [refKey]: {name} }` or `{ [idKey]: id }`. */
export function refOrID<R extends string, I extends string>(
  x: ExportContext,
  id: string,
  refKey: R,
  idKey: I,
): { [K in R]?: { name: string } } & { [K in I]?: string } {
  const r = x.ref(id);
  return (r ? { [refKey]: { name: r.name } } : { [idKey]: id }) as never;
}

/** The object without its undefined fields (a body the API validates strictly, a YAML without nulls). */
export const compact = <T extends Record<string, unknown>>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** `enabled: false` when the module is off; nothing when on (the spec's default). */
export const exportEnabled = (m: { enabled?: boolean }) => (m.enabled === false ? { enabled: false } : {});

// biome-ignore lint/suspicious/noExplicitAny: the registry holds bindings of every shape
export type AnyBinding = Binding<any, any, any>;

export const defineBinding = <Spec, Remote extends RemoteBase, Desired extends Record<string, unknown>>(
  b: Binding<Spec, Remote, Desired>,
): Binding<Spec, Remote, Desired> => b;

/** A CRUD family of the client (c.ipPolicyRules, c.httpsEdges, ...). */
interface CrudFamily<Remote> {
  create(body: never): Promise<Remote>;
  get(id: string): Promise<Remote>;
  update(id: string, patch: never): Promise<Remote>;
  delete(id: string): Promise<undefined>;
  list(opts?: ListOptions): AsyncIterable<Remote>;
}

/** The api block of a binding whose resource is a plain CRUD family of the client. */
export function crudApi<Remote extends RemoteBase>(pick: (c: EdgeClient) => CrudFamily<Remote>) {
  return {
    create: (c: EdgeClient, body: Record<string, unknown>) => pick(c).create(body as never),
    get: (c: EdgeClient, id: string) => pick(c).get(id),
    update: (c: EdgeClient, id: string, patch: Record<string, unknown>) => pick(c).update(id, patch as never),
    delete: async (c: EdgeClient, id: string) => {
      await pick(c).delete(id);
    },
    list: (c: EdgeClient, _d: unknown, opts?: ListOptions) => pick(c).list(opts),
  };
}
