// The managed-resource engine: one reconciler for every kind. A binding says what differs
// between kinds; everything here is the same for all of them. The decisions are plan.ts's,
// carried out by execute.ts and reported by report.ts.
import { type Priority, type PriorityCell, withPriority } from '../../../api/rate-limiter.ts';
import { holdingAccount } from '../accounts/resolve.ts';
import type { AnyBinding } from '../binding.ts';
import {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  ID_ANNOTATION,
  managedResource,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
} from '../constants.ts';
import { keyOf } from '../informer.ts';
import { isConflict, KubeError, type KubeObject, type ResourcePath } from '../kube.ts';
import { CONFLICT_RECHECK_MS, ConditionError, stall } from './condition-error.ts';
import { act, finalize, keepFinalizer, knownId, ownerStateFor, patchMeta } from './execute.ts';
import { Memos } from './memo.ts';
import { Conflicts, observerFor, unchanged } from './observe.ts';
import { digestsOf, observedId, planObserve } from './plan.ts';
import { pause, remember, reportFailure, writeStatus } from './report.ts';
import { wanted } from './resolve.ts';
import {
  type EngineContext,
  type EngineOptions,
  type Outcome,
  type Remote,
  type ScopedOptions,
  statusOf,
} from './types.ts';

/** An object waiting for its account looks again this often (an account turning Ready re-queues it sooner). */
const ACCOUNT_RECHECK_MS = 60_000;

const isPaused = (obj: KubeObject) => obj.metadata.annotations?.[PAUSED_ANNOTATION] === 'true';
/** managementPolicy Observe: read and report, never write to the account. */
const observesOnly = (obj: KubeObject) =>
  (obj.spec as { managementPolicy?: string } | undefined)?.managementPolicy === 'Observe';
/** A reconcile-requested-at value not handled yet. */
const requestedReconcile = (obj: KubeObject): string | undefined => {
  const v = obj.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
  return v && v !== statusOf(obj).lastHandledReconcileAt ? v : undefined;
};

/**
 * Why a reconcile calls the API decides its place in the budget: a change to a resource
 * that exists (an edit, a delete) before creates, both before observation. A reconcile
 * asked for by annotation is a user's request too.
 */
export function priorityOf(obj: KubeObject, requested: string | undefined): Priority {
  const status = statusOf(obj);
  return obj.metadata.deletionTimestamp ||
    requested ||
    (status.id && status.observedGeneration !== obj.metadata.generation)
    ? 'urgent'
    : 'high';
}

export class Engine implements EngineContext {
  readonly binding: AnyBinding;
  readonly resource: ResourcePath;
  readonly opts: ScopedOptions;
  readonly memos = new Memos();
  private readonly conflicts: Conflicts;

  constructor(o: EngineOptions) {
    // without accounts every object uses `api`; with them, each reconcile gets its account's
    // (the engine's own options then serve only Kubernetes writes)
    if (!o.api && !o.accounts) throw new Error('engine: neither an API client nor accounts');
    this.opts = o as ScopedOptions;
    this.binding = o.binding;
    this.resource = managedResource(o.binding.plural);
    this.conflicts = new Conflicts(this);
  }

  /**
   * The context of one reconcile: the object's account's client and bulk observation. A
   * delete goes to the account that holds the resource; anything else to the account the
   * object resolves to, which must be the one holding it. No account, or one not Ready: a
   * condition, and no API request.
   */
  private scope(obj: KubeObject): EngineContext {
    const accounts = this.opts.accounts;
    if (!accounts) return this;
    const st = statusOf(obj);
    const held = holdingAccount(st);
    let id: string;
    if (obj.metadata.deletionTimestamp && held) id = held;
    else {
      const r = accounts.accountOf(obj);
      if (!r.ok)
        throw new ConditionError(
          { state: r.state, reason: r.reason, message: r.message },
          r.state === 'progressing' ? { requeueAfterMs: ACCOUNT_RECHECK_MS } : {},
        );
      id = r.id;
    }
    const u = accounts.use(id, this.binding.kind, !!obj.metadata.deletionTimestamp);
    if ('phase' in u) throw new ConditionError(u.phase, { requeueAfterMs: ACCOUNT_RECHECK_MS });
    return {
      opts: { ...this.opts, api: u.client, observer: u.observer },
      account: id,
      binding: this.binding,
      resource: this.resource,
      memos: this.memos,
      name: this.name,
    };
  }

  get name(): string {
    return this.binding.kind.toLowerCase();
  }

  /**
   * Writes the pending id annotations until `busy()` says work arrived; returns how many.
   * `olderThanMs`: only those waiting at least that long (an operator that is never idle
   * still writes them, a few at a time).
   */
  async recordIds(busy: () => boolean, opts: { olderThanMs?: number; max?: number } = {}): Promise<number> {
    let written = 0;
    const now = Date.now();
    for (const [key, { id, since }] of this.memos.idsToRecord()) {
      if (busy() || written >= (opts.max ?? Infinity)) break;
      if (opts.olderThanMs !== undefined && now - since < opts.olderThanMs) continue;
      const cached = this.opts.cache.get(key);
      if (cached && isPaused(cached)) continue;
      const memo = this.memos.of(key);
      if (
        !cached ||
        cached.metadata.deletionTimestamp ||
        cached.metadata.annotations?.[ID_ANNOTATION] === id
      ) {
        memo.idToRecord = undefined;
        continue;
      }
      // the cache has not seen the status write yet: next round
      if (statusOf(cached).id !== id) continue;
      try {
        await patchMeta(this, structuredClone(cached), {
          annotations: { [ID_ANNOTATION]: id, [CREATE_PENDING_ANNOTATION]: null },
        });
        memo.idToRecord = undefined;
        written++;
      } catch (err) {
        // a newer version in flight (409) or the API server away: next round
        this.opts.log.debug({ object: key, err: (err as Error).message }, 'id annotation not written yet');
        if (!(err instanceof KubeError)) throw err;
      }
    }
    return written;
  }

  forget(key: string): void {
    this.memos.forget(key);
  }

  /**
   * The user changed an object whose reconcile is in flight: its remaining API calls go at
   * urgent priority, so the edit (re-queued behind it) does not wait behind creates.
   */
  escalate(key: string): void {
    const cell = this.memos.peek(key)?.running;
    if (cell && cell.priority !== 'urgent') {
      cell.priority = 'urgent';
      if (this.opts.accounts) this.opts.accounts.reprioritized();
      else this.opts.api.transport.limiter.reprioritized();
    }
  }

  /** Drops what is kept for an object that is gone. */
  drop(key: string): void {
    this.memos.drop(key);
  }

  async reconcile(key: string): Promise<Outcome> {
    // a copy: the cache must only change through watch events, or old/new comparisons lie
    const resetsAtStart = this.memos.peek(key)?.resets ?? 0;
    const cached = this.opts.cache.get(key);
    const obj = cached && structuredClone(cached);
    if (!obj) {
      const memo = this.memos.peek(key);
      if (memo) memo.last = undefined;
      return {};
    }
    if (isPaused(obj)) return pause(this, obj);
    if (statusOf(obj).conditions?.some((c) => c.type === 'Paused')) {
      // resumed: one observation, whatever the last sync knew
      this.memos.of(key).last = undefined;
      this.opts.events.record(
        obj,
        'Normal',
        'ReconcileResumed',
        `${PAUSED_ANNOTATION} removed: reconciling again`,
      );
    }
    const requested = requestedReconcile(obj);
    // nothing of it remains remotely (or it never had anything): no account needed to let it go
    if (obj.metadata.deletionTimestamp && !obj.metadata.finalizers?.includes(FINALIZER)) return {};
    try {
      const ctx = this.scope(obj);
      // the object's namespace is the flow whose turn its calls take
      const cell: PriorityCell = { priority: priorityOf(obj, requested), flow: obj.metadata.namespace ?? '' };
      this.memos.of(key).running = cell;
      return await withPriority(cell, () =>
        obj.metadata.deletionTimestamp ? finalize(ctx, obj) : this.sync(ctx, obj, resetsAtStart, requested),
      ).finally(() => {
        const memo = this.memos.peek(key);
        if (memo?.running === cell) memo.running = undefined;
      });
    } catch (err) {
      if (err instanceof ConditionError) return reportFailure(this, obj, err, resetsAtStart, requested);
      if (err instanceof KubeError && isConflict(err)) return { retry: true };
      throw err;
    }
  }

  /**
   * observe -> compare -> act. What the object wants (references, Secrets, modules), what
   * the API holds (from the kind's bulk observation when it is fresh for this object,
   * else one GET), then create, recreate, adopt or update, and report.
   */
  private async sync(
    ctx: EngineContext,
    obj: KubeObject,
    resetsAtStart: number,
    requested?: string,
  ): Promise<Outcome> {
    const key = keyOf(obj);
    if (observesOnly(obj)) return this.observeOnly(ctx, obj, resetsAtStart, requested);
    await keepFinalizer(ctx, obj);
    if (!requested && unchanged(ctx, key, obj)) return {};
    // asked for by annotation: read the resource itself, not the kind's last list
    const observer = observerFor(ctx, key, !!requested);
    const want = await wanted(ctx, obj);
    const id = await knownId(ctx, obj, want);
    const seen = id ? await observer.observe(id, want.desired) : undefined;
    const conflict = this.conflicts.of(ctx, obj, want, id, seen);
    if (conflict) throw stall('Conflict', conflict.message, { requeueAfterMs: CONFLICT_RECHECK_MS });
    const remote = await act(ctx, obj, want, id, seen);
    const digests = digestsOf(this.binding, want.modules, this.opts.digestKey);
    await writeStatus(
      ctx,
      obj,
      {
        ...this.remoteStatus(remote, want.desired),
        ...(ctx.account ? { account: ctx.account } : {}),
        ...(this.binding.modules?.some((m) => m.secretPaths) ? { secretDigests: digests } : {}),
        lastHandledReconcileAt: requested ?? statusOf(obj).lastHandledReconcileAt,
      },
      { state: 'ready', reason: 'Synced', message: `${this.binding.kind} ${remote.id} is in sync` },
    );
    const memo = this.memos.of(key);
    if (obj.metadata.annotations?.[ID_ANNOTATION] === remote.id) memo.idToRecord = undefined;
    else this.memos.recordLater(key, remote.id, Date.now());
    remember(ctx, key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      id: remote.id,
      digests,
      status: obj.status,
      resourceVersion: obj.metadata.resourceVersion,
    });
    memo.waitingSince = undefined;
    memo.unavailableNoted = undefined;
    // the next look comes with the kind's next bulk observation
    return {};
  }

  private remoteStatus(remote: Remote, desired: Record<string, unknown>): Record<string, unknown> {
    return {
      id: remote.id,
      uri: remote.uri,
      createdAt: remote.created_at,
      ...(this.binding.statusOf?.(remote, desired) ?? {}),
    };
  }

  /**
   * managementPolicy Observe: the resource named by the id annotation is read (from the kind's
   * bulk observation when fresh, else a GET), reported in status, and compared with the spec;
   * nothing is ever written to the account, and the object needs no finalizer.
   */
  private async observeOnly(
    ctx: EngineContext,
    obj: KubeObject,
    resetsAtStart: number,
    requested?: string,
  ): Promise<Outcome> {
    const key = keyOf(obj);
    if (!requested && unchanged(ctx, key, obj)) return {};
    const status = statusOf(obj);
    const known = observedId(obj);
    if ('action' in known) throw stall(known.reason, known.message);
    const want = await wanted(ctx, obj);
    const seen = await observerFor(ctx, key, !!requested).observe(known.id, want.desired);
    const ownerState = await ownerStateFor(ctx, obj, seen);
    const { binding, opts } = this;
    const d = planObserve({ binding, obj, clusterId: opts.clusterId, id: known.id, seen, want, ownerState });
    if (d.action === 'stall') throw stall(d.reason, d.message);
    const before = status.conditions?.find((c) => c.type === 'Ready')?.message;
    const fields = {
      ...this.remoteStatus(d.remote, want.desired),
      ...(ctx.account ? { account: ctx.account } : {}),
      lastHandledReconcileAt: requested ?? status.lastHandledReconcileAt,
    };
    await writeStatus(ctx, obj, fields, d.phase);
    // an Event when the drift is new or different, not at every observation
    const after = statusOf(obj).conditions?.find((c) => c.type === 'Ready')?.message;
    if (d.drift.length && after !== before)
      opts.events.record(
        obj,
        'Normal',
        'DriftObserved',
        `${d.remote.id} differs from the spec in ${d.drift.join(', ')}`,
      );
    remember(ctx, key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      id: d.remote.id,
      status: obj.status,
      resourceVersion: obj.metadata.resourceVersion,
    });
    return {};
  }
}
