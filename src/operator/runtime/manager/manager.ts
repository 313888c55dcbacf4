// Wires informers, queues, workers and engines together; runs them only while leader;
// answers the probes; drains in-flight reconciles on shutdown.

import { ACCOUNT_RESOURCES } from '../accounts/kinds.ts';
import { FINALIZER, INSTANCE_LABEL } from '../constants.ts';
import { waitForCrds } from '../kube/crds-installed.ts';
import { EventRecorder } from '../kube/events.ts';
import type { Informer } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { LeaderElector } from '../kube/leader.ts';
import { SecretStore } from '../kube/secrets.ts';
import { ObjectCache } from '../state/cache.ts';
import { type Observer, refreshAll } from '../state/observer.ts';
import { References } from '../state/references.ts';
import { AccessKeeper, awaitingIn } from './access.ts';
import { Dispatch } from './dispatch.ts';
import { carrierOf, kindController, observedWith } from './kind-controller.ts';
import { LiveTunnels, type OnlineTunnel } from './live-tunnels.ts';
import { ManagerAccounts } from './manager-accounts.ts';
import type { ManagerOptions } from './manager-options.ts';
import { type Check, watchHealth } from './probes.ts';
import { type Controller, runWorker, scrape, Timers } from './worker.ts';

export type { ManagerOptions };
export { INSTANCE_LABEL };

const held = (o?: KubeObject) => !!o?.metadata.finalizers?.includes(FINALIZER);

/** How often the manager looks for a quiet moment (idle work: id annotations). */
const IDLE_CHECK_MS = 1000;
/** Overdue id annotations written per kind and check while the operator is busy. */
const OVERDUE_PER_CHECK = 5;

export class Manager {
  private readonly opts: ManagerOptions;
  readonly controllers = new Map<string, Controller>();
  private elector?: LeaderElector;
  private started = false;
  private stopping = false;
  private workers: Promise<void>[] = [];
  /** Timers that stop() cuts short. */
  private readonly timers = new Timers();

  constructor(o: ManagerOptions) {
    this.opts = o;
    if (o.accounts)
      this.accounts = new ManagerAccounts({
        accounts: o.accounts,
        controllers: this.controllers,
        references: this.references,
        dispatch: () => this.dispatch,
        log: o.log,
        concurrency: o.concurrency,
        caughtUp: () => this.caughtUp,
      });
    this.cache = new ObjectCache({
      kube: o.kube,
      references: this.references,
      sharedNamespaces: o.sharedNamespaces,
      secrets: () => this.secrets,
    });
    this.dispatch = new Dispatch({
      controllers: this.controllers,
      references: this.references,
      cache: this.cache,
      secrets: () => this.secrets,
      metrics: o.metrics,
      accountUnused: (ref) => this.accounts?.ctl?.unused(ref),
    });
    if (o.probes) {
      o.probes.health = () => this.health();
      o.probes.readiness = () => this.readiness();
      o.probes.beforeScrape = () =>
        scrape(o.metrics, this.secrets, [...this.controllers.values()], this.started ? this.informers : []);
    }
  }

  private events?: EventRecorder;
  private live?: LiveTunnels;

  /**
   * Each account's online tunnels (one paged list per account, polled by the leader): every
   * object of a kind tunnels serve shows how many of its account's tunnels serve it now.
   * Without accounts, the one list is the installation's.
   */
  async updateTunnels(byAccount: Map<string, OnlineTunnel[]>): Promise<void> {
    if (!this.started || !this.events) return;
    this.live ??= new LiveTunnels({
      kube: this.opts.kube,
      events: this.events,
      log: this.opts.log,
      gauge: (namespace, name, kind, count) =>
        this.opts.metrics.tunnelsOnlineByObject.set({ kind, namespace, name }, count ?? 0),
    });
    this.opts.metrics.tunnelsOnlineByObject.reset();
    const kinds = [...this.controllers.values()].map((c) => ({
      binding: c.binding,
      objects: c.informers.flatMap((i) => i.list()),
    }));
    await this.live.applyByAccount(
      byAccount,
      kinds,
      (o, account) => !this.accounts?.ctl || this.accounts.uses(o, account),
    );
  }

  /** Referenced Secrets (metadata watched, data read by name); undefined when no kind reads Secrets. */
  private secrets?: SecretStore;

  /** Who references what (re-queues, reference-aware deletion). */
  private readonly references = new References();
  private readonly cache: ObjectCache;
  /** Informer events into queue keys. */
  private readonly dispatch: Dispatch;

  private get informers(): Informer[] {
    return [
      ...[...this.controllers.values()].flatMap((c) => c.informers),
      ...(this.secrets?.informers ?? []),
      ...(this.accounts?.ctl?.informers ?? []),
    ];
  }

  /** Accounts: each object's, the account reconciler, the per-account cap of the queues. */
  private readonly accounts?: ManagerAccounts;

  /** The bulk observations a kind's objects need: one per account they use (that can serve). */
  private observersOf(c: Controller): Observer[] {
    return this.accounts ? this.accounts.observersOf(c) : [c.observer];
  }

  get synced(): boolean {
    return this.informers.every((i) => i.hasSynced);
  }

  /** Unhealthy when a watch is frozen (probes.ts watchHealth). */
  health(now = Date.now()): Check {
    return this.started ? watchHealth(this.informers, now) : { ok: true };
  }

  /**
   * Not ready while CRDs are missing (the reason says which and how to install them); then a
   * standby is ready (it serves probes and waits), a leader once every cache synced.
   */
  readiness(): Check {
    if (this.stopping) return { ok: false, reason: 'stopping' };
    if (this.waitingFor) return { ok: false, reason: this.waitingFor };
    if (this.started && !this.synced) return { ok: false, reason: 'caches not synced' };
    return { ok: true };
  }
  get isLeader(): boolean {
    return !this.opts.leaderElection.enabled || !!this.elector?.isLeader;
  }

  /** Why the operator waits before it starts: CRDs it needs that are not installed. */
  private waitingFor?: string;

  async start(): Promise<void> {
    // every replica says it, and none is ready, until the CRDs are there
    await waitForCrds({
      kube: this.opts.kube,
      // the account kinds too: their informers start with the rest
      plurals: [...this.opts.bindings.map((b) => b.plural), ...ACCOUNT_RESOURCES.map((a) => a.plural)],
      namespace: this.opts.namespaces[0],
      clusterScoped: ACCOUNT_RESOURCES.filter((a) => a.scope === 'Cluster').map((a) => a.plural),
      log: this.opts.log,
      sleep: (ms) => this.timers.sleep(ms),
      stopped: () => this.stopping,
      onMissing: (reason) => {
        this.waitingFor = reason;
      },
    });
    if (this.stopping) return;
    if (this.opts.leaderElection.enabled) {
      this.elector = new LeaderElector({
        kube: this.opts.kube,
        ...this.opts.leaderElection,
        identity: this.opts.identity,
        log: this.opts.log,
      });
      this.opts.log.info({ identity: this.opts.identity }, 'waiting for leadership');
      await this.elector.acquire(() => {
        // a standby leads once the lease runs out, from fresh caches: no reconcile of this
        // replica may go on writing meanwhile, so there is no drain (a create in flight is
        // found again by its create-pending mark)
        this.opts.log.error('leadership lost: exiting at once so a standby takes over');
        process.exit(1);
      });
      if (this.stopping) return;
      this.opts.metrics.leader.set({ name: this.opts.leaderElection.name }, 1);
    }
    this.startControllers();
  }

  private startControllers(): void {
    const events = new EventRecorder(this.opts.kube, this.opts.log, this.opts.identity, this.opts.instance);
    this.events = events;
    events.onRecord = (reason) => this.opts.metrics.eventsRecorded.inc({ reason });
    const namespaces = this.opts.namespaces.length ? this.opts.namespaces : [undefined];
    this.accounts?.start({
      kube: this.opts.kube,
      namespaces,
      labelSelector: this.labelSelector,
      informer: this.opts.informer,
    });
    const deps = {
      ...this.opts,
      namespaces,
      labelSelector: this.labelSelector,
      cache: this.cache,
      references: this.references,
      accounts: this.accounts,
      events,
      secrets: () => this.secrets,
      observerOf: (kind: string) => this.controllers.get(kind)?.observer,
    };
    for (const b of this.opts.bindings) this.controllers.set(b.kind, kindController(b, deps));
    if (this.opts.bindings.some((b) => b.secrets)) this.startSecrets(namespaces);
    for (const c of this.controllers.values()) {
      for (const inf of c.informers) {
        inf.on((type, obj, old) => {
          this.dispatch.onEvent(c, type, obj, old);
          // its first remote resource: the account holds its key Secret now, not at its next look
          if (this.accounts?.ctl && held(obj) && !held(old)) {
            const r = this.accounts.accountOf(obj);
            if (r.ok) this.accounts.ctl.touched(r.id);
          }
        });
        inf.start();
      }
    }
    this.startWorkers();
    this.started = true;
  }

  private get labelSelector(): string {
    return this.opts.instance ? `${INSTANCE_LABEL}=${this.opts.instance}` : `!${INSTANCE_LABEL}`;
  }

  private startSecrets(namespaces: (string | undefined)[]): void {
    this.secrets = new SecretStore({
      kube: this.opts.kube,
      namespaces,
      log: this.opts.log,
      informer: this.opts.informer,
    });
    for (const inf of this.secrets.informers) {
      // a rotated Secret re-applies the modules that use it, and gives an account its new key
      inf.on((_type, obj) => {
        this.dispatch.enqueueDependents('Secret', obj);
        this.accounts?.ctl?.secretChanged(obj.metadata.namespace ?? '', obj.metadata.name);
      });
      inf.start();
    }
  }

  private startWorkers(): void {
    // Workers start once every cache they read has synced (own kind, referenced kinds,
    // Secrets): by then the reverse index of references is complete, so an object is never
    // judged against a referenced object that is merely not listed yet, and every later
    // change to a referenced object finds its dependants.
    // After a restart an object should be compared with a first bulk list instead of costing a
    // GET, and never report waiting for an account that is merely not looked at yet. With
    // accounts, only an account's own objects wait for its first check and lists, in the queues
    // (ManagerAccounts.startLists, `deferred`): one slow or hung account does not hold every
    // namespace's start. Without them, the workers wait for the one account's first lists.
    const synced = Promise.all(this.informers.map((i) => i.synced));
    const accounts = this.accounts;
    const all = accounts?.ctl
      ? synced.then(async () => {
          await accounts.ctl!.begun;
          accounts.startLists();
        })
      : synced.then(() =>
          refreshAll(
            [...this.controllers.values()].flatMap((c) => (this.count(c) ? this.observersOf(c) : [])),
          ),
        );
    for (const c of this.controllers.values()) {
      for (let i = 0; i < this.opts.concurrency; i++) this.workers.push(runWorker(c, this.opts, all));
      // one more worker for edits and deletes of existing objects only, and one for the first
      // item of a namespace none of whose work is in progress
      this.workers.push(runWorker(c, this.opts, all, 'urgent'));
      this.workers.push(runWorker(c, this.opts, all, 'newcomer'));
      // a kind another kind's list carries is observed in that kind's loop
      if (!carrierOf(this.controllers, c)) void all.then(() => this.observeLoop(c));
    }
    void all.then(() => this.idleLoop());
    void all
      .then(() => accounts?.ctl?.checked)
      .then(() => {
        this.caughtUp = true;
        this.startAccess();
      });
  }

  /** Every cache listed and every account checked once. */
  private caughtUp = false;
  private access?: AccessKeeper;

  /** With watchNamespaces: its RoleBinding held while a namespace awaits the operator (access.ts). */
  private startAccess(): void {
    const binding = this.opts.accessBinding;
    if (!binding || !this.opts.namespaces.length || this.stopping) return;
    this.access = new AccessKeeper({
      kube: this.opts.kube,
      log: this.opts.log,
      namespaces: this.opts.namespaces,
      binding,
      timers: this.timers,
      awaiting: () => awaitingIn(this.opts.namespaces, this.informers, this.accounts?.ctl?.keys),
    });
    this.access.start();
  }

  /** Work queued or in flight in any kind, but for the resync's re-checks (WorkQueue.pressing). */
  private busy = (): boolean => [...this.controllers.values()].some((c) => c.queue.pressing > 0);

  /**
   * Work that may wait for a quiet moment: ids go from status to their annotation once no
   * kind has changes, creates or events to work on (see Engine.recordIds), checked every
   * second. The resync's re-checks do not hold them back (at 10,000 objects they never end);
   * one that has waited a resync period goes even while changes keep coming, a few a second.
   */
  private async idleLoop(): Promise<void> {
    while (!this.stopping) {
      await this.timers.sleep(IDLE_CHECK_MS);
      if (this.stopping) return;
      if (this.busy()) {
        for (const c of this.controllers.values())
          await c.engine
            .recordIds(() => this.stopping, { olderThanMs: this.opts.resyncMs, max: OVERDUE_PER_CHECK })
            .catch((err: Error) =>
              this.opts.log.warn({ err: err.message }, 'recording ids failed; will retry'),
            );
        continue;
      }
      for (const c of this.controllers.values()) {
        if (this.stopping || this.busy()) break;
        await c.engine
          .recordIds(() => this.stopping || this.busy())
          .catch((err: Error) =>
            this.opts.log.warn({ err: err.message }, 'recording ids failed; will retry'),
          );
      }
    }
  }

  private count(c: Controller): number {
    return c.informers.reduce((n, i) => n + i.cache.size, 0);
  }

  /**
   * Once per resync period (jittered, kinds staggered): list the kind's remote resources
   * and queue every object, behind users' changes, to be compared with the list. A kind
   * with no objects costs nothing.
   */
  private async observeLoop(first: Controller): Promise<void> {
    const jitter = () => Math.round(this.opts.resyncMs * (0.85 + Math.random() * 0.3));
    const group = observedWith(this.controllers, first);
    while (!this.stopping) {
      await this.timers.sleep(jitter());
      if (this.stopping) return;
      const busy = group.filter((c) => this.count(c));
      if (!busy.length) continue;
      // each account's list on its own budget: one account's 429s never hold another's back
      await refreshAll(busy.flatMap((c) => this.observersOf(c)));
      for (const c of busy)
        for (const inf of c.informers) for (const key of inf.cache.keys()) c.queue.add(key, 'low');
    }
  }

  /** Stops taking work, lets in-flight reconciles finish within the drain deadline, releases the lease. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.timers.wakeAll();
    // one deadline for both drains: the lease is released within it, before the pod's grace
    // period ends, or a standby waits out the lease
    const deadline = Date.now() + this.opts.drainMs;
    const drained = await Promise.all(
      [...this.controllers.values()].map((c) => c.queue.shutdown(this.opts.drainMs)),
    );
    if (drained.includes(false)) this.opts.log.warn('drain deadline passed with reconciles in flight');
    await this.accounts?.ctl?.stop(Math.max(0, deadline - Date.now()));
    // last: its rights there go with the binding
    await this.access?.stop();
    for (const i of this.informers) i.stop();
    await this.elector?.release();
    this.opts.log.info('stopped');
  }
}
