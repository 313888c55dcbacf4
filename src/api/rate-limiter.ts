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

export class TokenBucket {
  readonly ratePerMs: number;
  readonly capacity: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private tail: Promise<void> = Promise.resolve();
  /** Total milliseconds callers waited; exported as a metric. */
  waitedMs = 0;

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

  /** Resolves when a request may be sent. Callers are served in order. */
  take(): Promise<void> {
    if (this.capacity === Infinity) return Promise.resolve();
    const turn = this.tail.then(() => this.takeOne());
    this.tail = turn.catch(() => {});
    return turn;
  }

  private async takeOne(): Promise<void> {
    for (;;) {
      const now = this.now();
      this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.ratePerMs);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      const wait = Math.ceil((1 - this.tokens) / this.ratePerMs);
      this.waitedMs += wait;
      await this.sleep(wait);
    }
  }
}
