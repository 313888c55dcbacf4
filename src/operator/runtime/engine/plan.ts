// Pure decisions: from what the spec wants, what status knows, what the API shows and the
// binding, what to do. No I/O; execute.ts carries a decision out.
import { isDeepStrictEqual } from 'node:util';
import { ApiError, isNotFound } from '../../../api/errors.ts';
import type { AnyBinding, Common } from '../binding.ts';
import type { Phase } from '../conditions.ts';
import {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  FORCE_DELETE_ANNOTATION,
  ID_ANNOTATION,
} from '../constants.ts';
import type { KubeObject } from '../kube.ts';
import {
  covers,
  isLegacyDigest,
  legacySecretDigest,
  outputToInput,
  secretDigest,
  withoutSecrets,
} from '../module-compare.ts';
import { decodeMetadata, type Owner } from '../owner.ts';
import type { Observation, Remote, Status, Wanted } from './types.ts';

export type Stall = { action: 'stall'; reason: string; message: string };
type OwnerState = 'live' | 'gone' | 'unknown';

const stallWith = (reason: string, message: string): Stall => ({ action: 'stall', reason, message });

/** The owner marker the object writes: `Kind/namespace/name` with its uid and cluster. */
export function ownerOf(kind: string, obj: KubeObject, clusterId: string): Owner {
  const m = obj.metadata;
  return { cluster: clusterId, uid: m.uid!, object: `${kind}/${m.namespace}/${m.name}` };
}

/** A marker naming another object of this installation: whether it still exists must be asked. */
export function needsOwnerState(marker: Owner | undefined, self: Owner): boolean {
  return (
    !!marker && marker.cluster === self.cluster && marker.uid !== self.uid && marker.object !== self.object
  );
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

export type UpdatePlan = Stall | { action: 'update'; patch: Record<string, unknown> };

/** What differs and can be changed in place (the patch), or a stall naming what cannot. */
export function planUpdate(
  binding: AnyBinding,
  remote: Remote,
  desired: Record<string, unknown>,
  common: Common,
): UpdatePlan {
  const observed = binding.observe(remote);
  const changed = Object.keys(desired).filter((k) => !isDeepStrictEqual(desired[k], observed[k]));
  const fixed = changed.filter((k) => !(binding.updatable as string[]).includes(k));
  if (fixed.length)
    return stallWith(
      'ImmutableFieldDiffers',
      `${fixed.join(', ')} of ${remote.id} differ from the spec and cannot be changed in place: delete and recreate this object`,
    );
  const patch: Record<string, unknown> = Object.fromEntries(changed.map((k) => [k, desired[k]]));
  if ((remote.description ?? '') !== common.description) patch.description = common.description;
  // An adopted resource without an owner marker gets one with its first write, not a write
  // of its own: adopting what already equals the spec costs no API call (edgectl export).
  const held = decodeMetadata(remote.metadata);
  const metadataDiffers = held.owner
    ? remote.metadata !== common.metadata
    : held.user !== decodeMetadata(common.metadata).user;
  if (metadataDiffers || (Object.keys(patch).length > 0 && remote.metadata !== common.metadata))
    patch.metadata = common.metadata;
  return { action: 'update', patch };
}

/** The Event an update records: a correction when the spec did not change (drift), else an update. */
export function updateEvent(obj: KubeObject, id: string, patch: Record<string, unknown>) {
  const drift = (obj.status as Status | undefined)?.observedGeneration === obj.metadata.generation;
  return {
    reason: drift ? 'DriftCorrected' : 'Updated',
    message: `${drift ? 'put back out-of-band change to' : 'updated'} ${Object.keys(patch).join(', ')} of ${id}`,
  };
}

/** One module change, in the binding's order: a PUT of its body or a DELETE. */
export type ModuleStep = { name: string; put: Record<string, unknown> } | { name: string; delete: true };

/** The secret digests of the modules a spec wants (status.secretDigests). */
export function digestsOf(
  binding: AnyBinding,
  modules: Wanted['modules'],
  digestKey: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of binding.modules ?? []) {
    const body = modules.get(m.name);
    const d = body ? secretDigest(body, m.secretPaths, digestKey) : undefined;
    if (d) out[m.name] = d;
  }
  return out;
}

/**
 * PUTs for the modules that differ, DELETEs for the ones the spec dropped. Secrets compare by
 * digest: the applied one (`applied`), a legacy one keyed by the object's uid, or with no
 * digest yet (an adoption) the API's own copy, which it returns.
 */
export function planModules(
  binding: AnyBinding,
  remote: Remote,
  modules: Wanted['modules'],
  applied: Record<string, string> | undefined,
  digestKey: string,
  uid: string | undefined,
): ModuleStep[] {
  const steps: ModuleStep[] = [];
  for (const m of binding.modules ?? []) {
    const want = modules.get(m.name) ?? null;
    const have = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
    if (!want) {
      if (have) steps.push({ name: m.name, delete: true });
      continue;
    }
    const digest = secretDigest(want, m.secretPaths, digestKey);
    const was = applied?.[m.name];
    const sameSecrets =
      digest === was ||
      (was !== undefined && isLegacyDigest(was) && was === legacySecretDigest(want, m.secretPaths, uid)) ||
      (was === undefined &&
        have !== null &&
        digest === secretDigest(outputToInput(have), m.secretPaths, digestKey));
    const same =
      have &&
      covers(withoutSecrets(want, m.secretPaths), withoutSecrets(outputToInput(have), m.secretPaths)) &&
      sameSecrets;
    if (!same) steps.push({ name: m.name, put: want });
  }
  return steps;
}

/** The Event's list of module changes: `name` for a PUT, `-name` for a DELETE. */
export const moduleChanges = (steps: ModuleStep[]) =>
  steps.map((s) => ('delete' in s ? `-${s.name}` : s.name));

export interface SyncInput {
  binding: AnyBinding;
  obj: KubeObject;
  clusterId: string;
  digestKey: string;
  want: Wanted;
  /** The id the object has: status, the id annotation, or one found by its owner marker. */
  id?: string;
  seen?: Observation;
  /** Whether the object the resource's marker names exists (asked when needsOwnerState). */
  ownerState?: OwnerState;
  /** The secret digests this process last applied, if it remembers. */
  applied?: Record<string, string>;
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
      modules: ModuleStep[];
      /** Adopting: write the id annotation (and drop the create-pending mark)? Record Adopted? */
      adopt?: { annotate: boolean; event: boolean };
    };

/** Create, recreate, adopt, update, nothing, or stall. */
export function planSync(i: SyncInput): SyncDecision {
  const status = (i.obj.status ?? {}) as Status;
  const ann = i.obj.metadata.annotations ?? {};
  if (!i.id) return { action: 'create' };
  if (!i.seen?.found) {
    if (status.id !== i.id) return stallWith('AdoptionFailed', `${ID_ANNOTATION}: ${i.id} does not exist`);
    // deleted behind our back: put it back
    return { action: 'recreate', gone: i.id };
  }
  const remote = i.seen.remote;
  const self = ownerOf(i.binding.kind, i.obj, i.clusterId);
  const marker = decodeMetadata(remote.metadata).owner;
  const owned = ownership(remote.id, marker, self, i.obj.metadata.namespace, i.ownerState, 'taking it over');
  if (owned) return owned;
  const update = planUpdate(i.binding, remote, i.want.desired, i.want.common);
  if (update.action === 'stall') return update;
  const applied = i.applied ?? status.secretDigests;
  const modules = planModules(i.binding, remote, i.want.modules, applied, i.digestKey, i.obj.metadata.uid);
  const adopting = status.id !== remote.id;
  const adopt = adopting
    ? {
        annotate: ann[ID_ANNOTATION] !== remote.id || !!ann[CREATE_PENDING_ANNOTATION],
        event: !ann[CREATE_PENDING_ANNOTATION],
      }
    : undefined;
  const changes = Object.keys(update.patch).length > 0 || modules.length > 0;
  const action = adopting ? 'adopt' : changes ? 'update' : 'nothing';
  return { action, id: remote.id, patch: update.patch, modules, ...(adopt ? { adopt } : {}) };
}

/** The fields (wire names) and modules in which a remote resource differs from what the spec asks. */
export function driftOf(binding: AnyBinding, remote: Remote, want: Wanted): string[] {
  const observed = binding.observe(remote);
  const out = Object.keys(want.desired).filter((k) => !isDeepStrictEqual(want.desired[k], observed[k]));
  if ((remote.description ?? '') !== want.common.description) out.push('description');
  if (decodeMetadata(remote.metadata).user !== decodeMetadata(want.common.metadata).user)
    out.push('metadata');
  for (const m of binding.modules ?? []) {
    const w = want.modules.get(m.name) ?? null;
    const h = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
    if (
      (!w && h) ||
      (w &&
        (!h || !covers(withoutSecrets(w, m.secretPaths), withoutSecrets(outputToInput(h), m.secretPaths))))
    )
      out.push(m.name);
  }
  return out;
}

/** managementPolicy Observe reads the resource the id annotation (or status) names. */
export function observedId(obj: KubeObject): { id: string } | Stall {
  const id = obj.metadata.annotations?.[ID_ANNOTATION] ?? (obj.status as Status | undefined)?.id;
  if (id) return { id };
  return stallWith(
    'ObserveWithoutID',
    `managementPolicy Observe reads an existing resource: set the ${ID_ANNOTATION} annotation to its id`,
  );
}

export type ObserveDecision = Stall | { action: 'report'; remote: Remote; drift: string[]; phase: Phase };

/** What an observed-only object reports: the resource and its drift, or a stall. */
export function planObserve(i: {
  binding: AnyBinding;
  obj: KubeObject;
  clusterId: string;
  id: string;
  seen: Observation;
  want: Wanted;
  ownerState?: OwnerState;
}): ObserveDecision {
  if (!i.seen.found)
    return stallWith('NotFound', `${i.id} does not exist (managementPolicy Observe creates nothing)`);
  const self = ownerOf(i.binding.kind, i.obj, i.clusterId);
  const marker = decodeMetadata(i.seen.remote.metadata).owner;
  const owned = ownership(i.id, marker, self, i.obj.metadata.namespace, i.ownerState, 'reading it');
  if (owned) return owned;
  const remote = i.seen.remote;
  const drift = driftOf(i.binding, remote, i.want);
  const phase: Phase = drift.length
    ? {
        state: 'ready',
        reason: 'ObservedWithDrift',
        message: `${remote.id} differs from the spec in ${drift.join(', ')} (managementPolicy Observe: left as it is)`,
      }
    : {
        state: 'ready',
        reason: 'Observed',
        message: `${remote.id} equals the spec (managementPolicy Observe)`,
      };
  return { action: 'report', remote, drift, phase };
}

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
  if ((obj.spec as { managementPolicy?: string } | undefined)?.managementPolicy === 'Observe')
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
  | { action: 'release'; reason: 'OwnedElsewhere'; message: string };

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
   * observation when fresh, else a GET).
   */
  evidence: 'synced' | Observation;
  /** Another object of this installation whose status holds the id (`Kind/namespace/name`). */
  claimedBy?: string;
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
  if (!other) return { action: 'delete' };
  const [kind, ns, name] = other.split('/');
  // another namespace's object names are not this tenant's to read
  const who = ns === i.namespace ? `${kind} ${name}` : 'an object in another namespace';
  return { action: 'release', reason: 'OwnedElsewhere', message: `${i.id} is managed by ${who}; ${not}` };
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
