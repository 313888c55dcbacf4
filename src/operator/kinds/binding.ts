// What a kind declares. The engine does everything else: finalizer, references, create,
// adopt, update, drift, delete, status, conditions, events. A binding knows the API only
// through the typed client, and Kubernetes not at all.
import type { z } from 'zod';
import type { EdgeClient } from '../../api/client.ts';

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
  references?(spec: Spec): Reference[];
  /** The remote state the spec asks for, in the API's field names. */
  desired(spec: Spec, ref: ResolveRef): Desired;
  /** The same shape read back from a remote resource, for comparison. */
  observe(remote: Remote): Desired;
  /** Fields the API's update accepts; any other difference cannot be put right in place. */
  updatable: readonly (keyof Desired & string)[];
  api: {
    create(c: EdgeClient, body: Desired & Common): Promise<Remote>;
    get(c: EdgeClient, id: string, desired: Desired): Promise<Remote>;
    update(c: EdgeClient, id: string, patch: Partial<Desired & Common>, desired: Desired): Promise<Remote>;
    delete(c: EdgeClient, id: string, status: Record<string, unknown>): Promise<void>;
    /** Every remote resource of the kind that could be this object's (crash recovery only). */
    list(c: EdgeClient, desired: Desired): AsyncIterable<Remote>;
  };
  /** Kind-specific status fields from the remote resource. */
  statusOf?(remote: Remote, desired: Desired): Record<string, unknown>;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds bindings of every shape
export type AnyBinding = Binding<any, any, any>;

export const defineBinding = <Spec, Remote extends RemoteBase, Desired extends Record<string, unknown>>(
  b: Binding<Spec, Remote, Desired>,
): Binding<Spec, Remote, Desired> => b;
