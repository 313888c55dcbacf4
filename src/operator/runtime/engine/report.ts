// Outcomes into status, conditions and Events: a sync, an observe-only read, the pause, and
// a Failure's status, Event and retry (how quietly: plan-report.ts).
import { type Condition, conditionsFor, type Phase } from '../bindings/conditions.ts';
import { ID_ANNOTATION, PAUSED_ANNOTATION } from '../constants.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { mergePatch } from '../kube/merge-patch.ts';
import type { Failure } from './failure.ts';
import { type LastSync, remoteDigest, statusDigest } from './memo.ts';
import type { ObserveOnlyDecision } from './plan-observe-only.ts';
import { planFailureReport } from './plan-report.ts';
import {
  type EngineContext,
  type Outcome,
  type Remote,
  type Status,
  statusOf,
  type Wanted,
} from './types.ts';

/** Records what this reconcile did, unless the object was forgotten since it started. */
export function remember(ctx: EngineContext, key: string, resetsAtStart: number, value: LastSync): void {
  const m = ctx.memos.of(key);
  if (m.resets === resetsAtStart) m.last = value;
  // a sync took this id as the object's own: others may take it from its status now
  if (value.id !== undefined) ctx.opts.cache.confirm?.(key, value.id);
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
  // the generation this reconcile worked on: a spec changed meanwhile (a status write has no
  // precondition) is still to be done, and the memo must not take it as synced
  obj.metadata = { ...updated.metadata, generation: gen };
}

/**
 * Paused: no API call and no Kubernetes write, deletes included (the finalizer waits), but
 * for the one status write and Event that say so.
 */
export async function pause(ctx: EngineContext, obj: KubeObject): Promise<Outcome> {
  const st = statusOf(obj);
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

/** A Failure into status, an Event (once) and the outcome, as the plan says (planFailureReport). */
export async function reportFailure(
  ctx: EngineContext,
  obj: KubeObject,
  err: Failure,
  resetsAtStart: number,
  requested: string | undefined,
): Promise<Outcome> {
  const key = keyOf(obj);
  const memo = ctx.memos.of(key);
  const now = Date.now();
  const r = planFailureReport({ obj, err, ...memo, requested, now });
  if (r.action === 'keep') return r.outcome;
  memo.waitingSince = r.waitingSince;
  if (r.action === 'quiet') return r.outcome;
  // an API that stays away is one Event per object, whichever call meets it next (the
  // cache may not show this process's last status write yet: remembered here)
  memo.unavailableNoted = r.unavailableNoted;
  await writeStatus(ctx, obj, r.fields, err.phase);
  if (r.remember)
    remember(ctx, key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      stalled: true,
      status: statusDigest(obj.status),
      resourceVersion: obj.metadata.resourceVersion,
    });
  if (r.event) ctx.opts.events.record(obj, r.event.type, r.event.reason, r.event.message);
  return r.outcome;
}

/** The pause annotation was removed: one read afresh, whatever the last sync knew. */
export function resumed(ctx: EngineContext, obj: KubeObject): void {
  ctx.memos.of(keyOf(obj)).last = undefined;
  ctx.opts.events.record(
    obj,
    'Normal',
    'ReconcileResumed',
    `${PAUSED_ANNOTATION} removed: reconciling again`,
  );
}

/** The fields of status a read of the remote resource gives. */
export function remoteStatus(
  ctx: EngineContext,
  remote: Remote,
  desired: Record<string, unknown>,
): Record<string, unknown> {
  return {
    id: remote.id,
    uri: remote.uri,
    createdAt: remote.created_at,
    ...(ctx.binding.statusOf?.(remote, desired) ?? {}),
    ...(ctx.account ? { account: ctx.account } : {}),
  };
}

/** In sync: status and Ready, the id annotation to write when idle, and what this sync did. */
export async function reportSynced(
  ctx: EngineContext,
  obj: KubeObject,
  r: {
    remote: Remote;
    want: Wanted;
    digests: Record<string, string>;
    requested?: string;
    resetsAtStart: number;
  },
): Promise<void> {
  const key = keyOf(obj);
  await writeStatus(
    ctx,
    obj,
    {
      ...remoteStatus(ctx, r.remote, r.want.desired),
      ...(ctx.binding.modules?.some((m) => m.secretPaths) ? { secretDigests: r.digests } : {}),
      lastHandledReconcileAt: r.requested ?? statusOf(obj).lastHandledReconcileAt,
    },
    { state: 'ready', reason: 'Synced', message: `${ctx.binding.kind} ${r.remote.id} is in sync` },
  );
  const memo = ctx.memos.of(key);
  if (obj.metadata.annotations?.[ID_ANNOTATION] === r.remote.id) ctx.memos.recorded(key);
  else ctx.memos.recordLater(key, r.remote.id, Date.now());
  remember(ctx, key, r.resetsAtStart, {
    at: Date.now(),
    generation: obj.metadata.generation,
    id: r.remote.id,
    digests: r.digests,
    status: statusDigest(obj.status),
    resourceVersion: obj.metadata.resourceVersion,
    remote: remoteDigest(r.remote),
  });
  memo.waitingSince = undefined;
  memo.unavailableNoted = undefined;
}

/** Observe-only: what was read, its drift (an Event when new), and what this read did. */
export async function reportObserved(
  ctx: EngineContext,
  obj: KubeObject,
  d: Extract<ObserveOnlyDecision, { action: 'report' }>,
  r: { want: Wanted; requested?: string; resetsAtStart: number },
): Promise<void> {
  const fields = {
    ...remoteStatus(ctx, d.remote, r.want.desired),
    lastHandledReconcileAt: r.requested ?? statusOf(obj).lastHandledReconcileAt,
  };
  await writeStatus(ctx, obj, fields, d.phase);
  if (d.event) ctx.opts.events.record(obj, 'Normal', d.event.reason, d.event.message);
  remember(ctx, keyOf(obj), r.resetsAtStart, {
    at: Date.now(),
    generation: obj.metadata.generation,
    id: d.remote.id,
    status: statusDigest(obj.status),
    resourceVersion: obj.metadata.resourceVersion,
  });
}
