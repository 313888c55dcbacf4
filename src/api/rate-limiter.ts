import { AsyncLocalStorage } from 'node:async_hooks';
// Client-side token bucket. The public API allows about 120 requests per minute per
// account; the default (1.8/s, burst 12) keeps any 60-second window at or below 120.

export interface RateLimiterOptions {
  /** Requests per minute the account allows; Infinity disables the limiter. */
  perMinute: number;
  /** Fraction of the budget kept as burst. */
  burstFraction?: number;
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

const context = new AsyncLocalStorage<Priority>();
/** Runs `fn` with every API call it makes at `priority` (the engine knows why it calls; the client need not). */
export const withPriority = <T>(priority: Priority, fn: () => Promise<T>): Promise<T> =>
  context.run(priority, fn);
const currentPriority = () => context.getStore();

export class TokenBucket {
  readonly ratePerMs: number;
  readonly capacity: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly waiters: Record<Priority, { release: () => void; since: number }[]> = {
    urgent: [],
    high: [],
    low: [],
  };
  private pumping = false;
  private readonly maxLowWaitMs: number;
  /** Total milliseconds callers waited; exported as a metric. */
  waitedMs = 0;
  /** The same, by priority. */
  readonly waitedByPriority: Record<Priority, number> = { urgent: 0, high: 0, low: 0 };

  constructor(opts: RateLimiterOptions) {
    const burst = opts.burstFraction ?? 0.1;
    this.capacity = Number.isFinite(opts.perMinute)
      ? Math.max(1, Math.floor(opts.perMinute * burst))
      : Infinity;
    this.ratePerMs = Number.isFinite(opts.perMinute) ? (opts.perMinute * (1 - burst)) / 60_000 : Infinity;
    this.tokens = this.capacity;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.last = this.now();
    this.maxLowWaitMs = opts.maxLowWaitMs ?? 10_000;
  }

  /** Callers waiting, by priority. */
  get queued(): Record<Priority, number> {
    return {
      urgent: this.waiters.urgent.length,
      high: this.waiters.high.length,
      low: this.waiters.low.length,
    };
  }

  /**
   * Resolves when a request may be sent. High-priority callers are served first, each
   * priority in order of arrival: a user's edit never queues behind drift observation.
   */
  take(priority: Priority = currentPriority() ?? 'high'): Promise<void> {
    if (this.capacity === Infinity) return Promise.resolve();
    return new Promise((release) => {
      this.waiters[priority].push({ release, since: this.now() });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        // observation is not starved by a long run of creates: a low caller that waited long
        // enough goes next (never before urgent work)
        const oldestLow = this.waiters.low[0];
        const aged =
          !this.waiters.urgent.length && oldestLow && this.now() - oldestLow.since >= this.maxLowWaitMs;
        const priority = aged ? 'low' : PRIORITIES.find((p) => this.waiters[p].length);
        if (!priority) return;
        const now = this.now();
        this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.ratePerMs);
        this.last = now;
        if (this.tokens >= 1) {
          this.tokens -= 1;
          const w = this.waiters[priority].shift()!;
          const waited = now - w.since;
          this.waitedMs += waited;
          this.waitedByPriority[priority] += waited;
          w.release();
          continue;
        }
        await this.sleep(Math.ceil((1 - this.tokens) / this.ratePerMs));
      }
    } finally {
      this.pumping = false;
    }
  }
}
