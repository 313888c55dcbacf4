// Writes of an object's own metadata (its finalizers, its annotations), for every reconciler:
// guarded by the resourceVersion read, so a change made meanwhile is a 409, never overwritten.
import { FINALIZER } from './constants.ts';
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

/** The object's finalizers with the operator's. */
export function withFinalizer(obj: KubeObject): string[] {
  const f = obj.metadata.finalizers ?? [];
  return f.includes(FINALIZER) ? f : [...f, FINALIZER];
}

/** The object's finalizers without the operator's. */
export const withoutFinalizer = (obj: KubeObject): string[] =>
  (obj.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
