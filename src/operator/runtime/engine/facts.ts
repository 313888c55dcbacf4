// What an object says of itself, read alike by gather and plan: the owner marker it writes
// into its remote resource, whether a marker names another object of this installation (whose
// existence gather then reads, and the plan's ownership rule weighs), whether it only
// observes, and the ids its spec and annotations name.
import type { Owner } from '../bindings/owner.ts';
import { ID_ANNOTATION } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { Status } from './types.ts';

/** Whether the object a resource's marker names still exists (the cache's, or a GET's, word). */
export type OwnerState = 'live' | 'gone' | 'unknown';

/** The owner marker the object writes: `Kind/namespace/name` with its uid and cluster. */
export function ownerOf(kind: string, obj: KubeObject, clusterId: string): Owner {
  const m = obj.metadata;
  return { cluster: clusterId, uid: m.uid!, object: `${kind}/${m.namespace}/${m.name}` };
}

/** A marker naming another object of this installation: whether it still exists must be read. */
export function needsOwnerState(marker: Owner | undefined, self: Owner): boolean {
  return (
    !!marker && marker.cluster === self.cluster && marker.uid !== self.uid && marker.object !== self.object
  );
}

/** `managementPolicy: Observe`: read and report, never write to the account. */
export const isObserveOnly = (obj: KubeObject) =>
  (obj.spec as { managementPolicy?: string } | undefined)?.managementPolicy === 'Observe';

/**
 * The values of a spec's `...ID`/`...IDs` fields (`ipPolicyID`, `backendID`, `ipPolicyIDs`):
 * resources made outside the cluster, or so the user says. Whether one is another namespace's
 * is the cache's to say (its id index); the runtime knows no kind's id prefix, and a value that
 * is no managed resource's id (an OAuth `clientID`) is simply not found there.
 */
export function rawIds(value: unknown, path: string): { path: string; id: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => rawIds(v, `${path}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
    if (/IDs?$/.test(k)) {
      const ids = typeof v === 'string' ? [v] : Array.isArray(v) ? v : [];
      return ids.flatMap((x, i) =>
        typeof x === 'string' && x
          ? [{ path: `${path}.${k}${Array.isArray(v) ? `[${i}]` : ''}`, id: x }]
          : [],
      );
    }
    return rawIds(v, `${path}.${k}`);
  });
}

/** The ids an object names itself (its spec's raw ids, its id annotation, its status), and `more`. */
export function idsNamedBy(obj: KubeObject, ...more: string[]): Set<string> {
  const ids = new Set(more);
  for (const { id } of rawIds(obj.spec ?? {}, 'spec')) ids.add(id);
  const named = obj.metadata.annotations?.[ID_ANNOTATION];
  if (named) ids.add(named);
  const own = (obj.status as Status | undefined)?.id;
  if (own) ids.add(own);
  return ids;
}

/**
 * The id the annotation names for adoption (or, with managementPolicy Observe, to read), as
 * readId and observeOnlyId take it: observe-only reads it; a sync adopts it only while status
 * holds none (then status decides). None when it is already the object's own.
 */
export function adoptedId(obj: KubeObject): string | undefined {
  const named = obj.metadata.annotations?.[ID_ANNOTATION];
  const own = (obj.status as Status | undefined)?.id;
  const id = isObserveOnly(obj) || !own ? named : undefined;
  return id && own !== id ? id : undefined;
}
