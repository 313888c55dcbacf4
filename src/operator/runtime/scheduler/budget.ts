// An account's budget: the public API allows about 120 requests per minute per account (its
// algorithm is not published), paced as a token bucket with a small burst (paceOf). Callers wait
// in a FairQueue: by priority, and within one the namespaces take turns (a newcomer namespace
// every other turn), so one namespace's bulk apply does not hold another namespace's single
// change; urgent callers do not hold creates for ever either (they keep a share: see FairQueue).
// Few callers wait here: a run holds a seat of its budget from its begin to its end, and the work
// queue keeps an account's further work to itself while runs hold seats enough to use the budget
// for a moment (MOMENT_MS); it is told (`onRoom`) of every change that may let kept work go: a
// caller served, a run's seat free, a 429's wait over.
import { paceOf, type RequestGate } from '../../../api/request-gate.ts';
import { FairQueue } from './fair-queue.ts';
import { letsGo, roomOf, throttles } from './policy.ts';
import { currentCell, PRIORITIES, type Priority, type PriorityCell } from './priority.ts';

export interface BudgetOptions {
  /** Requests per minute the account allows; Infinity disables the budget. */
  perMinute: number;
  /** Requests that may go at once after a pause (default 2). */
  burst?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** A low-priority caller waits at most about this long behind creates and urgent work. */
  maxLowWaitMs?: number;
  /** Told of each caller served: its priority and how long it waited (a histogram's feed). */
  onServed?: (priority: Priority, waitedMs: number) => void;
}

export type { Priority, PriorityCell } from './priority.ts';

/** How much of the budget's time the callers waiting at once may fill (see backedUp). */
export const MOMENT_MS = 2_000;
export { PRIORITIES, PRIORITY_RANK, withPriority } from './priority.ts';

interface Waiter {
  release: () => void;
  since: number;
  cell: PriorityCell;
}

export class Budget implements RequestGate {
  readonly perMinute: number;
  readonly capacity: number;
  readonly ratePerMs: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly waiters = new FairQueue<Waiter>();
  private pumping = false;
  private readonly maxLowWaitMs: number;
  /** Told of each caller served (settable after construction: the metrics come later). */
  onServed?: (priority: Priority, waitedMs: number) => void;
  /** Told after each caller served (a work queue holding work back for this budget looks again). */
  onRoom?: () => void;
  /** Callers that may wait at once before the budget counts as backed up: what it serves in MOMENT_MS, at least one. */
  readonly room: number;
  /** Total milliseconds callers waited; exported as a metric. */
  waitedMs = 0;
  /** The same, by priority (the priority a caller had when it was served). */
  readonly waitedByPriority: Record<Priority, number> = { urgent: 0, high: 0, low: 0 };

  constructor(opts: BudgetOptions) {
    this.perMinute = opts.perMinute;
    const finite = Number.isFinite(opts.perMinute);
    ({ capacity: this.capacity, ratePerMs: this.ratePerMs } = paceOf(opts.perMinute, opts.burst));
    this.room = finite ? roomOf(this.ratePerMs, MOMENT_MS) : Infinity;
    this.tokens = this.capacity;
    // a monotonic clock: the wall clock stepped back an hour would hold every call an hour
    this.now = opts.now ?? (() => performance.now());
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms).unref()));
    this.last = this.now();
    this.maxLowWaitMs = opts.maxLowWaitMs ?? 10_000;
    this.onServed = opts.onServed;
  }

  /** Callers waiting, by priority. */
  get queued(): Record<Priority, number> {
    const w = this.waiters;
    return { urgent: w.count('urgent'), high: w.count('high'), low: w.count('low') };
  }

  /** Flows (namespaces) taking turns now: the most at any one priority. */
  get flowsWaiting(): number {
    const w = this.waiters;
    return Math.max(w.flows('urgent'), w.flows('high'), w.flows('low'));
  }

  /**
   * Whether runs at this priority or above already hold as many seats as the budget serves in
   * MOMENT_MS (or a 429's wait is not over): another run would only wait longer, holding the
   * object's state read before its turn came, so work not begun yet is better kept back (the
   * work queue's admission, policy.ts, says the same with the newcomers' room).
   */
  backedUp(priority: Priority): boolean {
    return this.throttledNow || this.seatsFor(priority) >= this.room;
  }

  /** Whether the API asked for patience (a 429's Retry-After) that is not over yet. */
  get throttledNow(): boolean {
    return this.now() < this.throttledUntil;
  }

  /**
   * Runs that hold a seat of this budget, by the priority they began at: from the moment the
   * work queue lets one begin to its end, waiting here or not yet (its reads and Kubernetes
   * writes come first). The queue lets a run begin by seats, not by callers waiting here: the
   * runs begun a moment ago and not arrived yet count, so no burst of them overshoots the room.
   */
  private readonly seats: Record<Priority, number> = { urgent: 0, high: 0, low: 0 };

  /** A run of this account begins (takes its seat), or ends: a seat free is room (onRoom). */
  seat(priority: Priority, delta: 1 | -1): void {
    this.seats[priority] += delta;
    if (delta < 0) this.onRoom?.();
  }

  /** Seats held at this priority or above (0 without a limit). */
  seatsFor(priority: Priority): number {
    if (!Number.isFinite(this.perMinute)) return 0;
    let n = 0;
    for (const p of PRIORITIES) {
      n += this.seats[p];
      if (p === priority) break;
    }
    return n;
  }

  /**
   * Resolves when a request may be sent. Urgent callers are served first (but a high one
   * after every URGENT_TURNS urgent while both wait), then high, then low (but one low caller
   * that waited maxLowWaitMs goes next, once per maxLowWaitMs): a user's edit waits for one
   * create at most, and for one observation list at most once in maxLowWaitMs. Within a
   * priority the flows (namespaces) take turns, each flow's callers in order of arrival.
   */
  take(priority?: Priority): Promise<void> {
    if (!Number.isFinite(this.perMinute)) return Promise.resolve();
    const current = currentCell();
    const cell = priority ? { priority, flow: current?.flow } : (current ?? { priority: 'high' as const });
    if (cell === current) current.raised = () => this.reprioritized();
    return new Promise((release) => {
      let served = false;
      const w = {
        release: () => {
          served = true;
          release();
        },
        since: this.now(),
        cell,
      };
      this.waiters.push(w, cell.priority, cell.flow ?? '', current?.fresh);
      void this.pump();
      // not served at once: the work it belongs to waits for the budget, and need not hold its
      // worker unless the wait is shorter than handing the worker on is worth
      if (!served && letsGo(this.expectedWaitMs())) current?.onWait?.();
    });
  }

  /** About how long the last caller queued waits: its place behind the others, at the refill rate. */
  private expectedWaitMs(): number {
    const ahead = this.waiters.size - 1;
    return Math.max(0, ahead + 1 - this.tokens) / this.ratePerMs;
  }

  /** Until when the API asked for patience (a long 429's Retry-After): work not begun is kept back. */
  private throttledUntil = 0;

  /**
   * The API answered 429 asking for `ms`: the run that met it lets its worker go, and for a wait
   * of THROTTLE_MS or more the budget counts as backed up until then, so work not begun stays
   * queued instead of spending a token on another 429 (calls already sent are not held: each
   * waits out its own Retry-After); its end is told like room (onRoom).
   */
  throttled(ms: number): void {
    // the run that met it waits out the Retry-After without its worker, as for the budget
    currentCell()?.onWait?.();
    if (!throttles(ms)) return;
    const until = this.now() + ms;
    if (until <= this.throttledUntil) return;
    this.throttledUntil = until;
    // a wait extended since ends with the later one
    void this.sleep(ms).then(() => {
      if (!this.throttledNow) this.onRoom?.();
    });
  }

  /** A waiting caller's cell was raised (PriorityCell.raised): serve it by its new priority. */
  reprioritized(): void {
    // the waiters are as many as the workers at most: a scan is cheap
    for (const w of [...this.waiters.items()])
      if (this.waiters.priorityOf(w) !== w.cell.priority)
        this.waiters.push(w, w.cell.priority, w.cell.flow ?? '', w.cell.fresh);
    if (this.waiters.size) void this.pump();
  }

  /** The next waiter to serve: the flow whose turn it is at the highest priority, unless a low one waited too long. */
  private next(): Waiter {
    if (this.waiters.top() !== 'low') {
      // observation is not starved by a long run of creates or of urgent work (two controllers
      // fighting over an object's spec edit it for ever): one low caller that waited long
      // enough goes next, but one such jump per maxLowWaitMs in all, not per caller (nine kinds
      // listing at once would take half the budget)
      const now = this.now();
      if (now - this.lastJumpAt >= this.maxLowWaitMs) {
        let oldest: Waiter | undefined;
        for (const w of this.waiters.heads('low')) if (!oldest || w.since < oldest.since) oldest = w;
        if (oldest && now - oldest.since >= this.maxLowWaitMs) {
          this.lastJumpAt = now;
          this.waiters.remove(oldest);
          return oldest;
        }
      }
    }
    return this.waiters.shift()!;
  }

  /** When a low caller last went ahead of waiting creates. */
  private lastJumpAt = -Infinity;

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiters.size) {
        const now = this.now();
        this.tokens = Math.min(this.capacity, this.tokens + Math.max(0, now - this.last) * this.ratePerMs);
        this.last = now;
        if (this.tokens < 1) {
          await this.sleep(Math.ceil((1 - this.tokens) / this.ratePerMs));
          continue;
        }
        this.tokens -= 1;
        const w = this.next();
        const waited = now - w.since;
        this.waitedMs += waited;
        this.waitedByPriority[w.cell.priority] += waited;
        this.onServed?.(w.cell.priority, waited);
        w.release();
        this.onRoom?.();
      }
    } finally {
      this.pumping = false;
    }
  }
}
