// How long a failed item waits before it is tried again, as client-go's default controller
// rate limiter: per-item exponential backoff, and one bucket for all items (10/s, burst 100),
// the longer wait winning. Kept apart from the queue, which only asks it.
export interface RetryBackoffOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** The overall bucket's rate (per second) and burst. */
  qps?: number;
  burst?: number;
}

export class RetryBackoff<T> {
  private readonly failures = new Map<T, number>();
  private readonly o: Required<RetryBackoffOptions>;
  private tokens: number;
  private last = Date.now();

  constructor(o: RetryBackoffOptions = {}) {
    this.o = { baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 100, ...o };
    this.tokens = this.o.burst;
  }

  /** The wait before the item's next try; counts a failure. */
  when(item: T): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    const perItem = Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** n);
    const now = Date.now();
    this.tokens = Math.min(this.o.burst, this.tokens + ((now - this.last) / 1000) * this.o.qps);
    this.last = now;
    this.tokens -= 1;
    const overall = this.tokens >= 0 ? 0 : (-this.tokens / this.o.qps) * 1000;
    return Math.max(perItem, overall);
  }

  /** The item succeeded (or went): its next failure starts from the base delay. */
  forget(item: T): void {
    this.failures.delete(item);
  }

  failuresOf(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}
