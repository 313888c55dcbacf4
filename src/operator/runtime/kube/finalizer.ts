// A reconciler's own finalizer, in the shape of kube-rs's `kube_runtime::finalizer`: a run is
// either Apply (the object lives) or Cleanup (it is being deleted and still carries the
// finalizer). The finalizer goes on before Apply's work, so nothing Apply makes can be left
// behind by a delete; it comes off only once Cleanup says it is done. A deleted object without
// it has nothing left to clean up: no run at all.
import { FINALIZER } from '../constants.ts';
import type { Kube, KubeObject, ResourcePath } from './kube.ts';
import { patchMeta } from './object-meta.ts';

export type FinalizerEvent = 'apply' | 'cleanup';

/**
 * What a run of this object is: Apply ('add' first when the finalizer is missing), Cleanup,
 * or nothing (deleted, and the finalizer already gone).
 */
export function finalizerEvent(obj: KubeObject, name = FINALIZER): 'add' | FinalizerEvent | 'none' {
  const present = !!obj.metadata.finalizers?.includes(name);
  if (obj.metadata.deletionTimestamp) return present ? 'cleanup' : 'none';
  return present ? 'apply' : 'add';
}

/** The finalizers once `name` is held (or removed); undefined when that changes nothing. */
export function finalizersWith(
  current: string[] | undefined,
  name: string,
  hold: boolean,
): string[] | undefined {
  const list = current ?? [];
  if (list.includes(name) === hold) return undefined;
  return hold ? [...list, name] : list.filter((x) => x !== name);
}

/** The object's finalizers with `name` held (as they are when it already is). */
export const withFinalizer = (obj: KubeObject, name = FINALIZER): string[] =>
  finalizersWith(obj.metadata.finalizers, name, true) ?? obj.metadata.finalizers ?? [];

/** The object's finalizers without `name`. */
export const withoutFinalizer = (obj: KubeObject, name = FINALIZER): string[] =>
  finalizersWith(obj.metadata.finalizers, name, false) ?? obj.metadata.finalizers ?? [];

/** Where the finalizer is written: the object's resource, through a resourceVersion-guarded patch. */
export interface FinalizerTarget {
  kube: Pick<Kube, 'patch'>;
  resource: ResourcePath;
  /** The finalizer (default: the operator's). */
  name?: string;
}

/** The finalizer on `obj` (written only when missing); `obj` takes the answer's metadata. */
export async function addFinalizer(t: FinalizerTarget, obj: KubeObject): Promise<void> {
  await patchMeta(t.kube, t.resource, obj, { finalizers: withFinalizer(obj, t.name) });
}

/** The finalizer off `obj`; `obj` takes the answer's metadata. */
export async function removeFinalizer(t: FinalizerTarget, obj: KubeObject): Promise<void> {
  await patchMeta(t.kube, t.resource, obj, { finalizers: withoutFinalizer(obj, t.name) });
}

/** What a run returns to the helper: its value, and for Cleanup whether the finalizer may go. */
export interface Finalized<T> {
  value: T;
  /** Cleanup only: everything is cleaned up, the finalizer goes. */
  done?: boolean;
}

/**
 * Runs `reconcile` for the object's event: the finalizer added before Apply, removed after a
 * Cleanup that is done. `event` 'none' (deleted, no finalizer): no run, `value` undefined.
 * `removed`: the finalizer came off in this run.
 */
export async function finalizer<T>(
  t: FinalizerTarget,
  obj: KubeObject,
  reconcile: (event: FinalizerEvent) => Promise<Finalized<T>>,
): Promise<{ event: FinalizerEvent | 'none'; value?: T; removed: boolean }> {
  const step = finalizerEvent(obj, t.name);
  if (step === 'none') return { event: 'none', removed: false };
  if (step === 'add') await addFinalizer(t, obj);
  const event = step === 'cleanup' ? 'cleanup' : 'apply';
  const out = await reconcile(event);
  if (event !== 'cleanup' || !out.done) return { event, value: out.value, removed: false };
  await removeFinalizer(t, obj);
  return { event, value: out.value, removed: true };
}
