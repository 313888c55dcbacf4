// Pure: how a failure is reported. Not at all (kept), after a quiet wait, or in status, with
// or without an Event (repeats of an unavailable API are one Event per object); and whether a
// stall is remembered, so the object is not looked at again until its spec changes or the
// next resync. report.ts carries it out.
import type { KubeObject } from '../kube/kube.ts';
import type { Failure } from './failure.ts';
import type { Outcome, Status } from './types.ts';

const WAITS = new Set(['WaitingForReference', 'WaitingForSecret', 'WaitingForAccount']);
/**
 * Progressing states a person running `kubectl describe` should see as Events too (repeats
 * are dropped by the recorder; throttling shows in metrics, not per object).
 */
const NOTEWORTHY = new Set([...WAITS, 'APIUnavailable', 'DeleteFailed']);

export type FailureReport =
  /** Throttled while only looking: the object keeps its Ready state, nothing written. */
  | { action: 'keep'; outcome: Outcome }
  /** A new object's short wait: nothing written yet; the memo keeps when it began. */
  | { action: 'quiet'; outcome: Outcome; waitingSince: number }
  | {
      action: 'write';
      outcome: Outcome;
      waitingSince: undefined;
      /** Status fields beside the condition. */
      fields: Record<string, unknown>;
      /** The memo's word that an unavailable API was told (by an Event) already. */
      unavailableNoted: true | undefined;
      /** A stall (a conflict excepted: the other object may go) is remembered as this generation's sync. */
      remember: boolean;
      event?: { type: 'Normal' | 'Warning'; reason: string; message: string };
    };

/**
 * Throttled while only looking (nothing the user changed is pending): the object keeps its
 * Ready state, no condition flaps. A new object waiting for a reference or a Secret that is
 * on its way says so only if the wait lasts: most waits end within a second, and each
 * status write is a Kubernetes write. Anything else is written, and a stall or a noteworthy
 * wait is an Event, but for an unavailable API already told.
 */
export function planFailureReport(i: {
  obj: KubeObject;
  err: Failure;
  /** When the object began waiting quietly (the memo). */
  waitingSince?: number;
  /** An unavailable API was told already (the memo). */
  unavailableNoted?: boolean;
  requested?: string;
  now: number;
}): FailureReport {
  const { obj, err, now } = i;
  const st = obj.status as Status | undefined;
  const ready = st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const { reason, state, message } = err.phase;
  if (reason === 'APIThrottled' && st?.observedGeneration === obj.metadata.generation && ready)
    return { action: 'keep', outcome: err.outcome };
  const since = i.waitingSince ?? now;
  if (WAITS.has(reason) && (!st?.conditions || (err.quietWhenReady && ready))) {
    const left = err.quietMs - (now - since);
    if (left > 0)
      return {
        action: 'quiet',
        outcome: { requeueAfterMs: Math.min(left, err.outcome.requeueAfterMs ?? left) },
        waitingSince: since,
      };
  }
  const repeated = reason === 'APIUnavailable' && !!i.unavailableNoted;
  const stalled = state === 'stalled';
  return {
    action: 'write',
    outcome: err.outcome,
    waitingSince: undefined,
    fields: i.requested ? { lastHandledReconcileAt: i.requested } : {},
    unavailableNoted: reason === 'APIUnavailable' || undefined,
    remember: stalled && reason !== 'Conflict',
    ...((stalled || NOTEWORTHY.has(reason)) && !repeated
      ? {
          event: {
            type: stalled || reason !== 'WaitingForReference' ? ('Warning' as const) : ('Normal' as const),
            reason,
            message,
          },
        }
      : {}),
  };
}
