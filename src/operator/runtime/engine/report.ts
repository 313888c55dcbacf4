// Outcomes into status and conditions: writeStatus, the pause, and a ConditionError's
// status, Event and retry.
import { type Condition, conditionsFor, type Phase } from '../conditions.ts';
import { PAUSED_ANNOTATION } from '../constants.ts';
import { keyOf } from '../informer.ts';
import type { KubeObject } from '../kube.ts';
import { mergePatch } from '../merge-patch.ts';
import type { ConditionError } from './condition-error.ts';
import type { LastSync } from './memo.ts';
import { type EngineContext, type Outcome, type Status, statusOf } from './types.ts';

const WAITS = new Set(['WaitingForReference', 'WaitingForSecret', 'WaitingForAccount']);
/**
 * Progressing states a person running `kubectl describe` should see as Events too (repeats
 * are dropped by the recorder; throttling shows in metrics, not per object).
 */
const NOTEWORTHY = new Set([...WAITS, 'ApiUnavailable', 'DeleteFailed']);

/** Records what this reconcile did, unless the object was forgotten since it started. */
export function remember(ctx: EngineContext, key: string, resetsAtStart: number, value: LastSync): void {
  const m = ctx.memos.of(key);
  if (m.resets === resetsAtStart) m.last = value;
}

/**
 * In sync, the status is what the kind reports now: a key it no longer reports (a
 * route's SAML URLs after SAML is removed) goes. Otherwise (waiting, stalled) only the
 * conditions change: what was last known of the remote resource stays.
 */
export async function writeStatus(
  ctx: EngineContext,
  obj: KubeObject,
  fields: Record<string, unknown>,
  phase: Phase,
): Promise<void> {
  const old = statusOf(obj);
  const gen = obj.metadata.generation;
  const next: Status = {
    // the tunnels loop's field stays whatever the reconcile found
    ...(phase.state === 'ready' ? { tunnelsOnline: old.tunnelsOnline } : old),
    ...fields,
    observedGeneration: gen,
    conditions: conditionsFor(phase, gen, old.conditions),
  };
  // what the status should be, whole: keys that go become null at any depth
  const patch = mergePatch(old as Record<string, unknown>, next as Record<string, unknown>);
  if (Object.keys(patch).length === 0) return;
  ctx.opts.log.info(
    {
      controller: ctx.name,
      object: keyOf(obj),
      id: next.id,
      state: phase.state,
      reason: phase.reason,
      message: phase.message,
    },
    'reconciled',
  );
  // conditions are a list: a merge patch replaces it whole, so conditions that no longer apply go
  const updated = await ctx.opts.kube.patch(
    ctx.resource,
    obj.metadata.namespace,
    obj.metadata.name,
    { status: patch },
    'merge',
    'status',
  );
  obj.status = updated.status;
  obj.metadata = updated.metadata;
}

/**
 * Paused: no API call and no Kubernetes write, deletes included (the finalizer waits), but
 * for the one status write and Event that say so.
 */
export async function pause(ctx: EngineContext, obj: KubeObject): Promise<Outcome> {
  const st = statusOf(obj);
  if (st.conditions?.some((c) => c.type === 'Paused' && c.status === 'True')) return {};
  const message = `${PAUSED_ANNOTATION} is "true": no API calls and no writes${obj.metadata.deletionTimestamp ? ', and the delete waits,' : ''} until it is removed`;
  const paused: Condition = {
    type: 'Paused',
    status: 'True',
    reason: 'ReconcilePaused',
    message,
    observedGeneration: obj.metadata.generation,
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  const updated = await ctx.opts.kube.patch(
    ctx.resource,
    obj.metadata.namespace,
    obj.metadata.name,
    { status: { conditions: [...(st.conditions ?? []).filter((c) => c.type !== 'Paused'), paused] } },
    'merge',
    'status',
  );
  obj.status = updated.status;
  ctx.opts.events.record(obj, 'Normal', 'ReconcilePaused', message);
  return {};
}

/** How a failure is reported: not at all (kept), after a quiet wait, or in status (and an Event). */
export type FailureReport =
  | { action: 'keep' }
  | { action: 'quiet'; requeueAfterMs: number }
  | { action: 'write' };

/**
 * Throttled while only looking (nothing the user changed is pending): the object keeps its
 * Ready state, no condition flaps. A new object waiting for a reference or a Secret that is
 * on its way says so only if the wait lasts: most waits end within a second, and each
 * status write is a Kubernetes write.
 */
export function failureReport(
  obj: KubeObject,
  err: ConditionError,
  waitingSince: number,
  now: number,
): FailureReport {
  const st = obj.status as Status | undefined;
  if (
    err.phase.reason === 'ApiThrottled' &&
    st?.observedGeneration === obj.metadata.generation &&
    st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
  )
    return { action: 'keep' };
  if (WAITS.has(err.phase.reason) && !st?.conditions) {
    const left = err.quietMs - (now - waitingSince);
    if (left > 0) return { action: 'quiet', requeueAfterMs: left };
  }
  return { action: 'write' };
}

/** A ConditionError into status, an Event (once) and the outcome. */
export async function reportFailure(
  ctx: EngineContext,
  obj: KubeObject,
  err: ConditionError,
  resetsAtStart: number,
  requested: string | undefined,
): Promise<Outcome> {
  const key = keyOf(obj);
  const memo = ctx.memos.of(key);
  const now = Date.now();
  const report = failureReport(obj, err, memo.waitingSince ?? now, now);
  if (report.action === 'keep') return err.outcome;
  if (report.action === 'quiet') {
    memo.waitingSince ??= now;
    return { requeueAfterMs: report.requeueAfterMs };
  }
  memo.waitingSince = undefined;
  // an API that stays away is one Event per object, whichever call meets it next (the
  // cache may not show this process's last status write yet: remembered here)
  const repeated = err.phase.reason === 'ApiUnavailable' && !!memo.unavailableNoted;
  memo.unavailableNoted = err.phase.reason === 'ApiUnavailable' || undefined;
  // a stalled object is tried again when its spec changes or at the next resync, not sooner
  await writeStatus(ctx, obj, requested ? { lastHandledReconcileAt: requested } : {}, err.phase);
  // a conflict is looked at again shortly: the other object may go
  if (err.phase.state === 'stalled' && err.phase.reason !== 'Conflict')
    remember(ctx, key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      stalled: true,
      status: obj.status,
      resourceVersion: obj.metadata.resourceVersion,
    });
  if ((err.phase.state === 'stalled' || NOTEWORTHY.has(err.phase.reason)) && !repeated)
    ctx.opts.events.record(
      obj,
      err.phase.state === 'stalled' || err.phase.reason !== 'WaitingForReference' ? 'Warning' : 'Normal',
      err.phase.reason,
      err.phase.message,
    );
  return err.outcome;
}
