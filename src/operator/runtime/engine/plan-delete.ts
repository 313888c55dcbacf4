// Pure decisions of a deletion: whether to DELETE, keep or wait; whether the resource is this
// object's to DELETE; which resource that is; and what a failed DELETE means.
import { ApiError, isNotFound } from '../../../api/errors.ts';
import type { Phase } from '../bindings/conditions.ts';
import { decodeMetadata, type Owner } from '../bindings/owner.ts';
import { FINALIZER, FORCE_DELETE_ANNOTATION } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import { isObserveOnly } from './facts.ts';
import { adoptionRefused } from './plan.ts';
import type { Seen } from './types.ts';

export type FinalizeDecision =
  | { action: 'done' }
  | { action: 'release' }
  | { action: 'retain'; message: string }
  | { action: 'wait'; reason: 'InUse'; message: string }
  | { action: 'delete'; id: string }
  | { action: 'already-deleted'; id: string };

/** Deletion: nothing to do, let go, keep the resource, wait for referrers, or DELETE it (once). */
export function planFinalize(i: {
  obj: KubeObject;
  /** The id in status, or the one found by the owner marker. */
  id?: string;
  referrers: string[];
  /** What this process already deleted for the object. */
  deletedRemote?: string;
}): FinalizeDecision {
  const { obj, id } = i;
  if (!obj.metadata.finalizers?.includes(FINALIZER)) return { action: 'done' };
  if (!id) return { action: 'release' };
  if (isObserveOnly(obj))
    return { action: 'retain', message: `left ${id} in place (managementPolicy: Observe)` };
  if ((obj.spec as { deletionPolicy?: string } | undefined)?.deletionPolicy === 'Retain')
    return { action: 'retain', message: `left ${id} in place (deletionPolicy: Retain)` };
  // The API does not refuse every such delete (route modules, backends): deleting what
  // other objects still use would silently open or break their traffic.
  if (i.referrers.length && obj.metadata.annotations?.[FORCE_DELETE_ANNOTATION] !== 'true') {
    const names =
      i.referrers.slice(0, 10).join(', ') +
      (i.referrers.length > 10 ? `, and ${i.referrers.length - 10} more` : '');
    return {
      action: 'wait',
      reason: 'InUse',
      message: `${id} is still referenced by ${names}: delete them or remove their references first (or annotate ${FORCE_DELETE_ANNOTATION}=true)`,
    };
  }
  return i.deletedRemote === id ? { action: 'already-deleted', id } : { action: 'delete', id };
}

export type DeleteGuard =
  | { action: 'delete' }
  | { action: 'gone' }
  | { action: 'release'; reason: 'OwnedElsewhere' | 'AdoptionNotAllowed'; message: string };

/**
 * Whether the resource `id` names is this object's to DELETE. `status.id` is writable by
 * anyone who may write the object's status (a tenant with a wildcard role), so it proves
 * nothing: the resource's owner marker must name this object (its uid, or its kind,
 * namespace and name after a restore). A resource without a marker (adopted, nothing written
 * yet) is deleted unless another object of this installation holds its id. Anything else
 * belongs to someone else: it is not deleted.
 */
export function deleteGuard(i: {
  id: string;
  self: Owner;
  namespace: string;
  /**
   * 'synced': this process's last sync of the object took this id as its own (and wrote its
   * marker, if anything was to be written); else what the API holds under the id (the bulk
   * list when fresh, else a GET).
   */
  evidence: 'synced' | Seen;
  /** Another object of this installation whose status holds the id (`Kind/namespace/name`). */
  claimedBy?: string;
  /** Whether the namespace may take resources of the account no object of it made (adoptionRefused). */
  mayAdopt?: boolean;
}): DeleteGuard {
  if (i.evidence === 'synced') return { action: 'delete' };
  if (!i.evidence.found) return { action: 'gone' };
  const marker = decodeMetadata(i.evidence.remote.metadata).owner;
  const not = 'not deleting it';
  if (marker && marker.cluster !== i.self.cluster)
    return {
      action: 'release',
      reason: 'OwnedElsewhere',
      message: `${i.id} belongs to another installation (cluster ${marker.cluster}); ${not}`,
    };
  const other = marker
    ? marker.uid !== i.self.uid && marker.object !== i.self.object
      ? marker.object
      : undefined
    : i.claimedBy;
  const refused = !other && adoptionRefused(i.id, marker, i.self, i.namespace, i.mayAdopt, 'deleting it');
  if (refused) return { action: 'release', reason: 'AdoptionNotAllowed', message: refused.message };
  if (!other) return { action: 'delete' };
  const [kind, ns, name] = other.split('/');
  // another namespace's object names are not this tenant's to read
  const who = ns === i.namespace ? `${kind} ${name}` : 'an object in another namespace';
  return { action: 'release', reason: 'OwnedElsewhere', message: `${i.id} is managed by ${who}; ${not}` };
}

/**
 * The resource to DELETE once the guard has spoken: `id` when it is this object's; when its
 * marker names another object, none of that one's, but this object's own (`own`, found by its
 * marker) if `status.id` was turned away from it.
 */
export function deleteTarget(id: string, guard: DeleteGuard, own?: { id: string }): string | undefined {
  if (guard.action === 'delete') return id;
  if (guard.action === 'gone') return undefined;
  return own && own.id !== id ? own.id : undefined;
}

/** A DELETE's failure: not found counts as deleted; anything else waits and retries. */
export function deleteFailure(
  id: string,
  err: unknown,
  nameIds?: (text: string) => string,
): { deleted: true } | { deleted: false; phase: Phase } {
  if (isNotFound(err)) return { deleted: true };
  // Deletes are retried whatever the API said: a dependent may still be going away.
  const raw = err instanceof ApiError ? (err.apiMessage ?? err.message) : (err as Error).message;
  const msg = nameIds?.(raw) ?? raw;
  return {
    deleted: false,
    phase: { state: 'progressing', reason: 'DeleteFailed', message: `delete ${id}: ${msg}` },
  };
}
