// Client-side token bucket. The public API allows about 120 requests per minute per
// account; the default (1.8/s, burst 12) keeps any 60-second window at or below 120.

export interface RateLimiterOptions {
  /** Requests per minute the account allows; Infinity disables the limiter. */
  perMinute: number;
  /** Fraction of the budget kept as burst. */
  burstFraction?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Work a user caused goes first; background observation takes what is left. */
export type Priority = 'high' | 'low';

export class TokenBucket {
  readonly ratePerMs: number;
  readonly capacity: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly waiters: Record<Priority, { release: () => void; since: number }[]> = {
    high: [],
    low: [],
  };
  private pumping = false;
  /** Total milliseconds callers waited; exported as a metric. */
  waitedMs = 0;
  /** The same, by priority. */
  readonly waitedByPriority: Record<Priority, number> = { high: 0, low: 0 };

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
  }

  /** Callers waiting, by priority. */
  get queued(): Record<Priority, number> {
    return { high: this.waiters.high.length, low: this.waiters.low.length };
  }

  /**
   * Resolves when a request may be sent. High-priority callers are served first, each
   * priority in order of arrival: a user's edit never queues behind drift observation.
   */
  take(priority: Priority = 'high'): Promise<void> {
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
        const priority: Priority | undefined = this.waiters.high.length
          ? 'high'
          : this.waiters.low.length
            ? 'low'
            : undefined;
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
