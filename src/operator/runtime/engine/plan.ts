// Pure decisions: from what the spec wants, what status knows, what this process remembers
// and what the API shows, what to do. No I/O: the engine reads before and executes after.
// The rest of the plan: plan-changes.ts (what differs), plan-delete.ts, plan-observe-only.ts.

import type { AnyBinding } from '../bindings/binding.ts';
import { decodeMetadata, type Owner } from '../bindings/owner.ts';
import {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  ID_ANNOTATION,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
} from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { Priority } from '../scheduler/priority.ts';
import { type Candidate, findConflict } from '../state/conflicts.ts';
import type { Snapshot } from '../state/observer.ts';
import { isObserveOnly, needsOwnerState, type OwnerState, ownerOf } from './facts.ts';
import { CONFLICT_RECHECK_MS } from './failure.ts';
import { type LastSync, statusDigest } from './memo.ts';
import {
  type ModuleStep,
  ownerOfDigests,
  planModules,
  planUpdate,
  type Stall,
  stallWith,
  updateEvent,
} from './plan-changes.ts';
import type { Seen, Status, Wanted } from './types.ts';

export { isObserveOnly, needsOwnerState, type OwnerState, ownerOf } from './facts.ts';

const statusOf = (obj: KubeObject) => (obj.status ?? {}) as Status;

export const isPaused = (obj: KubeObject) => obj.metadata.annotations?.[PAUSED_ANNOTATION] === 'true';

/** A reconcile-requested-at value not handled yet. */
export function requestedReconcile(obj: KubeObject): string | undefined {
  const v = obj.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
  return v && v !== statusOf(obj).lastHandledReconcileAt ? v : undefined;
}

/**
 * The one definition of priority, for the work queue and the API budget alike: a user's
 * change to something that exists (an edit, a delete) or a reconcile asked for by annotation
 * is urgent, before creates (high), both before observation (low, the bulk lists).
 */
export function priorityOf(obj: KubeObject, requested: string | undefined): Priority {
  const status = statusOf(obj);
  return obj.metadata.deletionTimestamp ||
    requested ||
    (status.id && status.observedGeneration !== obj.metadata.generation)
    ? 'urgent'
    : 'high';
}

/**
 * The finalizer, one table: present or absent x deleting or not.
 * - deleting, present: finalize (the remote resource goes, or is kept, then the finalizer);
 * - deleting, absent: release (nothing of it remains remotely, or it never had anything);
 * - not deleting, present: keep;
 * - not deleting, absent: none for observe-only (it never deletes); restore (at once, with an
 *   Event) when a remote resource exists or may (an id, a create-pending mark: removed by hand,
 *   the next delete would leave it behind); else add, with the first write (a create's
 *   create-pending mark, an adoption's first call).
 */
export type FinalizerStep = 'finalize' | 'release' | 'keep' | 'none' | 'restore' | 'add';

export function finalizerStep(obj: KubeObject): FinalizerStep {
  const present = !!obj.metadata.finalizers?.includes(FINALIZER);
  if (obj.metadata.deletionTimestamp) return present ? 'finalize' : 'release';
  if (present) return 'keep';
  if (isObserveOnly(obj)) return 'none';
  const remote = !!statusOf(obj).id || !!obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION];
  return remote ? 'restore' : 'add';
}

/** What a reconcile does with the object as the cache shows it. */
export type Step =
  /** Paused: no API call and no write but the one status write (and Event) that says so. */
  | { action: 'pause'; write: boolean }
  | { action: 'release' }
  | { action: 'finalize' }
  | { action: 'observe-only' }
  | { action: 'sync'; finalizer: 'keep' | 'restore' | 'add' };

export interface ReconcilePlan {
  step: Step;
  /** The pause annotation was removed: say so, and read afresh whatever the last sync knew. */
  resumed: boolean;
  /** A reconcile asked for by annotation, not handled yet. */
  requested?: string;
  priority: Priority;
}

/** Paused, deleting, observe-only or a sync; the finalizer's step; the priority. */
export function planReconcile(obj: KubeObject): ReconcilePlan {
  const requested = requestedReconcile(obj);
  const priority = priorityOf(obj, requested);
  const conditions = statusOf(obj).conditions ?? [];
  if (isPaused(obj)) {
    const said = conditions.some((c) => c.type === 'Paused' && c.status === 'True');
    return { step: { action: 'pause', write: !said }, resumed: false, requested, priority };
  }
  const resumed = conditions.some((c) => c.type === 'Paused');
  const f = finalizerStep(obj);
  const step: Step =
    f === 'release' || f === 'finalize'
      ? { action: f }
      : isObserveOnly(obj)
        ? { action: 'observe-only' }
        : { action: 'sync', finalizer: f === 'none' ? 'keep' : f };
  return { step, resumed, requested, priority };
}

/** resourceVersion a is older than b: etcd's are increasing integers; anything else is never older. */
export function olderThan(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

/**
 * Nothing changed since the last sync (or the API refused this generation), and no newer
 * observation: no work until the spec changes or the kind is listed again. A status someone
 * else wrote (a second installation, a person) is a change: put right at once.
 */
export function unchanged(i: {
  obj: KubeObject;
  requested?: string;
  last?: LastSync;
  /** When this process last finished writing the remote resource. */
  lastRemoteWrite?: number;
  /** The kind's bulk observation, when there is one. */
  bulk?: { latest?: Snapshot; failing: boolean };
  resyncMs: number;
  now: number;
}): boolean {
  const { obj, last, bulk } = i;
  if (i.requested || !last || last.generation !== obj.metadata.generation) return false;
  // the cache has not caught up with this process's own last write yet: its event follows
  const lagging = olderThan(obj.metadata.resourceVersion, last.resourceVersion);
  if (!lagging && last.status !== statusDigest(obj.status)) return false;
  const snapshot = bulk?.latest;
  if (snapshot && snapshot.completedAt > last.at) {
    // a newer bulk list: news for this object unless this process wrote the resource after
    // its page (or, for a resource not listed, after the list) began, or the page shows the
    // resource just as the last sync left it (each resync lists every object: comparing a
    // fingerprint costs a fraction of a sync, which at 10,000 objects never stopped)
    const touched = i.lastRemoteWrite ?? 0;
    const listed = last.id ? snapshot.items.get(last.id) : undefined;
    if (!listed) return !(snapshot.startedAt > touched);
    return listed.at <= touched || (last.remote !== undefined && listed.digest === last.remote);
  }
  // the kind's next list is on its way: wait for it rather than read one by one
  if (bulk && !bulk.failing) return true;
  // no bulk list, or its lists fail: a GET once the resync is due
  return i.now - last.at < i.resyncMs * 0.8;
}

/**
 * Ownership is per object: a resource whose owner marker names another installation, or
 * another object that still exists (in any namespace), is never adopted, updated or deleted
 * by this one. It may be taken when it has no marker, its owner is gone, or its owner is this
 * object (a restore: the same kind, namespace and name under a new uid).
 */
export function ownership(
  id: string,
  marker: Owner | undefined,
  self: Owner,
  namespace: string | undefined,
  ownerState: OwnerState | undefined,
  verb: 'taking it over' | 'reading it',
): Stall | undefined {
  if (marker && marker.cluster !== self.cluster)
    return stallWith(
      'OwnedElsewhere',
      `${id} belongs to another installation (cluster ${marker.cluster}); not ${verb}`,
    );
  if (!needsOwnerState(marker, self) || (ownerState ?? 'unknown') === 'gone') return undefined;
  const [kind, ns, name] = marker!.object.split('/');
  // another namespace's object names are not this tenant's to read
  const who = ns === namespace ? `${kind} ${name}` : 'an object in another namespace';
  return stallWith('OwnedElsewhere', `${id} is managed by ${who}; not taking it over`);
}

/**
 * A shared account is one trust domain: a resource no object of this namespace made (made
 * outside the cluster, or by an object of another namespace now gone) is taken over, read or
 * deleted only from the namespaces the account lets adopt (`mayAdopt`). One this object made
 * (its marker's uid, or its kind, namespace and name after a restore), or an object of its own
 * namespace made, is the namespace's own. Another installation's or a live owner's: `ownership`.
 */
export function adoptionRefused(
  id: string,
  marker: Owner | undefined,
  self: Owner,
  namespace: string | undefined,
  mayAdopt: boolean | undefined,
  verb: 'taking it over' | 'reading it' | 'deleting it',
): Stall | undefined {
  if (mayAdopt !== false) return undefined;
  if (marker && marker.cluster === self.cluster) {
    if (marker.uid === self.uid || marker.object === self.object) return undefined;
    if (marker.object.split('/')[1] === namespace) return undefined;
  }
  return stallWith(
    'AdoptionNotAllowed',
    adoptionMessage(`${id} was not made by an object of this namespace; not ${verb}`),
  );
}

/** The rule, in the words every refusal of it uses. */
export const adoptionMessage = (what: string) =>
  `${what}: resources the cluster did not make here are adopted, observed or referenced by id only from the namespaces the account names (a ClusterEdgeAccount's spec.adoptFrom, the installation's --adopt-from)`;

/** What the caches and the kind's last bulk list hold of the key this object wants unique. */
export interface ConflictInput {
  key: string;
  others: Candidate[];
  live: { has(uid: string): boolean };
  remotes: Iterable<{ id: string; remote: Record<string, unknown> & { metadata?: string } }>;
}

export interface SyncInput {
  binding: AnyBinding;
  obj: KubeObject;
  clusterId: string;
  digestKey: string;
  want: Wanted;
  /** The id the object has: status, the id annotation, or one found by its owner marker. */
  id?: string;
  seen?: Seen;
  /** Whether the object the resource's marker names exists (read when needsOwnerState). */
  ownerState?: OwnerState;
  /** The secret digests this process last applied, if it remembers. */
  applied?: Record<string, string>;
  /** What might collide with this object (a kind that keeps something unique). */
  conflict?: ConflictInput;
  /** The finalizer table's step: 'add' goes with the first write. */
  finalizer?: 'keep' | 'restore' | 'add';
  /** Whether the namespace may take resources of the account no object of it made (adoptionRefused). */
  mayAdopt?: boolean;
}

export type SyncDecision =
  | { action: 'create' }
  | { action: 'recreate'; gone: string }
  | Stall
  | {
      action: 'update' | 'adopt' | 'nothing';
      id: string;
      /** Fields to PATCH; empty: no update call. */
      patch: Record<string, unknown>;
      /** The PATCH's Event (with a patch). */
      updated?: { reason: string; message: string };
      /** The module steps on the resource as read. */
      modules: ModuleStep[];
      /**
       * Next (with a patch): plan the modules again on what the update returns, which shows them
       * as they are after it (the same as read, unless someone changed them in between).
       */
      next?: 'plan-modules';
      /** Adopting: write the id annotation (and drop the create-pending mark)? Record Adopted? */
      adopt?: { annotate: boolean; event: boolean };
      /** Add the finalizer before the first call. */
      addFinalizer?: boolean;
    };

/** Another object or listed resource holding what the API keeps unique: a stall, looked at again soon. */
function conflictOf(i: SyncInput): Stall | undefined {
  if (!i.conflict || !i.binding.conflict) return undefined;
  const { key } = i.conflict;
  const holds =
    i.seen?.found && i.binding.conflict.key(i.binding.fromRemote(i.seen.remote)) === key
      ? i.seen.remote.id
      : undefined;
  const c = findConflict({
    binding: i.binding,
    self: i.obj,
    holds,
    selfId: i.id,
    clusterId: i.clusterId,
    mayAdopt: i.mayAdopt,
    ...i.conflict,
  });
  return c && { ...stallWith('Conflict', c.message), requeueAfterMs: CONFLICT_RECHECK_MS };
}

/** Create, recreate, adopt, update, nothing, or stall. */
export function planSync(i: SyncInput): SyncDecision {
  const status = statusOf(i.obj);
  const ann = i.obj.metadata.annotations ?? {};
  const conflict = conflictOf(i);
  if (conflict) return conflict;
  if (!i.id) return { action: 'create' };
  if (!i.seen?.found) {
    if (status.id !== i.id) return stallWith('AdoptionFailed', `${ID_ANNOTATION}: ${i.id} does not exist`);
    // deleted behind our back: put it back
    return { action: 'recreate', gone: i.id };
  }
  const remote = i.seen.remote;
  const self = ownerOf(i.binding.kind, i.obj, i.clusterId);
  const marker = decodeMetadata(remote.metadata).owner;
  const ns = i.obj.metadata.namespace;
  const owned =
    ownership(remote.id, marker, self, ns, i.ownerState, 'taking it over') ??
    adoptionRefused(remote.id, marker, self, ns, i.mayAdopt, 'taking it over');
  if (owned) return owned;
  const update = planUpdate(i.binding, remote, i.want.desired, i.want.common);
  if (update.action === 'stall') return update;
  const applied = i.applied ?? status.secretDigests;
  const modules = planModules(i.binding, remote, i.want.modules, applied, i.digestKey, ownerOfDigests(i.obj));
  const adopting = status.id !== remote.id;
  const adopt = adopting
    ? {
        annotate: ann[ID_ANNOTATION] !== remote.id || !!ann[CREATE_PENDING_ANNOTATION],
        event: !ann[CREATE_PENDING_ANNOTATION],
      }
    : undefined;
  const changes = Object.keys(update.patch).length > 0 || modules.length > 0;
  const action = adopting ? 'adopt' : changes ? 'update' : 'nothing';
  return {
    action,
    id: remote.id,
    patch: update.patch,
    modules,
    ...(Object.keys(update.patch).length
      ? { updated: updateEvent(i.obj, remote.id, update.patch), next: 'plan-modules' as const }
      : {}),
    ...(adopt ? { adopt } : {}),
    ...(i.finalizer === 'add' ? { addFinalizer: true } : {}),
  };
}
