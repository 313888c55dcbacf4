// The managed-resource engine: one reconciler for every kind. A binding says what differs
// between kinds; everything here is the same for all of them. Each sync reads
// gather -> plan -> execute -> report: gather.ts (one value: what the spec wants, through
// resolve.ts, and what the API and the caches hold, through read.ts), plan*.ts (every
// decision, pure; an update's modules are its second step, run here between the writes),
// execute.ts (the writes, deciding nothing), report.ts (status, conditions, Events). What an
// object says of itself (facts.ts) both read. A failure is a value (failure.ts) from wherever
// it arises to the report.

import { holdingAccount } from '../accounts/resolve.ts';
import type { AnyBinding } from '../bindings/binding.ts';
import { CREATE_PENDING_ANNOTATION, managedResource } from '../constants.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject, ResourcePath } from '../kube/kube.ts';
import { type PriorityCell, withPriority } from '../scheduler/budget.ts';
import * as execute from './execute.ts';
import { idsNamedBy } from './facts.ts';
import { type Failure, failure, fromStall, isFailure, ofThrown } from './failure.ts';
import { distrustForgedStatus } from './forged-status.ts';
import { gatherObserved, gatherSync } from './gather.ts';
import { recordIds } from './id-annotations.ts';
import { Memos } from './memo.ts';
import { ownerOf, planReconcile, type ReconcilePlan, type SyncDecision, unchanged } from './plan.ts';
import { accountUnusable, planAccount } from './plan-account.ts';
import { planModuleStep } from './plan-changes.ts';
import { planLostCreate } from './plan-create.ts';
import { deleteFailure, deleteGuard, deleteTarget, planFinalize } from './plan-delete.ts';
import { observeOnlyId } from './plan-observe-only.ts';
import { planGatheredObserve, planGatheredSync } from './plan-sync.ts';
import { ConflictReader, findOwned, readDeleteEvidence, readLostCreate } from './read.ts';
import * as report from './report.ts';
import {
  type EngineContext,
  type EngineOptions,
  type Outcome,
  type Remote,
  type ScopedOptions,
  type Seen,
  statusOf,
  type Wanted,
} from './types.ts';

export class Engine implements EngineContext {
  readonly binding: AnyBinding;
  readonly resource: ResourcePath;
  readonly opts: ScopedOptions;
  readonly memos = new Memos();
  private readonly conflicts: ConflictReader;

  constructor(o: EngineOptions) {
    // without accounts every object uses `api`; with them, each reconcile gets its account's
    // (the engine's own options then serve only Kubernetes writes)
    if (!o.api && !o.accounts) throw new Error('engine: neither an API client nor accounts');
    this.opts = o as ScopedOptions;
    this.binding = o.binding;
    this.resource = managedResource(o.binding.plural);
    this.conflicts = new ConflictReader(this);
  }

  /**
   * The context of one reconcile: the object's account's client and bulk observation. A
   * delete goes to the account that holds the resource; anything else to the account the
   * object resolves to, which must be the one holding it. No account, or one not Ready: a
   * condition, and no API request.
   */
  private scope(obj: KubeObject): EngineContext | Failure {
    const accounts = this.opts.accounts;
    if (!accounts) return this;
    const ns = obj.metadata.namespace ?? '';
    const deleting = !!obj.metadata.deletionTimestamp;
    const held = holdingAccount(statusOf(obj), ns, (id) => accounts.mayHold(obj, id));
    const account = planAccount({ deleting, held, resolved: accounts.accountOf(obj) });
    if (isFailure(account)) return account;
    const id = account.id;
    const u = accounts.use(id, this.binding.kind, deleting);
    if ('phase' in u) return accountUnusable(u.phase);
    return {
      opts: { ...this.opts, api: u.client, observer: u.observer },
      account: id,
      mayAdopt: accounts.mayAdopt(id, ns),
      binding: this.binding,
      resource: this.resource,
      memos: this.memos,
      name: this.name,
    };
  }

  get name(): string {
    return this.binding.kind.toLowerCase();
  }

  /** Writes the pending id annotations until `busy()` says work arrived (id-annotations.ts). */
  recordIds(busy: () => boolean, opts: { olderThanMs?: number; max?: number } = {}): Promise<number> {
    return recordIds(this, busy, opts);
  }

  /** What this process knows of the object may be stale (a watch gap, a referenced object changed): read afresh. */
  readAfresh(key: string): void {
    this.memos.readAfresh(key);
  }

  /**
   * The user changed an object whose reconcile is in flight: its remaining API calls go at
   * urgent priority, so the edit (re-queued behind it) does not wait behind creates.
   */
  escalate(key: string): void {
    const cell = this.memos.peek(key)?.running;
    if (cell && cell.priority !== 'urgent') {
      cell.priority = 'urgent';
      cell.raised?.();
    }
  }

  /** Drops what is kept for an object that is gone. */
  drop(key: string): void {
    this.memos.drop(key);
    this.opts.cache.confirm?.(key, undefined);
  }

  /**
   * `onWait`: told when a call of this run has to wait for the account's budget (see runWorker);
   * `fresh`: the run is its namespace's newcomer (since then), and its calls take the newcomer's turn.
   */
  async reconcile(key: string, onWait?: () => void, fresh?: number): Promise<Outcome> {
    // a copy: the cache must only change through watch events, or old/new comparisons lie
    const resetsAtStart = this.memos.peek(key)?.resets ?? 0;
    const cached = this.opts.cache.get(key);
    if (!cached) {
      this.drop(key);
      return {};
    }
    // most reconciles find nothing to do (the watch event of this process's own write, a
    // resync's re-check): decided on the cached object, which only needs copying for a write
    if (this.settled(cached)) return { unchanged: true };
    const obj = structuredClone(cached);
    if (this.opts.accounts) distrustForgedStatus(this.opts.accounts, this.opts.events, obj);
    const p = planReconcile(obj);
    if (p.step.action === 'pause') return p.step.write ? report.pause(this, obj) : {};
    if (p.resumed) report.resumed(this, obj);
    // nothing of it remains remotely (or it never had anything): no account needed to let it go
    if (p.step.action === 'release') return {};
    let result: Outcome | Failure;
    try {
      result = await this.run(obj, p, resetsAtStart, { onWait, fresh });
    } catch (err) {
      const thrown = ofThrown(err);
      if (!thrown) throw err;
      if ('outcome' in thrown) return thrown.outcome;
      result = thrown.failure;
    }
    return isFailure(result) ? report.reportFailure(this, obj, result, resetsAtStart, p.requested) : result;
  }

  /**
   * Nothing to do, decided without copying the object: a sync or observe-only step with no
   * finalizer to restore, nothing resumed, and nothing changed since the last sync (the same
   * test sync() and observeOnly() begin with, on the same object).
   */
  private settled(cached: KubeObject): boolean {
    const p = planReconcile(cached);
    const s = p.step;
    if (p.resumed || !(s.action === 'observe-only' || (s.action === 'sync' && s.finalizer === 'keep')))
      return false;
    const ctx = this.scope(cached);
    return !isFailure(ctx) && this.unchanged(ctx, cached, p.requested);
  }

  /** The object's account, then its step at its priority (the namespace is the flow whose turn it takes). */
  private async run(
    obj: KubeObject,
    p: ReconcilePlan,
    resetsAtStart: number,
    wait: Pick<PriorityCell, 'onWait' | 'fresh'>,
  ): Promise<Outcome | Failure> {
    const ctx = this.scope(obj);
    if (isFailure(ctx)) return ctx;
    const key = keyOf(obj);
    const cell: PriorityCell = { priority: p.priority, flow: obj.metadata.namespace ?? '', ...wait };
    this.memos.of(key).running = cell;
    const step = p.step;
    return withPriority(cell, () =>
      step.action === 'finalize'
        ? this.finalize(ctx, obj)
        : step.action === 'observe-only'
          ? this.observeOnly(ctx, obj, p.requested, resetsAtStart)
          : this.sync(ctx, obj, step.action === 'sync' ? step.finalizer : 'keep', p.requested, resetsAtStart),
    ).finally(() => {
      const memo = this.memos.peek(key);
      if (memo?.running === cell) memo.running = undefined;
      // gone while this ran (its delete event kept the memo for this run only)
      if (!this.opts.cache.get(key)) this.drop(key);
    });
  }

  private unchanged(ctx: EngineContext, obj: KubeObject, requested: string | undefined): boolean {
    const memo = this.memos.peek(keyOf(obj));
    return unchanged({
      obj,
      requested,
      last: memo?.last,
      lastRemoteWrite: memo?.lastRemoteWrite,
      bulk: ctx.opts.observer,
      resyncMs: this.opts.resyncMs,
      now: Date.now(),
    });
  }

  /**
   * gather -> plan -> execute -> report. What the object wants (references, Secrets,
   * modules) and what the API holds (from the kind's bulk list when it is fresh for this
   * object, else one GET), in one value; then the plan: create, recreate, adopt or update, or
   * a failure; the writes; and the report.
   */
  private async sync(
    ctx: EngineContext,
    obj: KubeObject,
    finalizer: 'keep' | 'restore' | 'add',
    requested: string | undefined,
    resetsAtStart: number,
  ): Promise<Outcome | Failure> {
    const key = keyOf(obj);
    if (finalizer === 'restore') await execute.restoreFinalizer(ctx, obj);
    if (this.unchanged(ctx, obj, requested)) return {};
    const g = await gatherSync(ctx, obj, this.conflicts, requested);
    const { binding, opts } = this;
    const p = planGatheredSync(g, {
      ...{ binding, obj, clusterId: opts.clusterId, digestKey: opts.digestKey },
      ...{ finalizer, mayAdopt: ctx.mayAdopt, now: Date.now() },
    });
    execute.noteLostCreate(ctx, obj, p.lostCreate, p.recovered);
    const d = p.decision;
    if (isFailure(d)) return d;
    const want = g.want as Wanted;
    // the resource's marker is checked (its own, or one the namespace may take): others may use its id
    if ('id' in d) ctx.opts.cache.confirm?.(key, d.id);
    const remote = await this.write(ctx, obj, want, d, g.seen as Seen | undefined, p.applied);
    await report.reportSynced(ctx, obj, { remote, want, digests: p.digests!, requested, resetsAtStart });
    // the next look comes with the kind's next bulk list
    return {};
  }

  /**
   * The writes a sync decision names, with its second step (the modules planned again on what
   * the update returned) between them; returns the remote resource as it now is.
   */
  private async write(
    ctx: EngineContext,
    obj: KubeObject,
    want: Wanted,
    d: Exclude<SyncDecision, { action: 'stall' }>,
    seen: Seen | undefined,
    applied: Record<string, string> | undefined,
  ): Promise<Remote> {
    if (d.action === 'create') return execute.create(ctx, obj, want);
    if (d.action === 'recreate') return execute.create(ctx, obj, want, d.gone);
    if (d.addFinalizer) await execute.addFinalizer(ctx, obj);
    let remote = (seen as { remote: Remote }).remote;
    if (d.updated) remote = await execute.update(ctx, obj, remote, d.patch, want.desired, d.updated);
    // the plan's second step: the modules, on what the update returned
    const { binding, opts } = this;
    const modules = planModuleStep({
      decision: d,
      binding,
      updated: remote,
      want,
      applied,
      ...{ obj, digestKey: opts.digestKey },
    });
    remote = await execute.writeModules(ctx, obj, remote, want.desired, modules.steps, modules.event);
    if (d.adopt) await execute.adopted(ctx, obj, remote.id, d.adopt);
    return remote;
  }

  /**
   * Observe-only: the resource named by the id annotation is read (from the kind's bulk list
   * when fresh, else a GET), reported in status, and compared with the spec; nothing is ever
   * written to the account, and the object needs no finalizer.
   */
  private async observeOnly(
    ctx: EngineContext,
    obj: KubeObject,
    requested: string | undefined,
    resetsAtStart: number,
  ): Promise<Outcome | Failure> {
    if (this.unchanged(ctx, obj, requested)) return {};
    const known = observeOnlyId(obj);
    if ('action' in known) return fromStall(known);
    const g = await gatherObserved(ctx, obj, known.id, requested);
    const { binding, opts } = this;
    const d = planGatheredObserve(g, {
      ...{ binding, obj, clusterId: opts.clusterId, id: known.id, mayAdopt: ctx.mayAdopt },
    });
    if (isFailure(d)) return d;
    await report.reportObserved(ctx, obj, d, { want: g.want as Wanted, requested, resetsAtStart });
    return {};
  }

  /** Deletion: the Event, the DELETE (once, and only of its own resource), then the finalizer goes. */
  private async finalize(ctx: EngineContext, obj: KubeObject): Promise<Outcome | Failure> {
    const memo = this.memos.of(keyOf(obj));
    let id = statusOf(obj).id;
    // A create may have landed without its id being recorded, or may land late: it must not be orphaned.
    if (!id && obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION]) {
      const look = await readLostCreate(ctx, obj, {});
      const lost = planLostCreate(this.binding.kind, look, Date.now());
      if (lost.action !== 'create') execute.noteLostCreate(ctx, obj, lost.memo);
      if (lost.action === 'wait') return lost.failure;
      id = lost.action === 'recovered' ? lost.id : undefined;
    }
    // The manager requeues this object when a referrer goes away or stops referencing it.
    const referrers = id
      ? this.opts.cache.referrersOf(this.binding.kind, obj.metadata.namespace!, obj.metadata.name)
      : [];
    const d = planFinalize({ obj, id, referrers, deletedRemote: memo.deletedRemote });
    if (d.action === 'retain') this.opts.events.record(obj, 'Normal', 'Retained', d.message);
    if (d.action === 'wait') {
      this.opts.events.record(obj, 'Warning', d.reason, d.message);
      return failure({ state: 'progressing', reason: d.reason, message: d.message });
    }
    const target = d.action === 'delete' ? await this.deleteTarget(ctx, obj, d.id) : undefined;
    const failed = target ? await execute.deleteRemote(ctx, obj, target) : undefined;
    if (failed) {
      const f = deleteFailure(target!, failed.error, (text) =>
        ctx.opts.cache.nameIds(text, obj.metadata.namespace ?? '', idsNamedBy(obj, target!)),
      );
      if (!f.deleted) return failure(f.phase, { retry: true });
    }
    await execute.removeFinalizer(ctx, obj);
    memo.last = undefined;
    return {};
  }

  /**
   * The resource to DELETE: `id` when it is this object's; when its marker names another object,
   * none of that one's, but this object's own if `status.id` was turned away from it (found by
   * its marker, one list: this happens only when someone wrote status).
   */
  private async deleteTarget(ctx: EngineContext, obj: KubeObject, id: string): Promise<string | undefined> {
    const { evidence, claimedBy } = await readDeleteEvidence(ctx, obj, id);
    const self = ownerOf(this.binding.kind, obj, this.opts.clusterId);
    const namespace = obj.metadata.namespace!;
    const guard = deleteGuard({ id, self, namespace, evidence, claimedBy, mayAdopt: ctx.mayAdopt });
    if (guard.action !== 'release') return deleteTarget(id, guard);
    this.opts.events.record(obj, 'Warning', guard.reason, guard.message);
    const own = await findOwned(ctx, obj, this.binding.desiredFromStatus?.(statusOf(obj)) ?? {});
    return deleteTarget(id, guard, own);
  }
}
