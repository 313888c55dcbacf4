// Writes of an object's own metadata (its finalizers, its annotations), for every reconciler:
// guarded by the resourceVersion read, so a change made meanwhile is a 409, never overwritten.
import type { Kube, KubeObject, ResourcePath } from './kube.ts';

/** Patches the object's metadata and takes the answer's metadata into `obj`. */
export async function patchMeta(
  kube: Pick<Kube, 'patch'>,
  resource: ResourcePath,
  obj: KubeObject,
  meta: { finalizers?: string[]; annotations?: Record<string, string | null> },
): Promise<void> {
  const updated = await kube.patch(resource, obj.metadata.namespace, obj.metadata.name, {
    metadata: { resourceVersion: obj.metadata.resourceVersion, ...meta },
  });
  obj.metadata = updated.metadata;
}
