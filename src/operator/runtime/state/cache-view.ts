// What the engine reads of the operator's caches (cache.ts for the operator, edgectl plan's
// read-only cache for a preview): objects by key, references, owners and the ids of status.
import type { KubeObject } from '../kube/kube.ts';

/** What the engine reads from the informer caches (and, for an owner, the API server). */
export interface EngineCache {
  /** Reads the own kind's object for a queue key. */
  get(key: string): KubeObject | undefined;
  /** Reads any managed object from the informer caches (a Secret: metadata only). */
  lookup(kind: string, namespace: string, name: string): KubeObject | undefined;
  /** Every object of the own kind in the cache (conflicts between objects). */
  list(): KubeObject[];
  /**
   * Keys of the own kind's objects changed (added, updated, deleted) since the last call; the
   * first call starts counting and answers undefined: read `list` once instead.
   */
  changes(): string[] | undefined;
  /** The references another kind's object makes (cycle detection); undefined for an unknown kind. */
  referencesOf(kind: string, spec: Record<string, unknown>): { kind: string; name: string }[] | undefined;
  /** Objects in the cluster that reference this one ("Kind name"), for reference-aware deletion. */
  referrersOf(kind: string, namespace: string, name: string): string[];
  /** The object whose status holds this remote id, in any namespace. */
  managerOf(id: string): { kind: string; namespace: string; name: string } | undefined;
  /** This kind's object `key` took `id` as its own in a sync here (undefined: forget it). */
  confirm?(key: string, id: string | undefined): void;
  /** The id a sync here took as the object's own (status alone proves nothing), if any. */
  confirmedId?(kind: string, namespace: string, name: string): string | undefined;
  /** Names the Kubernetes objects behind remote ids in a message. */
  nameIds(text: string, namespace: string, known?: ReadonlySet<string>): string;
  /**
   * Whether the object an owner marker names (`Kind/namespace/name`, `uid`) still exists, as
   * the object in namespace `asking` may learn it: 'unknown' when that cannot be read.
   */
  ownerState(object: string, uid: string, asking: string): Promise<'live' | 'gone' | 'unknown'>;
  /**
   * The object in another namespace that manages the resource of this id, when this
   * namespace may not reach it by id (namespaces are tenants, unless the platform shares one).
   */
  managedElsewhere(
    id: string,
    namespace: string,
  ): { kind: string; namespace: string; name: string } | undefined;
}
