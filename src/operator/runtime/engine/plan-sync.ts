// Pure: a sync's plan, and an observe-only read's, from the one value gather.ts returns:
// what the spec wants, the create whose outcome is unknown (recovered, made anew, or waited
// for), then create, recreate, adopt, update, nothing, or a failure to report.
import type { AnyBinding } from '../bindings/binding.ts';
import type { KubeObject } from '../kube/kube.ts';
import type { OwnerState } from './facts.ts';
import { type Failure, fromStall, isFailure } from './failure.ts';
import { type ConflictInput, planSync, type SyncDecision } from './plan.ts';
import { digestsOf } from './plan-changes.ts';
import { type FailedCreateWrite, type LostCreate, planLostCreate } from './plan-create.ts';
import { type ObserveOnlyDecision, planObserveOnly } from './plan-observe-only.ts';
import { type Seen, statusOf, type Wanted } from './types.ts';

/** What a sync reads, in one value (gather.ts); nothing after a `want` that is a failure. */
export interface Gathered {
  want: Wanted | Failure;
  /** The id status or the id annotation holds. */
  id?: string;
  /** A create-pending object without an id: what this process remembers of its create, and the look by its marker. */
  lost?: LostCreate;
  /** The remote resource under the id (or the one its marker found), or the failure to read it. */
  seen?: Seen | Failure;
  /** What might collide with this object (a kind that keeps something unique). */
  conflict?: ConflictInput;
  /** Whether the object the resource's marker names exists (when it names another of this installation). */
  ownerState?: OwnerState;
  /** The secret digests this process last applied, if it remembers. */
  applied?: Record<string, string>;
}

/** What the sync does, in order: the memo of failed creates, the Recovered Event, then the decision. */
export interface SyncPlan {
  /** The memo of failed creates, as the look by the marker leaves it. */
  lostCreate?: FailedCreateWrite;
  /** The id found by the marker of a create whose answer was lost: a Recovered Event. */
  recovered?: string;
  /** The writes to make, or the failure to report. */
  decision: Exclude<SyncDecision, { action: 'stall' }> | Failure;
  /** The secret digests the modules compare with (this process's, else status's). */
  applied?: Record<string, string>;
  /** The secret digests of the modules the spec wants, for status once in sync. */
  digests?: Record<string, string>;
}

export function planGatheredSync(
  g: Gathered,
  c: {
    binding: AnyBinding;
    obj: KubeObject;
    clusterId: string;
    digestKey: string;
    finalizer: 'keep' | 'restore' | 'add';
    mayAdopt?: boolean;
    now: number;
  },
): SyncPlan {
  if (isFailure(g.want)) return { decision: g.want };
  const lost = g.lost && planLostCreate(c.binding.kind, g.lost, c.now);
  const memo = lost && lost.action !== 'create' && lost.memo ? { lostCreate: lost.memo } : {};
  if (lost?.action === 'wait') return { ...memo, decision: lost.failure };
  const recovered = lost?.action === 'recovered' ? lost.id : undefined;
  const then = { ...memo, ...(recovered ? { recovered } : {}) };
  if (isFailure(g.seen)) return { ...then, decision: g.seen };
  const applied = g.applied ?? statusOf(c.obj).secretDigests;
  const d = planSync({
    ...{ binding: c.binding, obj: c.obj, clusterId: c.clusterId, digestKey: c.digestKey, want: g.want },
    ...{ id: g.id ?? recovered, seen: g.seen, ownerState: g.ownerState, applied: g.applied },
    ...{ conflict: g.conflict, finalizer: c.finalizer, mayAdopt: c.mayAdopt },
  });
  if (d.action === 'stall') return { ...then, decision: fromStall(d) };
  const digests = digestsOf(c.binding, g.want.modules, c.digestKey, c.obj.metadata.namespace ?? '');
  return { ...then, decision: d, applied, digests };
}

/** What an observe-only read reads (gather.ts): the spec's want, then the resource and its owner's state. */
export interface GatheredObserved {
  want: Wanted | Failure;
  seen?: Seen | Failure;
  ownerState?: OwnerState;
}

/** What an observe-only object reports, or the failure to report instead. */
export function planGatheredObserve(
  g: GatheredObserved,
  c: { binding: AnyBinding; obj: KubeObject; clusterId: string; id: string; mayAdopt?: boolean },
): Extract<ObserveOnlyDecision, { action: 'report' }> | Failure {
  if (isFailure(g.want)) return g.want;
  if (!g.seen || isFailure(g.seen)) return g.seen as Failure;
  const d = planObserveOnly({ ...c, seen: g.seen, want: g.want, ownerState: g.ownerState });
  return d.action === 'stall' ? fromStall(d) : d;
}
