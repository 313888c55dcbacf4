// Bulk observation: one paged list of a kind's remote resources per resync period, indexed
// by id, against which every object of the kind is compared. ceil(N / page size) requests
// where a GET per object costs N. The list runs at low budget priority: a user's change
// never waits behind it.
import type { Logger } from 'pino';
import type { RemoteBase } from './binding.ts';
import { indexKey } from './conflicts.ts';
import { textDigest } from './engine/memo.ts';
import { type Holders, holdersOf, withHolder } from './holders.ts';
import type { Metrics } from './metrics.ts';

/**
 * A listed resource, kept between lists as its JSON text: at thousands of resources the parsed
 * objects cost several times the text, and a resync compares fingerprints; only an object
 * whose resource changed (or whose spec did) reads the resource itself.
 */
export class Listed {
  /** When the page holding it was sent (after waiting for budget): a write that finished before is reflected. */
  readonly at: number;
  /** The resource's remoteDigest. */
  readonly digest: string;
  /** The id as the map of the list holding it keys it. */
  readonly id: string;
  private readonly text: string;
  /**
   * `previous`: the same resource in the last list. Unchanged since (almost every resource, at
   * every resync), its instances are kept and the new ones die young: a resync of thousands
   * of resources no longer leaves a second copy of each for the old generation to collect.
   */
  constructor(remote: RemoteBase, at: number, previous?: Listed) {
    const text = JSON.stringify(remote);
    const same = previous !== undefined && previous.text === text;
    this.text = same ? previous.text : text;
    this.digest = same ? previous.digest : textDigest(text);
    this.id = same ? previous.id : remote.id;
    this.at = at;
  }
  /** A fresh copy of the resource as listed. */
  get remote(): RemoteBase & Record<string, unknown> {
    return JSON.parse(this.text) as RemoteBase & Record<string, unknown>;
  }
}

export interface Snapshot {
  startedAt: number;
  completedAt: number;
  items: ReadonlyMap<string, Listed>;
  /** The ids under each key the API keeps unique (a kind with one; by its indexKey), in list order. */
  byConflictKey?: ReadonlyMap<string, Holders>;
}

/** The ids of the listed resources holding a conflict key. */
export const idsUnder = (snapshot: Snapshot | undefined, key: string): Iterable<string> =>
  holdersOf(snapshot?.byConflictKey?.get(indexKey(key)));

export class Observer {
  private current?: Snapshot;
  private running?: Promise<Snapshot | undefined>;
  private readonly opts: {
    kind: string;
    list: (onPage: (sentAt: number) => void) => AsyncIterable<RemoteBase>;
    /** What the API keeps unique for a resource of the kind, if it keeps anything. */
    conflictKey?: (remote: RemoteBase) => string | undefined;
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
    const conflictKey = this.opts.conflictKey;
    const byConflictKey = conflictKey && new Map<string, Holders>();
    // pages wait for low-priority budget, possibly for minutes: each item is as fresh as its page
    let pageAt = startedAt;
    try {
      for await (const r of this.opts.list((t) => {
        pageAt = t;
      })) {
        const listed = new Listed(r, pageAt, this.current?.items.get(r.id));
        items.set(listed.id, listed);
        if (byConflictKey) {
          const k = conflictKey!(r);
          if (k !== undefined) byConflictKey.set(k, withHolder(byConflictKey.get(k), listed.id));
        }
      }
    } catch (err) {
      // an incomplete list proves nothing about what is missing: keep the last one
      this.opts.log.warn({ kind: this.opts.kind, err: (err as Error).message }, 'bulk observation failed');
      this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'error' });
      this.failing = true;
      return this.current;
    }
    this.current = { startedAt, completedAt: Date.now(), items, byConflictKey };
    this.failing = false;
    this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'success' });
    this.opts.metrics?.observedResources.set({ kind: this.opts.kind }, items.size);
    this.opts.metrics?.observationSeconds.observe({ kind: this.opts.kind }, (Date.now() - startedAt) / 1000);
    return this.current;
  }
}
