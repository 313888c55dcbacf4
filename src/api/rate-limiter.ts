import { AsyncLocalStorage } from 'node:async_hooks';
// Client-side rate limiter. The public API allows about 120 requests per minute per account
// (its algorithm is not published): a token bucket with a small burst, refilled so that no
// 60-second window ever holds more than `perMinute` requests (burst + rate x 60 s = perMinute).
// The burst is kept small on purpose: a large one costs throughput for good (the rate must
// leave room for it) and, after a pause, hands out a clump that makes the next caller wait;
// requests evenly spaced keep an urgent caller's wait under one interval.

export interface RateLimiterOptions {
  /** Requests per minute the account allows; Infinity disables the limiter. */
  perMinute: number;
  /** Requests that may go at once after a pause (default 2). */
  burst?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** A low-priority caller waits at most about this long behind creates (not behind urgent work). */
  maxLowWaitMs?: number;
}

/**
 * Order of service: `urgent` (a change to something that exists: an edit, a delete), then
 * `high` (other work a user caused: creates), then `low` (background observation).
 */
export type Priority = 'urgent' | 'high' | 'low';
export const PRIORITIES: readonly Priority[] = ['urgent', 'high', 'low'];
/** Lower is served first. */
export const PRIORITY_RANK: Record<Priority, number> = { urgent: 0, high: 1, low: 2 };

/** The priority of a unit of work; raised while it waits when the user changes what it works on. */
export interface PriorityCell {
  priority: Priority;
}

const context = new AsyncLocalStorage<PriorityCell>();
/** Runs `fn` with every API call it makes at the cell's priority (the engine knows why it calls; the client need not). */
export const withPriority = <T>(cell: PriorityCell | Priority, fn: () => Promise<T>): Promise<T> =>
  context.run(typeof cell === 'string' ? { priority: cell } : cell, fn);
const currentCell = () => context.getStore();

export class RateLimiter {
  readonly perMinute: number;
  readonly capacity: number;
  readonly ratePerMs: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly waiters: { release: () => void; since: number; cell: PriorityCell }[] = [];
  private pumping = false;
  private readonly maxLowWaitMs: number;
  /** Total milliseconds callers waited; exported as a metric. */
  waitedMs = 0;
  /** The same, by priority (the priority a caller had when it was served). */
  readonly waitedByPriority: Record<Priority, number> = { urgent: 0, high: 0, low: 0 };

  constructor(opts: RateLimiterOptions) {
    this.perMinute = opts.perMinute;
    const finite = Number.isFinite(opts.perMinute);
    this.capacity = finite
      ? Math.max(1, Math.min(opts.burst ?? 2, Math.floor(opts.perMinute / 2)))
      : Infinity;
    // With a burst of one (a limit under 4 a minute), requests 1/rate apart after the first:
    // a window holds 1 + floor(60 s x rate), within the limit while the rate stays under it.
    this.ratePerMs = finite
      ? (this.capacity === 1 ? opts.perMinute * 0.98 : opts.perMinute - this.capacity) / 60_000
      : Infinity;
    this.tokens = this.capacity;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.last = this.now();
    this.maxLowWaitMs = opts.maxLowWaitMs ?? 10_000;
  }

  /** Callers waiting, by priority. */
  get queued(): Record<Priority, number> {
    const q = { urgent: 0, high: 0, low: 0 };
    for (const w of this.waiters) q[w.cell.priority]++;
    return q;
  }

  /**
   * Resolves when a request may be sent. Urgent callers are served first, then high, then
   * low, each in order of arrival: a user's edit never queues behind drift observation.
   */
  take(priority?: Priority): Promise<void> {
    if (!Number.isFinite(this.perMinute)) return Promise.resolve();
    const cell = priority ? { priority } : (currentCell() ?? { priority: 'high' as const });
    return new Promise((release) => {
      this.waiters.push({ release, since: this.now(), cell });
      void this.pump();
    });
  }

  /** A waiting caller's cell was raised: serve it by its new priority. */
  reprioritized(): void {
    if (this.waiters.length) void this.pump();
  }

  /** The next waiter to serve: the earliest of the highest priority, unless a low one waited too long. */
  private next(): number {
    let best = -1;
    for (let i = 0; i < this.waiters.length; i++)
      if (
        best < 0 ||
        PRIORITY_RANK[this.waiters[i]!.cell.priority] < PRIORITY_RANK[this.waiters[best]!.cell.priority]
      )
        best = i;
    if (best < 0 || this.waiters[best]!.cell.priority === 'urgent') return best;
    // observation is not starved by a long run of creates (never before urgent work): one
    // low caller that waited long enough goes next, but one such jump per maxLowWaitMs in
    // all, not per caller (nine kinds listing at once would take half the budget)
    const now = this.now();
    if (now - this.lastJumpAt < this.maxLowWaitMs) return best;
    const low = this.waiters.findIndex((w) => w.cell.priority === 'low');
    if (low < 0 || now - this.waiters[low]!.since < this.maxLowWaitMs) return best;
    this.lastJumpAt = now;
    return low;
  }

  /** When a low caller last went ahead of waiting creates. */
  private lastJumpAt = -Infinity;

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiters.length) {
        const now = this.now();
        this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.ratePerMs);
        this.last = now;
        if (this.tokens < 1) {
          await this.sleep(Math.ceil((1 - this.tokens) / this.ratePerMs));
          continue;
        }
        this.tokens -= 1;
        const [w] = this.waiters.splice(this.next(), 1);
        const waited = now - w!.since;
        this.waitedMs += waited;
        this.waitedByPriority[w!.cell.priority] += waited;
        w!.release();
      }
    } finally {
      this.pumping = false;
    }
  }
}
