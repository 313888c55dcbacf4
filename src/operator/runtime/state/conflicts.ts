// Conflicts between objects, named before the API refuses them: what the API keeps unique
// among resources of a kind (a binding's `conflict.key`) is compared with the other objects of
// the kind in the cache and with the remote resources of the kind's last bulk observation
// (resources made outside the cluster). Deciding is `findConflict` (pure); the engine turns a
// conflict into Stalled/Conflict and looks again shortly, spending no API call on it.
import type { AnyBinding, RemoteBase, ResolveRef } from '../bindings/binding.ts';
import { decodeMetadata } from '../bindings/owner.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { textDigest } from './fingerprint.ts';
import { type Holders, holdersOf, withHolder, withoutHolder } from './holders.ts';

export interface Conflict {
  /** The other object, or the remote resource's id. */
  with: string;
  message: string;
}

export interface Candidate {
  obj: KubeObject;
  key: string;
}

/**
 * What the indexes keep of a conflict key: its 72-bit fingerprint. A key is built from the
 * desired resource (an SSH credential's is its whole public key, a route's a chain of
 * concatenations), and the indexes keep one per object and one per listed resource.
 */
export const indexKey = (key: string): string => textDigest(key);

/**
 * The conflict keys of the objects of a kind that hold their remote resource, recomputed only
 * when an object's spec or id changed. Kept up to date from the cache's changes (`update`), so a
 * reconcile costs the objects that changed since the last one, not every object of the kind:
 * a scan per reconcile made a bulk apply of n objects cost n squared.
 */
export class ConflictKeys {
  /**
   * What each object's key was computed from, not the object: the cache holds that, and a copy
   * kept here would be an older version of every object (a full object each at thousands).
   */
  private readonly byObject = new Map<
    string,
    { uid?: string; generation?: number; id: string; key?: string }
  >();
  /** The objects as they are now (the cache's look-up, or the list `of` was given). */
  private lookup: (key: string) => KubeObject | undefined = () => undefined;
  /** Conflict key (its indexKey) -> the object keys holding it. */
  private readonly byKey = new Map<string, Holders>();
  /** uids of every object of the kind in the cache (holding an id or not), and each object's. */
  private readonly uids = new Set<string>();
  private readonly uidOf = new Map<string, string>();
  private readonly binding: AnyBinding;
  constructor(binding: AnyBinding) {
    this.binding = binding;
  }

  /** Every object of the kind at once (tests, and a cache without a change feed). */
  of(objects: KubeObject[], ref: (o: KubeObject) => ResolveRef): this {
    const live = new Map(objects.map((o) => [keyOf(o), o]));
    this.lookup = (k) => live.get(k);
    for (const k of [...this.byObject.keys()]) if (!live.has(k)) this.set(k, undefined, ref);
    for (const k of [...this.uidOf.keys()]) if (!live.has(k)) this.set(k, undefined, ref);
    for (const [k, obj] of live) this.set(k, obj, ref);
    return this;
  }

  /** The objects whose keys changed (added, updated or gone: `get` says which). */
  update(
    changed: Iterable<string>,
    get: (key: string) => KubeObject | undefined,
    ref: (o: KubeObject) => ResolveRef,
  ): void {
    this.lookup = get;
    for (const k of changed) this.set(k, get(k), ref);
  }

  /**
   * The objects holding a conflict key. The index finds them by fingerprint; each one's key is
   * computed again (only objects sharing a fingerprint are: a conflict, or one key in two
   * accounts), so the key itself decides.
   */
  holding(key: string, ref: (o: KubeObject) => ResolveRef): Candidate[] {
    const out: Candidate[] = [];
    for (const k of holdersOf(this.byKey.get(indexKey(key)))) {
      const obj = this.byObject.has(k) ? this.lookup(k) : undefined;
      if (obj && this.keyOf(obj, ref(obj), false) === key) out.push({ obj, key });
    }
    return out;
  }

  /** Whether an object of this uid is in the cache. */
  readonly live = { has: (uid: string): boolean => this.uids.has(uid) };

  private set(k: string, obj: KubeObject | undefined, ref: (o: KubeObject) => ResolveRef): void {
    const e = this.byObject.get(k);
    const uid = obj?.metadata.uid;
    const oldUid = this.uidOf.get(k);
    if (oldUid !== undefined && oldUid !== uid) {
      this.uids.delete(oldUid);
      this.uidOf.delete(k);
    }
    if (uid) {
      this.uids.add(uid);
      this.uidOf.set(k, uid);
    }
    // Only objects that hold their resource (an id) take part: a key is computed once per
    // spec, and a bulk apply of new objects costs no key each (two new objects that collide
    // in the same breath meet the API's own refusal).
    const id = (obj?.status as { id?: string } | undefined)?.id;
    const generation = obj?.metadata.generation;
    if (e && uid === e.uid && generation === e.generation && id === e.id) return;
    if (e) {
      this.unindex(k, e.key);
      this.byObject.delete(k);
    }
    if (!obj || !id) return;
    const key = this.keyOf(obj, ref(obj));
    this.byObject.set(k, { uid, generation, id, key });
    if (key !== undefined) this.byKey.set(key, withHolder(this.byKey.get(key), k));
  }

  private unindex(k: string, key: string | undefined): void {
    if (key === undefined) return;
    const left = withoutHolder(this.byKey.get(key), k);
    if (left === undefined) this.byKey.delete(key);
    else this.byKey.set(key, left);
  }

  /** The object's conflict key, as indexed (indexKey) unless `indexed` is false. */
  private keyOf(obj: KubeObject, ref: ResolveRef, indexed = true): string | undefined {
    const c = this.binding.conflict;
    try {
      const key = c?.key(this.binding.desired(obj.spec ?? {}, ref));
      return key === undefined || !indexed ? key : indexKey(key);
    } catch {
      // a reference not resolved yet: no key to collide with
      return undefined;
    }
  }
}

/**
 * A listed resource's conflict key as indexed (indexKey), for the kind's bulk list to index
 * (none for a shape it cannot read).
 */
export function listedConflictKey(
  binding: AnyBinding,
): ((remote: RemoteBase) => string | undefined) | undefined {
  const c = binding.conflict;
  if (!c) return undefined;
  return (remote) => {
    try {
      return indexKey(c.key(binding.fromRemote(remote as never)));
    } catch {
      return undefined;
    }
  };
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
  /** Whether an object of the kind with this uid is in the cache. */
  live: { has(uid: string): boolean };
  /** Remote resources of the kind from the last bulk observation. */
  remotes: Iterable<{ id: string; remote: Record<string, unknown> & { metadata?: string } }>;
  clusterId: string;
  /** The namespace may adopt what no object of it made: it may learn such a resource's id. */
  mayAdopt?: boolean;
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
    if (r.id === input.selfId || binding.conflict!.key(binding.fromRemote(r.remote as never)) !== key)
      continue;
    const owner = decodeMetadata(r.remote.metadata).owner;
    if (owner?.uid === self.metadata.uid) continue;
    // this installation's resource whose object is gone: deleted since the list (or about to be
    // adopted back by a restore), not a conflict
    if (owner?.cluster === input.clusterId && !live.has(owner.uid)) continue;
    // a resource no object here made: the platform's or another installation's, its id not the tenant's to learn
    const said = input.mayAdopt !== false;
    const who = !owner
      ? `${said ? r.id : 'another resource of the account'}, made outside the cluster,`
      : owner.cluster !== input.clusterId
        ? said
          ? `${r.id}, another installation's,`
          : 'a resource of another installation'
        : owner.object.split('/')[1] === ns
          ? `${r.id} (${owner.object.split('/')[0]} ${owner.object.split('/')[2]})`
          : // another tenant's resource: not even its id
            'a resource of an object in another namespace';
    return { with: r.id, message: `${who} has ${what}: delete one of them, or change this one` };
  }
  return undefined;
}
