// Informer events into queue keys: an object's own key (urgent for an edit of something that
// exists), the objects that reference it, a delete waiting on it, the id index and the
// reverse index of references kept current. Handlers only enqueue.

import { RECONCILE_REQUESTED_ANNOTATION } from '../constants.ts';
import { priorityOf, requestedReconcile } from '../engine/index.ts';
import { keyAt, keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { SecretStore } from '../kube/secrets.ts';
import type { Metrics } from '../metrics.ts';
import type { ObjectCache } from '../state/cache.ts';
import { isAccountRef, type References, referencesOf, refOf } from '../state/references.ts';
import type { Controller } from './worker.ts';

/**
 * Whether an informer event leaves what the object references as it was. References come from
 * the spec (and namespace): a write that left the generation as it was (status, annotations,
 * the finalizer, most of a bulk apply's events) references what it did. Not an object deleted
 * and made again while the watch was away (a relist's update: the same generation, another
 * uid and spec).
 */
export function referencesKept(
  type: 'add' | 'update' | 'delete',
  obj: KubeObject,
  old?: KubeObject,
): boolean {
  return (
    type === 'update' &&
    obj.metadata.generation !== undefined &&
    obj.metadata.generation === old?.metadata.generation &&
    obj.metadata.uid === old.metadata.uid
  );
}

export class Dispatch {
  private readonly o: {
    controllers: ReadonlyMap<string, Controller>;
    references: References;
    cache: ObjectCache;
    secrets: () => SecretStore | undefined;
    metrics: Metrics;
    /** An account an object stopped using (`Kind/ns/name`): a delete waiting on its users may go. */
    accountUnused?: (ref: string) => void;
  };

  constructor(o: Dispatch['o']) {
    this.o = o;
  }

  /** By kind, the objects whose last status said Stalled/Conflict: a delete lets them go on. */
  private readonly conflicted = new Map<string, Set<string>>();

  private noteConflict(kind: string, type: 'add' | 'update' | 'delete', obj: KubeObject): void {
    const stalled =
      type !== 'delete' &&
      (obj.status?.conditions as { type: string; reason?: string }[] | undefined)?.some(
        (x) => x.type === 'Stalled' && x.reason === 'Conflict',
      );
    const set = this.conflicted.get(kind) ?? new Set<string>();
    if (stalled) this.conflicted.set(kind, set.add(keyOf(obj)));
    else set.delete(keyOf(obj));
  }

  /** Handlers only enqueue. */
  onEvent(c: Controller, type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    this.o.cache.noteIds(c.binding.kind, type, obj, old);
    if (c.binding.conflict) this.noteConflict(c.binding.kind, type, obj);
    // keep the reverse index of references current
    if (!referencesKept(type, obj, old)) {
      const refs = type === 'delete' ? [] : referencesOf(c.binding, obj);
      const before = this.o.references.set(c.binding.kind, keyOf(obj), refs);
      this.unreferenced(before, refs);
    }
    if (type === 'delete') this.onDelete(c, obj);
    else this.onChange(c, type, obj, old);
    // objects referencing this one react to it getting (or losing) an id. Not to its deletion
    // starting: it keeps its remote resource (and id) while they use it, so they have nothing
    // to do until it is gone; re-reading each of them then cost a GET per referrer.
    const idChanged =
      (obj.status as { id?: string } | undefined)?.id !== (old?.status as { id?: string } | undefined)?.id;
    if (type !== 'update' || idChanged) this.enqueueDependents(c.binding.kind, obj);
    this.o.metrics.managedObjects.set(
      { kind: c.binding.kind },
      c.informers.reduce((n, i) => n + i.cache.size, 0),
    );
  }

  /** What an object stopped referencing: a delete waiting on it may go; a Secret's data may go. */
  private unreferenced(before: string[], refs: string[]): void {
    // an object waiting to be deleted until nothing references it may go now
    for (const r of before) {
      if (refs.includes(r) || r.startsWith('Secret/')) continue;
      if (isAccountRef(r)) {
        this.o.accountUnused?.(r);
        continue;
      }
      const [kind, rns, rname] = r.split('/');
      this.o.controllers.get(kind!)?.queue.add(keyAt(rns, rname!));
    }
    // the data of a Secret nothing references any more is not kept
    for (const r of before)
      if (r.startsWith('Secret/') && !this.o.references.referenced(r)) {
        const [, sns, sname] = r.split('/');
        this.o.secrets()?.drop(sns!, sname!);
      }
  }

  private onDelete(c: Controller, obj: KubeObject): void {
    const key = keyOf(obj);
    // an object that collided with this one may go on now
    for (const k of this.conflicted.get(c.binding.kind) ?? []) c.queue.add(k);
    this.o.references.remove(c.binding.kind, key);
    c.engine.readAfresh(key);
    c.engine.drop(key);
    // a referenced object waiting on its dependents to go may now be deletable
    for (const r of c.binding.references?.(obj.spec ?? {}) ?? [])
      this.o.controllers.get(r.kind)?.queue.add(keyAt(obj.metadata.namespace ?? '', r.name));
  }

  /** A change (an edit, a delete, a reconcile asked for) takes the engine's priority (priorityOf). */
  private onChange(c: Controller, type: 'add' | 'update', obj: KubeObject, old?: KubeObject): void {
    const key = keyOf(obj);
    const requested = obj.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
    const changed =
      type === 'update' &&
      (obj.metadata.generation !== old?.metadata.generation ||
        (!!obj.metadata.deletionTimestamp && !old?.metadata.deletionTimestamp) ||
        (!!requested && requested !== old?.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION]));
    const urgent = changed && priorityOf(obj, requestedReconcile(obj)) === 'urgent';
    // not a change (a status write's event, a resync): the object's own priority, so that a
    // delete waiting on its dependents is not put back behind creates
    c.queue.add(key, urgent ? 'urgent' : undefined);
    if (urgent) c.engine.escalate(key);
  }

  enqueueDependents(kind: string, obj: KubeObject): void {
    for (const { kind: k, key } of this.o.references.dependentsOf(
      refOf(kind, obj.metadata.namespace, obj.metadata.name),
    )) {
      const other = this.o.controllers.get(k);
      // a new id or a rotated Secret must be looked at even when no resync is due
      other?.engine.readAfresh(key);
      other?.queue.add(key);
    }
  }
}
