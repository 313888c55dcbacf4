// Conflicts between objects, named before the API refuses them: what the API keeps unique
// among resources of a kind (a binding's `conflict.key`) is compared with the other objects of
// the kind in the cache and with the remote resources of the kind's last bulk observation
// (resources made outside the cluster). Deciding is `findConflict` (pure); the engine turns a
// conflict into Stalled/Conflict and looks again shortly, spending no API call on it.
import type { AnyBinding, ResolveRef } from './binding.ts';
import { keyOf } from './informer.ts';
import type { KubeObject } from './kube.ts';
import { decodeMetadata } from './owner.ts';

export interface Conflict {
  /** The other object, or the remote resource's id. */
  with: string;
  message: string;
}

interface Candidate {
  obj: KubeObject;
  key: string;
}

/**
 * The conflict keys of the objects of a kind that hold their remote resource, recomputed only
 * when an object's spec or id changed since the last call.
 */
export class ConflictKeys {
  private readonly byObject = new Map<string, { rv?: string; key?: string }>();
  private readonly binding: AnyBinding;
  constructor(binding: AnyBinding) {
    this.binding = binding;
  }

  of(objects: KubeObject[], ref: (o: KubeObject) => ResolveRef): Candidate[] {
    const out: Candidate[] = [];
    const live = new Set<string>();
    for (const obj of objects) {
      const k = keyOf(obj);
      live.add(k);
      // Only objects that hold their resource (an id) take part: a key is computed once per
      // spec, and a bulk apply of new objects costs no key each (two new objects that collide
      // in the same breath meet the API's own refusal).
      const id = (obj.status as { id?: string } | undefined)?.id;
      if (!id) continue;
      const version = `${obj.metadata.uid}/${obj.metadata.generation}/${id}`;
      let e = this.byObject.get(k);
      if (!e || e.rv !== version) {
        e = { rv: version, key: this.keyOf(obj, ref(obj)) };
        this.byObject.set(k, e);
      }
      if (e.key !== undefined) out.push({ obj, key: e.key });
    }
    for (const k of this.byObject.keys()) if (!live.has(k)) this.byObject.delete(k);
    return out;
  }

  private keyOf(obj: KubeObject, ref: ResolveRef): string | undefined {
    try {
      return this.binding.conflict?.key(this.binding.desired(obj.spec ?? {}, ref));
    } catch {
      // a reference not resolved yet: no key to collide with
      return undefined;
    }
  }
}

/**
 * Another object or remote resource holding the key `self` wants. An object that already has
 * its resource under the key keeps it. A namespace sees the names of its own objects only.
 */
export function findConflict(input: {
  binding: AnyBinding;
  self: KubeObject;
  key: string;
  /** The id of self's remote resource when it already holds this key. */
  holds?: string;
  /** Self's remote id, if any (its own remote resource is no conflict). */
  selfId?: string;
  others: Candidate[];
  /** uids of every object of the kind in the cache. */
  live: Set<string>;
  /** Remote resources of the kind from the last bulk observation. */
  remotes: Iterable<{ id: string; remote: Record<string, unknown> & { metadata?: string } }>;
  clusterId: string;
}): Conflict | undefined {
  const { binding, self, key } = input;
  if (input.holds) return undefined;
  const ns = self.metadata.namespace;
  const live = input.live;
  const what = binding.conflict!.what;
  const name = (o: KubeObject) =>
    o.metadata.namespace === ns ? `${binding.kind} ${o.metadata.name}` : 'an object in another namespace';
  for (const o of input.others) {
    if (o.key !== key || o.obj.metadata.uid === self.metadata.uid) continue;
    const otherId = (o.obj.status as { id?: string } | undefined)?.id;
    if (otherId)
      return {
        with: keyOf(o.obj),
        message: `${name(o.obj)} has ${what}: delete one of them, or change this one`,
      };
  }
  for (const r of input.remotes) {
    if (r.id === input.selfId || binding.conflict!.key(binding.observe(r.remote as never)) !== key) continue;
    const owner = decodeMetadata(r.remote.metadata).owner;
    if (owner?.uid === self.metadata.uid) continue;
    // this installation's resource whose object is gone: deleted since the list (or about to be
    // adopted back by a restore), not a conflict
    if (owner?.cluster === input.clusterId && !live.has(owner.uid)) continue;
    const who = !owner
      ? `${r.id}, made outside the cluster,`
      : owner.cluster !== input.clusterId
        ? `${r.id}, another installation's,`
        : owner.object.split('/')[1] === ns
          ? `${r.id} (${owner.object.split('/')[0]} ${owner.object.split('/')[2]})`
          : // another tenant's resource: not even its id
            'a resource of an object in another namespace';
    return { with: r.id, message: `${who} has ${what}: delete one of them, or change this one` };
  }
  return undefined;
}
