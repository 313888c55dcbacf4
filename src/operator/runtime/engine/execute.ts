// Carries a decision out: API calls, metadata patches, and each decision's Event, once. It
// decides nothing: what to do comes from plan*.ts, what was found from read.ts.
import { isApiError, unanswered } from '../../../api/errors.ts';
import { CREATE_PENDING_ANNOTATION, FINALIZER, ID_ANNOTATION } from '../constants.ts';
import {
  addFinalizer as add,
  type FinalizerTarget,
  removeFinalizer as remove,
  withFinalizer,
} from '../kube/finalizer.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { patchMeta as patchObjectMeta } from '../kube/object-meta.ts';
import { idsNamedBy } from './facts.ts';
import { call } from './failure.ts';
import type { ModuleStep } from './plan-changes.ts';
import type { FailedCreateWrite } from './plan-create.ts';
import { type EngineContext, type Remote, statusOf, type Wanted } from './types.ts';

/** A metadata merge patch guarded by resourceVersion, so a stale cache cannot clobber. */
export const patchMeta = (
  ctx: EngineContext,
  obj: KubeObject,
  meta: { finalizers?: string[]; annotations?: Record<string, string | null> },
): Promise<void> => patchObjectMeta(ctx.opts.kube, ctx.resource, obj, meta);

/**
 * The engine's finalizer is written through the shared helpers (finalizer.ts), but not through
 * its Apply/Cleanup wrapper: the engine adds it with its first remote write (in one patch with
 * the create-pending mark), never on observe-only objects, and puts back a removed one with an
 * Event; its plan's finalizer table (plan.ts finalizerStep) decides which.
 */
const finalizerOf = (ctx: EngineContext): FinalizerTarget => ({
  kube: ctx.opts.kube,
  resource: ctx.resource,
});

/** A write to the remote resource finished: bulk lists that began before it are stale for it. */
function wrote(ctx: EngineContext, obj: KubeObject): void {
  ctx.memos.of(keyOf(obj)).lastRemoteWrite = Date.now();
}

/** The finalizer table's `restore`: put back at once, and say why. */
export async function restoreFinalizer(ctx: EngineContext, obj: KubeObject): Promise<void> {
  await add(finalizerOf(ctx), obj);
  ctx.opts.events.record(
    obj,
    'Warning',
    'FinalizerRestored',
    `put back ${FINALIZER}, which was removed: without it a delete would leave the remote resource behind (use deletionPolicy: Retain to keep it)`,
  );
}

/** The finalizer table's `finalize`, done: the finalizer goes. */
export async function removeFinalizer(ctx: EngineContext, obj: KubeObject): Promise<void> {
  await remove(finalizerOf(ctx), obj);
}

/**
 * One API create with the modules inline, after the finalizer and a create-pending mark (a
 * crash orphans nothing; the mark stays until the id annotation replaces it). `gone`: the
 * resource this one replaces, deleted outside the cluster; its id leaves status first, so a
 * create whose answer is lost (a timeout, a crash) is looked for by its marker next time, as a
 * first create's is, instead of being made again and orphaned.
 */
export async function create(
  ctx: EngineContext,
  obj: KubeObject,
  want: Wanted,
  gone?: string,
): Promise<Remote> {
  const pending = { [CREATE_PENDING_ANNOTATION]: new Date().toISOString() };
  await patchMeta(
    ctx,
    obj,
    gone
      ? { annotations: { ...pending, [ID_ANNOTATION]: null } }
      : { finalizers: withFinalizer(obj), annotations: pending },
  );
  if (gone) {
    const updated = await ctx.opts.kube.patch(
      ctx.resource,
      obj.metadata.namespace,
      obj.metadata.name,
      { status: { id: null } },
      'merge',
      'status',
    );
    obj.status = updated.status;
  }
  const inline = Object.fromEntries([...want.modules].filter(([, v]) => v !== null));
  const key = keyOf(obj);
  const remote = (await callFor(ctx, obj, `create ${ctx.binding.kind}`, () =>
    ctx.binding.api
      .create(ctx.opts.api, { ...want.desired, ...want.common, ...inline })
      .catch((err: unknown) => {
        // timed from the failure: the request may have waited for budget before it left
        ctx.memos.failedCreates.set(key, { at: Date.now(), answered: isApiError(err) && !unanswered(err) });
        throw err;
      }),
  )) as Remote;
  ctx.memos.failedCreates.delete(key);
  wrote(ctx, obj);
  if (gone)
    ctx.opts.events.record(
      obj,
      'Warning',
      'Recreated',
      `${gone} was deleted outside the cluster; created ${remote.id}`,
    );
  else ctx.opts.events.record(obj, 'Normal', 'Created', `created ${remote.id}`);
  return remote;
}

/**
 * The plan's word on the memo of failed creates, after a look by the owner marker, and the
 * Recovered Event of the id the look found (`recovered`).
 */
export function noteLostCreate(
  ctx: EngineContext,
  obj: KubeObject,
  memo: FailedCreateWrite | undefined,
  recovered?: string,
): void {
  if (memo && 'forget' in memo) ctx.memos.failedCreates.delete(keyOf(obj));
  else if (memo) ctx.memos.failedCreates.set(keyOf(obj), memo.set);
  if (recovered)
    ctx.opts.events.record(
      obj,
      'Normal',
      'Recovered',
      `found ${recovered}, made by an earlier create whose answer was lost (a restart, a timeout); adopting it`,
    );
}

/** An API call of this object: its messages name no id the object's namespace may not learn. */
const callFor = <T>(ctx: EngineContext, obj: KubeObject, what: string, fn: () => Promise<T>): Promise<T> =>
  call(ctx, obj.metadata.namespace ?? '', what, fn, idsNamedBy(obj));

/** The finalizer an adoption adds before its first call. */
export async function addFinalizer(ctx: EngineContext, obj: KubeObject): Promise<void> {
  await add(finalizerOf(ctx), obj);
}

/** The PATCH of the fields that differ, and its Event; returns the resource as the API now shows it. */
export async function update(
  ctx: EngineContext,
  obj: KubeObject,
  remote: Remote,
  patch: Record<string, unknown>,
  desired: Record<string, unknown>,
  event: { reason: string; message: string },
): Promise<Remote> {
  const updated = (await callFor(ctx, obj, `update ${remote.id}`, () =>
    ctx.binding.api.update(ctx.opts.api, remote.id, patch, desired),
  )) as Remote;
  wrote(ctx, obj);
  ctx.opts.events.record(obj, 'Normal', event.reason, event.message);
  return updated;
}

/** PUTs and DELETEs the modules' steps, and their Event; returns the resource as it now is. */
export async function writeModules(
  ctx: EngineContext,
  obj: KubeObject,
  remote: Remote,
  desired: Record<string, unknown>,
  steps: ModuleStep[],
  event: { reason: string; message: string } | undefined,
): Promise<Remote> {
  const now: Remote = { ...remote };
  for (const step of steps) {
    const m = ctx.binding.modules!.find((x) => x.name === step.name)!;
    if ('delete' in step) {
      await callFor(ctx, obj, `delete module ${m.name} of ${remote.id}`, () =>
        m.delete(ctx.opts.api, remote.id, desired),
      );
      now[m.name] = null;
      continue;
    }
    const put = await callFor(ctx, obj, `put module ${m.name} of ${remote.id}`, () =>
      m.put(ctx.opts.api, remote.id, step.put, desired),
    );
    if (put && typeof put === 'object') now[m.name] = put;
  }
  if (steps.length) wrote(ctx, obj);
  if (event) ctx.opts.events.record(obj, 'Normal', event.reason, event.message);
  return now;
}

/** An adoption's id annotation (replacing the create-pending mark) and its Adopted Event. */
export async function adopted(
  ctx: EngineContext,
  obj: KubeObject,
  id: string,
  adopt: { annotate: boolean; event: boolean },
): Promise<void> {
  if (adopt.annotate)
    await patchMeta(ctx, obj, { annotations: { [ID_ANNOTATION]: id, [CREATE_PENDING_ANNOTATION]: null } });
  if (adopt.event) ctx.opts.events.record(obj, 'Normal', 'Adopted', `adopted existing ${id}`);
}

/** The DELETE (once: remembered); its error, if it failed (the plan says what it means). */
export async function deleteRemote(
  ctx: EngineContext,
  obj: KubeObject,
  id: string,
): Promise<{ error: unknown } | undefined> {
  try {
    await ctx.binding.api.delete(ctx.opts.api, id, statusOf(obj));
  } catch (error) {
    return { error };
  }
  ctx.memos.of(keyOf(obj)).deletedRemote = id;
  ctx.opts.events.record(obj, 'Normal', 'Deleted', `deleted ${id}`);
  return undefined;
}
