// The owner marker: what an object writes into its remote resource's metadata, and whether
// the marker a resource carries names another object of this installation (whose existence
// is then read, and weighed by the plan's ownership rule).
import type { Owner } from '../bindings/owner.ts';
import type { KubeObject } from '../kube/kube.ts';

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
