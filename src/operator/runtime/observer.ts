// Bulk observation: one paged list of a kind's remote resources per resync period, indexed
// by id, against which every object of the kind is compared. ceil(N / page size) requests
// where a GET per object costs N. The list runs at low budget priority: a user's change
// never waits behind it.
import type { Logger } from 'pino';
import type { RemoteBase } from './binding.ts';
import type { Metrics } from './metrics.ts';

export interface Listed {
  remote: RemoteBase & Record<string, unknown>;
  /** When the page holding it was sent (after waiting for budget): a write that finished before is reflected. */
  at: number;
}

export interface Snapshot {
  startedAt: number;
  completedAt: number;
  items: ReadonlyMap<string, Listed>;
}

export class Observer {
  private current?: Snapshot;
  private running?: Promise<Snapshot | undefined>;
  private readonly opts: {
    kind: string;
    list: (onPage: (sentAt: number) => void) => AsyncIterable<RemoteBase>;
    log: Logger;
    metrics?: Metrics;
  };

  constructor(o: Observer['opts']) {
    this.opts = o;
  }

  /** The last list failed: objects fall back to a GET when their resync is due. */
  failing = false;

  /** The last complete snapshot, if any. */
  get latest(): Snapshot | undefined {
    return this.current;
  }

  /** Lists the kind now (one list at a time: callers share a running one). */
  refresh(): Promise<Snapshot | undefined> {
    this.running ??= this.take().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async take(): Promise<Snapshot | undefined> {
    const startedAt = Date.now();
    const items = new Map<string, Listed>();
    // pages wait for low-priority budget, possibly for minutes: each item is as fresh as its page
    let pageAt = startedAt;
    try {
      for await (const r of this.opts.list((t) => {
        pageAt = t;
      }))
        items.set(r.id, { remote: r as RemoteBase & Record<string, unknown>, at: pageAt });
    } catch (err) {
      // an incomplete list proves nothing about what is missing: keep the last one
      this.opts.log.warn({ kind: this.opts.kind, err: (err as Error).message }, 'bulk observation failed');
      this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'error' });
      this.failing = true;
      return this.current;
    }
    this.current = { startedAt, completedAt: Date.now(), items };
    this.failing = false;
    this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'success' });
    this.opts.metrics?.observedResources.set({ kind: this.opts.kind }, items.size);
    this.opts.metrics?.observationSeconds.observe({ kind: this.opts.kind }, (Date.now() - startedAt) / 1000);
    return this.current;
  }
}
