// Pure decisions of observe-only (`managementPolicy: Observe`): which resource to read, and
// what to report of it. Nothing is ever written to the account.
import type { AnyBinding } from '../bindings/binding.ts';
import type { Phase } from '../bindings/conditions.ts';
import { decodeMetadata } from '../bindings/owner.ts';
import { ID_ANNOTATION } from '../constants.ts';
import type { KubeObject } from '../kube/kube.ts';
import { adoptionRefused, type OwnerState, ownerOf, ownership } from './plan.ts';
import { driftOf, type Stall, stallWith } from './plan-changes.ts';
import type { Remote, Seen, Status, Wanted } from './types.ts';

/** Observe-only reads the resource the id annotation (or status) names. */
export function observeOnlyId(obj: KubeObject): { id: string } | Stall {
  const id = obj.metadata.annotations?.[ID_ANNOTATION] ?? (obj.status as Status | undefined)?.id;
  if (id) return { id };
  return stallWith(
    'ObserveWithoutID',
    `managementPolicy Observe reads an existing resource: set the ${ID_ANNOTATION} annotation to its id`,
  );
}

export type ObserveOnlyDecision =
  | Stall
  | {
      action: 'report';
      remote: Remote;
      drift: string[];
      phase: Phase;
      /** DriftObserved, when the drift is new or different (not at every read). */
      event?: { reason: 'DriftObserved'; message: string };
    };

/** What an observe-only object reports: the resource and its drift, or a stall. */
export function planObserveOnly(i: {
  binding: AnyBinding;
  obj: KubeObject;
  clusterId: string;
  id: string;
  seen: Seen;
  want: Wanted;
  ownerState?: OwnerState;
  /** Whether the namespace may read resources of the account no object of it made. */
  mayAdopt?: boolean;
}): ObserveOnlyDecision {
  if (!i.seen.found)
    return stallWith('NotFound', `${i.id} does not exist (managementPolicy Observe creates nothing)`);
  const self = ownerOf(i.binding.kind, i.obj, i.clusterId);
  const marker = decodeMetadata(i.seen.remote.metadata).owner;
  const ns = i.obj.metadata.namespace;
  const owned =
    ownership(i.id, marker, self, ns, i.ownerState, 'reading it') ??
    adoptionRefused(i.id, marker, self, ns, i.mayAdopt, 'reading it');
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
  const before = (i.obj.status as Status | undefined)?.conditions?.find((c) => c.type === 'Ready')?.message;
  const event =
    drift.length && phase.message !== before
      ? {
          reason: 'DriftObserved' as const,
          message: `${remote.id} differs from the spec in ${drift.join(', ')}`,
        }
      : undefined;
  return { action: 'report', remote, drift, phase, ...(event ? { event } : {}) };
}
