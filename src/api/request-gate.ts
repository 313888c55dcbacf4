// What a request waits for before it is sent: the client's own pace (a token bucket at the
// account's rate), or the operator's scheduler, which orders the callers of one budget by
// priority and namespace (src/operator/runtime/scheduler/). The client knows only this interface.

/** Why a request is made: `urgent` a change to something that exists, `high` other work, `low` background observation. */
export type Priority = 'urgent' | 'high' | 'low';

export interface RequestGate {
  /** Resolves when a request of this priority may be sent. */
  take(priority?: Priority): Promise<void>;
  /** The API answered 429 asking to wait `ms`: requests not begun are better kept back meanwhile. */
  throttled?(ms: number): void;
}

/**
 * Requests per minute `perMinute` as a token bucket with a small burst, refilled so that no
 * 60-second window holds more than `perMinute` requests (burst + rate x 60 s = perMinute). A
 * large burst would cost throughput for good (the rate must leave room for it) and, after a
 * pause, hand out a clump that makes the next caller wait. With a burst of one (a limit under 4 a
 * minute), requests come 1/rate apart after the first: a window holds 1 + floor(60 s x rate).
 */
export function paceOf(perMinute: number, burst = 2): { capacity: number; ratePerMs: number } {
  if (!Number.isFinite(perMinute)) return { capacity: Infinity, ratePerMs: Infinity };
  const capacity = Math.max(1, Math.min(burst, Math.floor(perMinute / 2)));
  return {
    capacity,
    ratePerMs: (capacity === 1 ? perMinute * 0.98 : perMinute - capacity) / 60_000,
  };
}

/** A client's own pace: callers in order of arrival, at the account's rate. */
export class Pace implements RequestGate {
  private readonly capacity: number;
  private readonly ratePerMs: number;
  private tokens: number;
  private last = performance.now();
  private tail: Promise<void> = Promise.resolve();

  constructor(perMinute: number) {
    ({ capacity: this.capacity, ratePerMs: this.ratePerMs } = paceOf(perMinute));
    this.tokens = this.capacity;
  }

  take(): Promise<void> {
    if (!Number.isFinite(this.ratePerMs)) return Promise.resolve();
    const turn = this.tail.then(async () => {
      const now = performance.now();
      this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.ratePerMs);
      this.last = now;
      if (this.tokens < 1) {
        const ms = Math.ceil((1 - this.tokens) / this.ratePerMs);
        await new Promise((r) => setTimeout(r, ms));
        this.tokens += ms * this.ratePerMs;
        this.last = performance.now();
      }
      this.tokens -= 1;
    });
    this.tail = turn;
    return turn;
  }
}
