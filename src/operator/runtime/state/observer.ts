// Bulk observation: one paged list of a kind's remote resources per resync period, indexed
// by id, against which every object of the kind is compared. ceil(N / page size) requests
// where a GET per object costs N. The list runs at low budget priority: a user's change
// never waits behind it. A kind whose resources another kind's list carries (routes in the
// HTTPS edges list) is observed from that list's pass, not by listing it again.
import type { Logger } from 'pino';
import type { MalformedItem } from '../../../api/client.ts';
import type { AnyBinding, RemoteBase } from '../bindings/binding.ts';
import type { Metrics } from '../metrics.ts';
import { indexKey, listedConflictKey } from './conflicts.ts';
import { textDigest } from './fingerprint.ts';
import { type Holders, holdersOf, withHolder } from './holders.ts';

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

/** Malformed resources logged per pass (the rest are left out quietly). */
const MALFORMED_LOGGED = 3;

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

/** Builds one kind's snapshot as a pass reads its pages. */
class SnapshotBuilder {
  readonly items = new Map<string, Listed>();
  readonly byConflictKey?: Map<string, Holders>;
  readonly observer: Observer;
  readonly startedAt: number;
  constructor(observer: Observer, startedAt: number) {
    this.observer = observer;
    this.startedAt = startedAt;
    if (observer.conflictKey) this.byConflictKey = new Map();
  }
  add(r: RemoteBase, pageAt: number): void {
    const listed = new Listed(r, pageAt, this.observer.latest?.items.get(r.id));
    this.items.set(listed.id, listed);
    if (this.byConflictKey) {
      const k = this.observer.conflictKey!(r);
      if (k !== undefined) this.byConflictKey.set(k, withHolder(this.byConflictKey.get(k), listed.id));
    }
  }
}

export interface ObserverOptions {
  kind: string;
  /**
   * The kind's own list (a carried kind's, used when the carrying kind's observer is not there);
   * a resource in a shape the operator does not know is left out and told to `onMalformed`.
   * `first`: no list has completed yet, and objects with a remote resource wait for this one
   * (it goes at a user's priority, not at observation's).
   */
  list: (
    onPage: (sentAt: number) => void,
    onMalformed: (m: MalformedItem) => void,
    first: boolean,
  ) => AsyncIterable<RemoteBase>;
  /** A pass ended, complete or not (work kept back for a first list may go). */
  listed?: () => void;
  /** What the API keeps unique for a resource of the kind, if it keeps anything. */
  conflictKey?: (remote: RemoteBase) => string | undefined;
  /**
   * Another kind's resources this kind's list carries in a field (an HTTPS edge's routes): that
   * kind's observation, if it has one, is taken in the same pass, and this kind keeps its
   * resources without the field (as its binding's create, get and update return them).
   */
  carries?: { field: string; observer: () => Observer | undefined };
  /** The observer of the kind whose list carries this kind's resources: its pass is this one's. */
  carriedBy?: () => Observer | undefined;
  log: Logger;
  metrics?: Metrics;
  /** The account observed (each account's observation of a kind is a gauge series of its own). */
  account?: string;
}

export class Observer {
  private current?: Snapshot;
  private running?: Promise<Snapshot | undefined>;
  private readonly opts: ObserverOptions;

  constructor(o: ObserverOptions) {
    this.opts = o;
  }

  get conflictKey(): ObserverOptions['conflictKey'] {
    return this.opts.conflictKey;
  }

  /** The last list failed: objects fall back to a GET when their resync is due. */
  failing = false;

  /** The last complete snapshot, if any. */
  get latest(): Snapshot | undefined {
    return this.current;
  }

  /** No list has completed yet and one is under way (this kind's, or the pass that carries it). */
  get firstListing(): boolean {
    return !this.current && !!(this.running ?? this.opts.carriedBy?.()?.running);
  }

  /** Lists the kind now (one list at a time: callers share a running one). */
  refresh(): Promise<Snapshot | undefined> {
    const carrier = this.opts.carriedBy?.();
    if (carrier) return carrier.refreshFor(this).then(() => this.current);
    this.running ??= this.take().finally(() => {
      this.running = undefined;
      this.opts.listed?.();
    });
    return this.running;
  }

  /** The carried kind's observer the running pass fills. */
  private filling?: Observer;

  /** A pass that fills the carried kind's `o` too: the running one if it does, else the next. */
  private async refreshFor(o: Observer): Promise<void> {
    if (this.running && this.filling !== o) await this.running;
    await this.refresh();
  }

  private async take(): Promise<Snapshot | undefined> {
    const startedAt = Date.now();
    const own = new SnapshotBuilder(this, startedAt);
    const carries = this.opts.carries;
    const carried = carries?.observer();
    const inner = carried && new SnapshotBuilder(carried, startedAt);
    this.filling = carried;
    const builders = inner ? [own, inner] : [own];
    // pages wait for low-priority budget, possibly for minutes: each item is as fresh as its page
    let pageAt = startedAt;
    // one resource the operator cannot read spoils no other's observation: it is left out (its
    // object reads it alone, and says what is wrong with it); a few lines per pass
    let malformed = 0;
    const onMalformed = (m: MalformedItem) => {
      if (malformed++ < MALFORMED_LOGGED)
        this.opts.log.warn(
          { kind: this.opts.kind, id: m.id, field: m.field, problem: m.problem },
          'a listed resource in a shape the operator does not know is left out of the bulk observation',
        );
    };
    try {
      for await (const r of this.opts.list(
        (t) => {
          pageAt = t;
        },
        onMalformed,
        !this.current,
      )) {
        if (!carries) {
          own.add(r, pageAt);
          continue;
        }
        const { [carries.field]: those, ...rest } = r as RemoteBase & Record<string, unknown>;
        for (const x of (those as RemoteBase[] | null | undefined) ?? []) inner?.add(x, pageAt);
        own.add(rest as unknown as RemoteBase, pageAt);
      }
    } catch (err) {
      // an incomplete list proves nothing about what is missing: keep the last one
      for (const b of builders) b.observer.failed(err);
      return this.current;
    }
    const completedAt = Date.now();
    for (const b of builders) b.observer.complete(b, completedAt);
    return this.current;
  }

  private failed(err: unknown): void {
    this.opts.log.warn({ kind: this.opts.kind, err: (err as Error).message }, 'bulk observation failed');
    this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'error' });
    this.failing = true;
  }

  private complete(b: SnapshotBuilder, completedAt: number): void {
    this.current = { startedAt: b.startedAt, completedAt, items: b.items, byConflictKey: b.byConflictKey };
    this.failing = false;
    this.opts.metrics?.observations.inc({ kind: this.opts.kind, result: 'success' });
    this.opts.metrics?.observedResources.set(
      { kind: this.opts.kind, account: this.opts.account ?? '' },
      b.items.size,
    );
    this.opts.metrics?.observationSeconds.observe(
      { kind: this.opts.kind },
      (completedAt - b.startedAt) / 1000,
    );
  }
}

/**
 * A kind's observer in an account, joined to the kinds its list carries or is carried by
 * (`Binding.carries`): `observer` finds (or makes) an account's observer of a kind, `existing`
 * only finds one (a carried kind is observed only once its objects ask for it).
 */
export function kindObserver(
  b: AnyBinding,
  o: Pick<ObserverOptions, 'list' | 'log' | 'metrics' | 'account' | 'listed'> & {
    bindings: readonly AnyBinding[];
    observer: (kind: string) => Observer | undefined;
    existing: (kind: string) => Observer | undefined;
  },
): Observer {
  const carrier = o.bindings.find((x) => x.carries?.kind === b.kind);
  const carries = b.carries;
  return new Observer({
    kind: b.kind,
    list: o.list,
    conflictKey: listedConflictKey(b),
    log: o.log,
    metrics: o.metrics,
    account: o.account,
    listed: o.listed,
    ...(carries ? { carries: { field: carries.field, observer: () => o.existing(carries.kind) } } : {}),
    ...(carrier ? { carriedBy: () => o.observer(carrier.kind) } : {}),
  });
}

/**
 * Every observer made before any list starts: a kind's pass then fills the observations of
 * the kinds its list carries, which share it instead of listing again.
 */
export const refreshAll = (observers: Observer[]): Promise<(Snapshot | undefined)[]> =>
  Promise.all(observers.map((o) => o.refresh()));
