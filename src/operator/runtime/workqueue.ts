// A rate-limited work queue with controller-runtime's semantics: an item is queued at
// most once, never handed to two workers at a time (re-added while processing, it is
// processed again afterwards), per-item exponential backoff combined with an overall
// token bucket, and delayed adds.
import type { Metrics } from './metrics.ts';

export interface QueueOptions {
  name: string;
  metrics?: Metrics;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Overall bucket for rate-limited adds (controller-runtime: 10/s, burst 100). */
  qps?: number;
  burst?: number;
}

/** Work a user caused (events) goes before background observation. */
export type QueuePriority = 'high' | 'low';

export class WorkQueue<T = string> {
  private readonly queue: T[] = [];
  /** Waits behind every high-priority item (drift observation). */
  private readonly low: T[] = [];
  private readonly lowItems = new Set<T>();
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly waiting = new Map<T, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<T, number>();
  private readonly addedAt = new Map<T, number>();
  private readonly startedAt = new Map<T, number>();
  private readonly getters: ((t: T | undefined) => void)[] = [];
  private shuttingDown = false;
  private bucketTokens: number;
  private bucketLast = Date.now();
  private readonly o: Required<Omit<QueueOptions, 'metrics'>> & { metrics?: Metrics };

  constructor(opts: QueueOptions) {
    this.o = { baseDelayMs: 5, maxDelayMs: 1_000_000, qps: 10, burst: 100, ...opts };
    this.bucketTokens = this.o.burst;
  }

  get length(): number {
    return this.queue.length + this.low.length;
  }
  get inFlight(): number {
    return this.processing.size;
  }

  add(item: T, priority: QueuePriority = 'high'): void {
    if (this.shuttingDown) return;
    if (this.dirty.has(item)) {
      // queued for observation and now wanted by a user's change: move it to the front
      if (priority === 'high' && this.lowItems.delete(item)) {
        this.low.splice(this.low.indexOf(item), 1);
        this.queue.push(item);
      }
      return;
    }
    this.o.metrics?.queueAdds.inc({ name: this.o.name });
    this.dirty.add(item);
    if (!this.addedAt.has(item)) this.addedAt.set(item, Date.now());
    if (this.processing.has(item)) return;
    const g = this.getters.shift();
    if (g) {
      this.dirty.delete(item);
      this.begin(item);
      g(item);
      return;
    }
    if (priority === 'low') {
      this.low.push(item);
      this.lowItems.add(item);
    } else this.queue.push(item);
    this.gauge();
  }

  /** Adds after a delay; an earlier pending delay for the item wins. */
  addAfter(item: T, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    const at = Date.now() + ms;
    const w = this.waiting.get(item);
    if (w && w.at <= at) return;
    if (w) clearTimeout(w.timer);
    const timer = setTimeout(() => {
      this.waiting.delete(item);
      this.add(item);
    }, ms);
    timer.unref();
    this.waiting.set(item, { at, timer });
  }

  /** Per-item exponential backoff and the overall bucket: the longer wait wins. */
  whenRateLimited(item: T): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    const perItem = Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** n);
    const now = Date.now();
    this.bucketTokens = Math.min(
      this.o.burst,
      this.bucketTokens + ((now - this.bucketLast) / 1000) * this.o.qps,
    );
    this.bucketLast = now;
    this.bucketTokens -= 1;
    const overall = this.bucketTokens >= 0 ? 0 : (-this.bucketTokens / this.o.qps) * 1000;
    return Math.max(perItem, overall);
  }

  addRateLimited(item: T): void {
    this.o.metrics?.queueRetries.inc({ name: this.o.name });
    this.addAfter(item, this.whenRateLimited(item));
  }

  forget(item: T): void {
    this.failures.delete(item);
  }
  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }

  /** Waits for the next item; undefined once the queue shuts down. */
  get(): Promise<T | undefined> {
    let item = this.queue.shift();
    if (item === undefined) {
      item = this.low.shift();
      if (item !== undefined) this.lowItems.delete(item);
    }
    if (item !== undefined) {
      this.dirty.delete(item);
      this.begin(item);
      this.gauge();
      return Promise.resolve(item);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  done(item: T): void {
    this.processing.delete(item);
    const s = this.startedAt.get(item);
    if (s !== undefined) this.o.metrics?.workDuration.observe({ name: this.o.name }, (Date.now() - s) / 1000);
    this.startedAt.delete(item);
    if (this.dirty.has(item)) {
      this.dirty.delete(item);
      this.add(item);
    }
    if (this.shuttingDown && this.processing.size === 0) this.drained?.();
  }

  private drained?: () => void;

  /** Stops handing out items; resolves when in-flight items are done or the deadline passes. */
  async shutdown(drainMs: number): Promise<boolean> {
    this.shuttingDown = true;
    for (const w of this.waiting.values()) clearTimeout(w.timer);
    this.waiting.clear();
    for (const g of this.getters.splice(0)) g(undefined);
    if (this.processing.size === 0) return true;
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), drainMs);
      this.drained = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }

  private begin(item: T): void {
    this.processing.add(item);
    this.startedAt.set(item, Date.now());
    const a = this.addedAt.get(item);
    if (a !== undefined)
      this.o.metrics?.queueDuration.observe({ name: this.o.name }, (Date.now() - a) / 1000);
    this.addedAt.delete(item);
  }

  private gauge(): void {
    this.o.metrics?.queueDepth.set({ name: this.o.name }, this.length);
  }
}
