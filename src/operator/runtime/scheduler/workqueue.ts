// A rate-limited work queue with controller-runtime's semantics: an item is queued at
// most once, never handed to two workers at a time (re-added while processing, it is
// processed again afterwards), per-item exponential backoff combined with an overall
// token bucket, and delayed adds. Waiting items are queued fairly (FairQueue): by priority
// (creates keep a share while urgent work waits), and within one the namespaces take turns.
import { Delays } from './delays.ts';
import { Lanes } from './lanes.ts';
import { type Priority, PRIORITY_RANK as RANK } from './priority.ts';
import { RetryBackoff } from './retry-backoff.ts';
import { type Deferral, namespaceOfKey, type QueueOptions } from './workqueue-options.ts';

export { type Deferral, namespaceOfKey, type QueueOptions };

type OptionalHooks =
  | 'metrics'
  | 'accountOf'
  | 'maxPerAccount'
  | 'priorityOf'
  | 'deferred'
  | 'laneOf'
  | 'onBegin'
  | 'onDone';

/**
 * Queued by priority: changes to existing objects first (creates keep one turn in every
 * URGENT_TURNS + 1 while both wait), then other events (creates), then background
 * observation; within a priority, namespaces take turns.
 */
export class WorkQueue<T = string> {
  private readonly queue = new Lanes<T>();
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly delays = new Delays<T>((item) => this.add(item));
  private readonly addedAt = new Map<T, number>();
  private readonly startedAt = new Map<T, number>();
  private readonly getters: ((t: T | undefined) => void)[] = [];
  /** Workers kept for urgent items: an edit never waits for a worker stuck behind creates. */
  private readonly urgentGetters: ((t: T | undefined) => void)[] = [];
  /**
   * Workers kept for newcomers, namespaces with nothing queued nor in progress until their item
   * came: while every other worker is held (a hung API, runs too short to let go), another
   * namespace's first item starts at once instead of waiting for a worker to free up.
   */
  private readonly newcomerGetters: ((t: T | undefined) => void)[] = [];
  /** Items in progress by flow. */
  private readonly busy = new Map<string, number>();
  /** Items in progress by account, and each one's account (as it was when it began). */
  private readonly accountBusy = new Map<string, number>();
  private readonly accountOfItem = new Map<T, string>();
  private shuttingDown = false;
  private readonly backoff: RetryBackoff<T>;
  private readonly opts: Required<Omit<QueueOptions<T>, OptionalHooks>> &
    Pick<QueueOptions<T>, OptionalHooks>;

  constructor(opts: QueueOptions<T>) {
    this.opts = {
      baseDelayMs: 5,
      maxDelayMs: 1_000_000,
      qps: 10,
      burst: 100,
      flowOf: namespaceOfKey,
      ...opts,
    };
    this.backoff = new RetryBackoff(this.opts);
  }

  get length(): number {
    return this.queue.size;
  }

  /** Namespaces taking turns now: the most at any one priority. */
  get flows(): number {
    const q = this.queue;
    return Math.max(q.flows('urgent'), q.flows('high'), q.flows('low'));
  }
  /** Whether items may be kept back (`deferred`): only then may a run waiting for budget let its worker go. */
  get defers(): boolean {
    return !!this.opts.deferred;
  }

  get inFlight(): number {
    return this.processing.size;
  }

  /**
   * Items queued or in progress other than background observation (`low`): users' changes,
   * creates, watch events. At scale a resync's re-checks never end (10,000 objects every 20 s
   * keep some queue busy), so work that waits for a quiet moment waits for these only.
   */
  get pressing(): number {
    return (
      this.queue.count('urgent') + this.queue.count('high') + this.processing.size - this.lowInProgress.size
    );
  }

  add(item: T, asked?: Priority): void {
    if (this.shuttingDown) return;
    const priority = asked ?? this.opts.priorityOf?.(item) ?? 'high';
    if (this.processing.has(item)) {
      // processed again when done, at the highest priority asked for meanwhile: a user's
      // edit arriving after a watch event of the same object still jumps the queue
      const was = this.reAdd.get(item);
      if (!was || RANK[priority] < RANK[was]) {
        this.reAdd.set(item, priority);
        // the wait a user sees starts with their change
        if (was) this.addedAt.set(item, Date.now());
      }
      if (!this.dirty.has(item)) {
        this.opts.metrics?.queueAdds.inc({ name: this.opts.name });
        this.dirty.add(item);
        if (!this.addedAt.has(item)) this.addedAt.set(item, Date.now());
      }
      return;
    }
    if (this.dirty.has(item)) {
      // queued for observation and now wanted by a user's change: move it up, and hand it
      // to an idle worker at once (the urgent-only one sleeps while creates fill the queue)
      const was = this.queue.priorityOf(item);
      if (was && RANK[priority] < RANK[was]) {
        this.queue.remove(item);
        this.dirty.delete(item);
        this.addedAt.set(item, Date.now());
        this.handOut(item, priority);
      }
      return;
    }
    this.opts.metrics?.queueAdds.inc({ name: this.opts.name });
    if (!this.addedAt.has(item)) this.addedAt.set(item, Date.now());
    this.handOut(item, priority);
  }

  /**
   * To a waiting worker (urgent work to an urgent-only one first), else onto its queue. An item
   * whose account's budget is backed up goes only to a newcomer worker (see `deferred`).
   */
  private handOut(item: T, priority: Priority): void {
    const flow = this.opts.flowOf(item);
    const fresh = !this.busy.has(flow) && !this.queue.hasFlow(flow);
    const lane = this.laneOf(item, priority);
    const g = this.mayBegin(item, lane, priority, fresh)
      ? ((priority === 'urgent' ? this.urgentGetters.shift() : undefined) ??
        this.getters.shift() ??
        (fresh ? this.newcomerGetters.shift() : undefined))
      : undefined;
    if (g) {
      this.begin(item, priority, fresh ? this.addedAt.get(item) : undefined, lane);
      g(item);
    } else {
      this.dirty.add(item);
      this.queue.push(
        item,
        priority,
        flow,
        fresh ? this.addedAt.get(item) : undefined,
        lane,
        this.opts.accountOf?.(item),
      );
    }
    this.gauge();
  }

  /** The item's lane: its account and gate (QueueOptions.laneOf), by default its account. */
  private laneOf(item: T, priority: Priority): string {
    return this.opts.laneOf?.(item, priority) ?? this.opts.accountOf?.(item) ?? '';
  }

  /** Whether the item may begin now: its account below its cap, and its lane not kept back (`deferred`). */
  private mayBegin(item: T, lane: string, priority: Priority, fresh: boolean): boolean {
    return !this.accountFull(item, this.cap) && !(this.opts.deferred?.(lane, priority, fresh) ?? false);
  }

  /** Adds after a delay; an earlier pending delay for the item wins. */
  addAfter(item: T, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    this.delays.after(item, ms);
  }

  /** Per-item exponential backoff and the overall bucket: the longer wait wins (retry-backoff.ts). */
  whenRateLimited(item: T): number {
    return this.backoff.when(item);
  }

  addRateLimited(item: T): void {
    this.opts.metrics?.queueRetries.inc({ name: this.opts.name });
    this.addAfter(item, this.whenRateLimited(item));
  }

  forget(item: T): void {
    this.backoff.forget(item);
  }
  numRequeues(item: T): number {
    return this.backoff.failuresOf(item);
  }

  private readonly reAdd = new Map<T, Priority>();
  /** Items in progress that were handed out at `low` priority. */
  private readonly lowInProgress = new Set<T>();

  /** Waits for the next item (only urgent ones with `onlyUrgent`); undefined once the queue shuts down. */
  get(onlyUrgent = false): Promise<T | undefined> {
    const item = this.take(onlyUrgent ? 'urgent' : 'any');
    if (item !== undefined) return Promise.resolve(item);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => (onlyUrgent ? this.urgentGetters : this.getters).push(resolve));
  }

  /** Waits for the next item of a newcomer namespace; undefined once the queue shuts down. */
  getNewcomer(): Promise<T | undefined> {
    const item = this.take('newcomer');
    if (item !== undefined) return Promise.resolve(item);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.newcomerGetters.push(resolve));
  }

  /** The cap of items in progress per account now (Infinity: none). */
  private get cap(): number {
    return this.opts.accountOf ? (this.opts.maxPerAccount?.() ?? Infinity) : Infinity;
  }

  /** Whether the item's account holds as many workers as it may. */
  private accountFull(item: T, cap = this.cap): boolean {
    if (!Number.isFinite(cap)) return false;
    const a = this.opts.accountOf!(item);
    return a !== undefined && (this.accountBusy.get(a) ?? 0) >= cap;
  }

  /**
   * The next item for a worker of this sort, begun; undefined if none may go now. Items that
   * may not begin (their lane kept back, their account at its cap) keep their place, unlooked
   * at (lanes.ts).
   */
  private take(sort: 'any' | 'urgent' | 'newcomer'): T | undefined {
    const cap = this.cap;
    const deferred = this.opts.deferred;
    const next = this.queue.shift(
      (lane, priority, fresh) => !deferred?.(lane, priority, fresh),
      (account) => Number.isFinite(cap) && (this.accountBusy.get(account) ?? 0) >= cap,
      sort === 'urgent',
      sort === 'newcomer',
    );
    if (!next) return undefined;
    this.dirty.delete(next[0]);
    this.begin(next[0], next[1], next[2], next[3]);
    this.gauge();
    return next[0];
  }

  /** Workers waiting for an item, by sort (the scheduler's model test checks none waits while one may go). */
  get idle(): { any: number; urgent: number; newcomer: number } {
    return {
      any: this.getters.length,
      urgent: this.urgentGetters.length,
      newcomer: this.newcomerGetters.length,
    };
  }

  /** The items queued, each with its priority and whether its namespace is a newcomer. */
  *queued(): Iterable<[T, Priority, boolean]> {
    for (const item of this.queue.items())
      yield [item, this.queue.priorityOf(item)!, this.queue.isFresh(item)];
  }

  /** Since when the item's namespace was a newcomer, if its run began as one (its calls take the newcomer's turn at the budget). */
  freshSince(item: T): number | undefined {
    return this.freshBegun.get(item);
  }
  private readonly freshBegun = new Map<T, number>();

  /**
   * The run that began found nothing to do (the watch event of its own status write, say): a
   * delay pending when it began still holds (a stalled object's slow retry).
   */
  keepDelay(item: T): void {
    const left = this.delays.left(item);
    if (left !== undefined) this.addAfter(item, left);
  }

  done(item: T): void {
    const ran = this.processing.has(item);
    this.delays.ended(item);
    this.processing.delete(item);
    this.lowInProgress.delete(item);
    this.freshBegun.delete(item);
    const flow = this.opts.flowOf(item);
    const n = (this.busy.get(flow) ?? 1) - 1;
    if (n > 0) this.busy.set(flow, n);
    else this.busy.delete(flow);
    const s = this.startedAt.get(item);
    if (s !== undefined)
      this.opts.metrics?.workDuration.observe({ name: this.opts.name }, (Date.now() - s) / 1000);
    this.startedAt.delete(item);
    const account = this.accountOfItem.get(item);
    if (account !== undefined) {
      this.accountOfItem.delete(item);
      const left = (this.accountBusy.get(account) ?? 1) - 1;
      if (left > 0) this.accountBusy.set(account, left);
      else this.accountBusy.delete(account);
    }
    // its seat is free (every queue of its account hears it: its budget's room) before the item
    // may begin again: a re-added item's next run takes a seat of its own
    if (ran) this.opts.onDone?.(item);
    if (this.dirty.has(item)) {
      this.dirty.delete(item);
      const p = this.reAdd.get(item) ?? 'high';
      this.reAdd.delete(item);
      this.add(item, p);
    }
    // its account below its cap again (or the cap lifted, the last other account gone): what was
    // kept back may go to the workers waiting
    if (account !== undefined) this.wake();
    this.gauge();
    if (this.shuttingDown && this.processing.size === 0) this.drained?.();
  }

  /**
   * What kept items back changed (a budget's room, an account's start or first list done, a
   * 429's wait over, a run of a capped account ended): hands what may go now to the workers
   * waiting, if any. Every such change reaches here as an event (the budget's `onRoom`, the
   * manager's account starts), never a poll.
   */
  wake(): void {
    if (!this.queue.size) return;
    let handed = false;
    for (const [getters, sort] of [
      [this.urgentGetters, 'urgent'],
      [this.getters, 'any'],
      [this.newcomerGetters, 'newcomer'],
    ] as const)
      while (getters.length) {
        const next = this.take(sort);
        if (next === undefined) break;
        getters.shift()!(next);
        handed = true;
      }
    if (handed) this.gauge();
  }

  private drained?: () => void;

  /** Stops handing out items; resolves when in-flight items are done or the deadline passes. */
  async shutdown(drainMs: number): Promise<boolean> {
    this.shuttingDown = true;
    this.delays.clear();
    for (const g of [
      ...this.getters.splice(0),
      ...this.urgentGetters.splice(0),
      ...this.newcomerGetters.splice(0),
    ])
      g(undefined);
    if (this.processing.size === 0) return true;
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), drainMs);
      this.drained = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }

  private begin(item: T, priority: Priority = 'high', freshSince?: number, lane?: string): void {
    this.opts.onBegin?.(item, lane ?? this.laneOf(item, priority), priority);
    if (freshSince !== undefined) this.freshBegun.set(item, freshSince);
    this.delays.spend(item);
    this.processing.add(item);
    if (priority === 'low') this.lowInProgress.add(item);
    const flow = this.opts.flowOf(item);
    this.busy.set(flow, (this.busy.get(flow) ?? 0) + 1);
    const account = this.opts.accountOf?.(item);
    if (account !== undefined) {
      this.accountOfItem.set(item, account);
      this.accountBusy.set(account, (this.accountBusy.get(account) ?? 0) + 1);
    }
    this.startedAt.set(item, Date.now());
    const a = this.addedAt.get(item);
    if (a !== undefined) {
      const s = (Date.now() - a) / 1000;
      this.opts.metrics?.queueDuration.observe({ name: this.opts.name }, s);
      this.opts.metrics?.queueWait.observe({ name: this.opts.name, priority }, s);
    }
    this.addedAt.delete(item);
  }

  private gauge(): void {
    this.opts.metrics?.queueDepth.set({ name: this.opts.name }, this.length);
  }
}
