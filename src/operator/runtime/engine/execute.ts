// Carries a decision out: API calls, metadata patches, and the decision's Event, once.
import { CREATE_PENDING_ANNOTATION, FINALIZER, ID_ANNOTATION } from '../constants.ts';
import { keyOf } from '../informer.ts';
import type { KubeObject } from '../kube.ts';
import { decodeMetadata } from '../owner.ts';
import { ConditionError, stall } from './condition-error.ts';
import { call, findOwned, observerFor } from './observe.ts';
import {
  deleteFailure,
  deleteGuard,
  type ModuleStep,
  moduleChanges,
  needsOwnerState,
  ownerOf,
  planFinalize,
  planModules,
  planSync,
  type SyncDecision,
  updateEvent,
} from './plan.ts';
import type { EngineContext, Observation, Outcome, Remote, Wanted } from './types.ts';
import { statusOf } from './types.ts';

/** A metadata merge patch guarded by resourceVersion, so a stale cache cannot clobber. */
export async function patchMeta(
  ctx: EngineContext,
  obj: KubeObject,
  meta: { finalizers?: string[]; annotations?: Record<string, string | null> },
): Promise<void> {
  const updated = await ctx.opts.kube.patch(ctx.resource, obj.metadata.namespace, obj.metadata.name, {
    metadata: { resourceVersion: obj.metadata.resourceVersion, ...meta },
  });
  obj.metadata = updated.metadata;
}

function withFinalizer(obj: KubeObject): string[] {
  const f = obj.metadata.finalizers ?? [];
  return f.includes(FINALIZER) ? f : [...f, FINALIZER];
}

/** A write to the remote resource finished: bulk observations that began before it are stale for it. */
function wrote(ctx: EngineContext, obj: KubeObject): void {
  ctx.memos.of(keyOf(obj)).lastRemoteWrite = Date.now();
}

/**
 * An object that has (or may have) a remote resource keeps the finalizer: removed by hand from
 * a live object, it is put back at once, or the next delete would leave the resource behind.
 * Letting go is `deletionPolicy: Retain` or `edgectl drain`.
 */
export async function keepFinalizer(ctx: EngineContext, obj: KubeObject): Promise<void> {
  const ann = obj.metadata.annotations ?? {};
  if (obj.metadata.finalizers?.includes(FINALIZER)) return;
  if (!statusOf(obj).id && !ann[CREATE_PENDING_ANNOTATION]) return;
  await patchMeta(ctx, obj, { finalizers: withFinalizer(obj) });
  ctx.opts.events.record(
    obj,
    'Warning',
    'FinalizerRestored',
    `put back ${FINALIZER}, which was removed: without it a delete would leave the remote resource behind (use deletionPolicy: Retain to keep it)`,
  );
}

/** The remote id this object has: recorded, named for adoption, or found after a crash mid-create. */
export async function knownId(
  ctx: EngineContext,
  obj: KubeObject,
  want: Wanted,
): Promise<string | undefined> {
  const ann = obj.metadata.annotations ?? {};
  const id = statusOf(obj).id ?? ann[ID_ANNOTATION];
  if (id || !ann[CREATE_PENDING_ANNOTATION]) return id;
  // A create may have happened before a crash: find it by its owner marker.
  const found = await findOwned(ctx, obj, want.desired);
  if (found)
    ctx.opts.events.record(
      obj,
      'Normal',
      'Recovered',
      `found ${found.id}, created before a restart; adopting it`,
    );
  return found?.id;
}

/**
 * One API create with the modules inline. The id goes to status with the Ready condition
 * (one write); the create-pending mark stays until the id annotation replaces it.
 */
async function create(ctx: EngineContext, obj: KubeObject, want: Wanted): Promise<Remote> {
  const inline = Object.fromEntries([...want.modules].filter(([, v]) => v !== null));
  const remote = await call(ctx, `create ${ctx.binding.kind}`, () =>
    ctx.binding.api.create(ctx.opts.api, { ...want.desired, ...want.common, ...inline }),
  );
  wrote(ctx, obj);
  return remote as Remote;
}

/** PUTs and DELETEs the modules' steps; returns the resource as it now is. */
async function applyModules(
  ctx: EngineContext,
  obj: KubeObject,
  remote: Remote,
  desired: Record<string, unknown>,
  steps: ModuleStep[],
): Promise<Remote> {
  const now: Remote = { ...remote };
  for (const step of steps) {
    const m = ctx.binding.modules!.find((x) => x.name === step.name)!;
    if ('delete' in step) {
      await call(ctx, `delete module ${m.name} of ${remote.id}`, () =>
        m.delete(ctx.opts.api, remote.id, desired),
      );
      now[m.name] = null;
      continue;
    }
    const put = await call(ctx, `put module ${m.name} of ${remote.id}`, () =>
      m.put(ctx.opts.api, remote.id, step.put, desired),
    );
    if (put && typeof put === 'object') now[m.name] = put;
  }
  if (steps.length) {
    wrote(ctx, obj);
    ctx.opts.events.record(
      obj,
      'Normal',
      'ModulesUpdated',
      `applied modules of ${remote.id}: ${moduleChanges(steps).join(', ')}`,
    );
  }
  return now;
}

/** The owner marker's object, asked only when it names another object of this installation. */
export async function ownerStateFor(ctx: EngineContext, obj: KubeObject, seen: Observation | undefined) {
  if (!seen?.found) return undefined;
  const marker = decodeMetadata(seen.remote.metadata).owner;
  if (!needsOwnerState(marker, ownerOf(ctx.binding.kind, obj, ctx.opts.clusterId))) return undefined;
  return (await ctx.opts.cache.ownerState?.(marker!.object, marker!.uid)) ?? 'unknown';
}

/** The first create: the finalizer and the create-pending mark first, so a crash orphans nothing. */
async function createFirst(ctx: EngineContext, obj: KubeObject, want: Wanted): Promise<Remote> {
  await patchMeta(ctx, obj, {
    finalizers: withFinalizer(obj),
    annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString() },
  });
  const remote = await create(ctx, obj, want);
  ctx.opts.events.record(obj, 'Normal', 'Created', `created ${remote.id}`);
  return remote;
}

/** Deleted behind our back: put it back, under a new create-pending mark. */
async function recreate(ctx: EngineContext, obj: KubeObject, want: Wanted, gone: string): Promise<Remote> {
  await patchMeta(ctx, obj, {
    annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString(), [ID_ANNOTATION]: null },
  });
  const remote = await create(ctx, obj, want);
  ctx.opts.events.record(
    obj,
    'Warning',
    'Recreated',
    `${gone} was deleted outside the cluster; created ${remote.id}`,
  );
  return remote;
}

/** The update, the modules and the adoption a decision names; returns the resource as it now is. */
async function apply(
  ctx: EngineContext,
  obj: KubeObject,
  want: Wanted,
  seen: Remote,
  d: Extract<SyncDecision, { patch: unknown }>,
  applied: Record<string, string> | undefined,
): Promise<Remote> {
  const { opts, binding } = ctx;
  let remote = seen;
  if (Object.keys(d.patch).length) {
    remote = (await call(ctx, `update ${remote.id}`, () =>
      binding.api.update(opts.api, remote.id, d.patch, want.desired),
    )) as Remote;
    wrote(ctx, obj);
    const e = updateEvent(obj, remote.id, d.patch);
    opts.events.record(obj, 'Normal', e.reason, e.message);
  }
  // the modules as the update's answer shows them (the same as observed, unless someone
  // changed them in between)
  const steps =
    remote === seen
      ? d.modules
      : planModules(binding, remote, want.modules, applied, opts.digestKey, obj.metadata.uid);
  remote = await applyModules(ctx, obj, remote, want.desired, steps);
  if (d.adopt?.annotate)
    await patchMeta(ctx, obj, {
      annotations: { [ID_ANNOTATION]: remote.id, [CREATE_PENDING_ANNOTATION]: null },
    });
  if (d.adopt?.event) opts.events.record(obj, 'Normal', 'Adopted', `adopted existing ${remote.id}`);
  return remote;
}

/** Creates, recreates, adopts or updates as planned; returns the remote resource as it now is. */
export async function act(
  ctx: EngineContext,
  obj: KubeObject,
  want: Wanted,
  id: string | undefined,
  seen: Observation | undefined,
): Promise<Remote> {
  if (!id) return createFirst(ctx, obj, want);
  if (!obj.metadata.finalizers?.includes(FINALIZER))
    await patchMeta(ctx, obj, { finalizers: withFinalizer(obj) });
  const ownerState = await ownerStateFor(ctx, obj, seen);
  const { opts, binding } = ctx;
  const applied = ctx.memos.peek(keyOf(obj))?.last?.digests;
  const d = planSync({
    binding,
    obj,
    clusterId: opts.clusterId,
    digestKey: opts.digestKey,
    want,
    id,
    seen,
    ownerState,
    applied,
  });
  if (d.action === 'stall') throw stall(d.reason, d.message);
  if (d.action === 'create') return createFirst(ctx, obj, want);
  if (d.action === 'recreate') return recreate(ctx, obj, want, d.gone);
  return apply(
    ctx,
    obj,
    want,
    (seen as { remote: Remote }).remote,
    d,
    applied ?? statusOf(obj).secretDigests,
  );
}

/**
 * Whether `id` is this object's to delete (deleteGuard): what its last sync established, else
 * the kind's bulk observation when fresh for the object, else a GET.
 */
async function guardDelete(ctx: EngineContext, obj: KubeObject, id: string) {
  const key = keyOf(obj);
  const last = ctx.memos.peek(key)?.last;
  const self = ownerOf(ctx.binding.kind, obj, ctx.opts.clusterId);
  const namespace = obj.metadata.namespace!;
  if (last?.id === id && !last.stalled) return deleteGuard({ id, self, namespace, evidence: 'synced' });
  const desired = ctx.binding.desiredFromStatus?.(statusOf(obj)) ?? {};
  const seen = await observerFor(ctx, key).observe(id, desired);
  const unmarked = seen.found && !decodeMetadata(seen.remote.metadata).owner;
  const other = unmarked
    ? ctx.opts.cache.list?.().find((o) => o.metadata.uid !== obj.metadata.uid && statusOf(o).id === id)
    : undefined;
  const claimedBy = other && `${ctx.binding.kind}/${other.metadata.namespace}/${other.metadata.name}`;
  return deleteGuard({ id, self, namespace, evidence: seen, claimedBy });
}

/**
 * The resource to DELETE: `id` when it is this object's; when its marker names another object,
 * none of that one's, but this object's own if `status.id` was turned away from it (found by
 * its marker, one list: this happens only when someone wrote status).
 */
async function deleteTarget(ctx: EngineContext, obj: KubeObject, id: string): Promise<string | undefined> {
  const guard = await guardDelete(ctx, obj, id);
  if (guard.action === 'delete') return id;
  if (guard.action === 'gone') return undefined;
  ctx.opts.events.record(obj, 'Warning', guard.reason, guard.message);
  const own = await findOwned(ctx, obj, ctx.binding.desiredFromStatus?.(statusOf(obj)) ?? {});
  return own && own.id !== id ? own.id : undefined;
}

/** Deletion as planned: the Event, the DELETE (once, and only of its own resource), then the finalizer goes. */
export async function finalize(ctx: EngineContext, obj: KubeObject): Promise<Outcome> {
  if (!obj.metadata.finalizers?.includes(FINALIZER)) return {};
  const key = keyOf(obj);
  const status = statusOf(obj);
  let id = status.id;
  // A create may have landed without its id being recorded: it must not be orphaned.
  if (!id && obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION]) id = (await findOwned(ctx, obj, {}))?.id;
  const memo = ctx.memos.of(key);
  // The manager requeues this object when a referrer goes away or stops referencing it.
  const referrers = id
    ? (ctx.opts.cache.referrersOf?.(ctx.binding.kind, obj.metadata.namespace!, obj.metadata.name) ?? [])
    : [];
  const d = planFinalize({ obj, id, referrers, deletedRemote: memo.deletedRemote });
  if (d.action === 'retain') ctx.opts.events.record(obj, 'Normal', 'Retained', d.message);
  if (d.action === 'wait') {
    ctx.opts.events.record(obj, 'Warning', d.reason, d.message);
    throw new ConditionError({ state: 'progressing', reason: d.reason, message: d.message }, {});
  }
  const target = d.action === 'delete' ? await deleteTarget(ctx, obj, d.id) : undefined;
  if (target) {
    try {
      await ctx.binding.api.delete(ctx.opts.api, target, status);
      memo.deletedRemote = target;
      ctx.opts.events.record(obj, 'Normal', 'Deleted', `deleted ${target}`);
    } catch (err) {
      const failed = deleteFailure(target, err, ctx.opts.cache.nameIds?.bind(ctx.opts.cache));
      if (!failed.deleted) throw new ConditionError(failed.phase, { retry: true });
    }
  }
  await patchMeta(ctx, obj, { finalizers: (obj.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) });
  ctx.memos.of(key).last = undefined;
  return {};
}
