// What an informer keeps of each object it caches, at thousands of objects: the object without
// its managedFields (often most of its size, and nothing here reads it; controller-runtime drops
// it too) and without kubectl's last-applied annotation (a second copy of the object as the user
// applied it, on every object that `kubectl apply` or Argo CD's default sync wrote; nothing here
// reads it either), and one copy of the strings many objects repeat.
import { ID_ANNOTATION } from '../constants.ts';
import type { KubeObject } from './kube.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * JSON.parse gives each object its own copy of every string value: the API version, the kind,
 * the namespace, the finalizer, the Ready condition's words, and the times to the second (a bulk
 * apply creates hundreds of objects a second; an object's creation, its resource's and its
 * Ready condition's are often one second). One copy of each is kept here, only for those fields
 * (their values are few: a name or an id would only fill the table).
 */
const common = new Map<string, string>();
const one = (s: string): string => {
  const had = common.get(s);
  if (had !== undefined) return had;
  // a bound against a field that turns out to vary (a condition's reason, a namespace per tenant)
  if (common.size >= 4096) common.clear();
  common.set(s, s);
  return s;
};
/** Shares the string at o[k], if there is one there (nothing is added). */
const share = (o: Record<string, unknown>, k: string) => {
  const v = o[k];
  if (typeof v === 'string') o[k] = one(v);
};

/**
 * The object as cached: managedFields and the last-applied annotation dropped by copying what
 * held them without them (a `delete` turns an object into a dictionary-mode one, 450 bytes more
 * per cached object), the common strings shared. Mutates and returns `o`, which no one else
 * holds yet.
 */
export function leanObject(o: KubeObject): KubeObject {
  share(o, 'apiVersion');
  share(o, 'kind');
  const m = o.metadata;
  if (m) {
    if ('managedFields' in m) {
      const { managedFields: _, ...rest } = m as typeof m & { managedFields?: unknown };
      o.metadata = rest;
    }
    const ann = o.metadata.annotations;
    if (ann && LAST_APPLIED in ann) {
      const { [LAST_APPLIED]: _, ...rest } = ann;
      o.metadata.annotations = rest;
    }
    share(o.metadata as unknown as Record<string, unknown>, 'namespace');
    share(o.metadata as unknown as Record<string, unknown>, 'creationTimestamp');
    const f = o.metadata.finalizers;
    if (Array.isArray(f)) for (let i = 0; i < f.length; i++) if (typeof f[i] === 'string') f[i] = one(f[i]!);
  }
  const status = o.status as Record<string, unknown> | undefined;
  if (status && typeof status === 'object') {
    share(status, 'account');
    share(status, 'createdAt');
    // the id annotation repeats status.id: one copy of it
    const ann = o.metadata?.annotations;
    if (ann && typeof status.id === 'string' && ann[ID_ANNOTATION] === status.id)
      ann[ID_ANNOTATION] = status.id;
  }
  const conditions = status?.conditions;
  if (Array.isArray(conditions))
    for (const c of conditions)
      if (c && typeof c === 'object') {
        const cond = c as Record<string, unknown>;
        share(cond, 'type');
        share(cond, 'status');
        share(cond, 'reason');
        share(cond, 'lastTransitionTime');
      }
  return o;
}
