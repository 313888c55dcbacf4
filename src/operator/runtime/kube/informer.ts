// List + watch with its failure modes handled: every error restarts the watch after a
// jittered backoff, bookmarks keep the resourceVersion fresh, an idle watchdog aborts a
// watch that went silent, 410 Gone and a periodic relist rebuild the cache. Handlers run
// synchronously and must only enqueue; a throw in one is caught and logged.
import type { Logger } from 'pino';
import {
  type Kube,
  KubeError,
  type KubeObject,
  METADATA_ONLY,
  type ResourcePath,
  type WatchEvent,
} from './kube.ts';
import { leanObject } from './lean-object.ts';

export type EventHandler = (type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject) => void;

export interface InformerOptions {
  kube: Kube;
  resource: ResourcePath;
  namespace?: string;
  log: Logger;
  /** Rebuild the cache from a fresh list this often (default 30 min, jittered). */
  relistMs?: number;
  /** Abort a watch with no event or bookmark for this long (default 3 min). */
  idleMs?: number;
  /** Server-side watch timeout (default 5 min, jittered). */
  watchTimeoutSeconds?: number;
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Only objects matching this label selector (the instance partition). */
  labelSelector?: string;
  /** List and watch metadata only (PartialObjectMetadata). */
  metadataOnly?: boolean;
  /** Trims each object before it is cached (the cache keeps only what the code reads). */
  transform?: (o: KubeObject) => KubeObject;
}

/**
 * One instance of each cached object's key, shared by every map that keys the object (the
 * caches, the memos, the references, the conflict index, the queues): a key built anew is a
 * chain of concatenations per copy, and at thousands of objects the copies cost more than
 * the objects' own names. Only memory: a key not found here is an equal string all the same.
 */
const keys = new Map<string, string>();
/** The key's shared instance, made for an object the cache now holds. */
function intern(k: string): string {
  let held = keys.get(k);
  if (held === undefined) {
    // a flat copy: the concatenation's parts are not kept alive with it
    held = JSON.parse(JSON.stringify(k)) as string;
    keys.set(held, held);
  }
  return held;
}

/** An object's cache and queue key: `namespace/name` (just the name for a cluster-scoped object). */
export const keyOf = (o: { metadata: { namespace?: string; name: string } }) => {
  const k = o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
  return keys.get(k) ?? k;
};

/** The key of the object with this namespace and name (keyOf without the object at hand). */
export const keyAt = (namespace: string | undefined, name: string) =>
  keyOf({ metadata: { namespace, name } });

const jitter = (ms: number, f = 0.2) => Math.round(ms * (1 - f + Math.random() * 2 * f));

class Gone extends Error {}

export class Informer {
  readonly cache = new Map<string, KubeObject>();
  private readonly handlers: EventHandler[] = [];
  private readonly opts: Required<
    Omit<InformerOptions, 'namespace' | 'labelSelector' | 'metadataOnly' | 'transform'>
  > &
    Pick<InformerOptions, 'namespace' | 'labelSelector' | 'metadataOnly' | 'transform'>;
  /** Last time the informer made progress: a list, an opened watch, an event or a bookmark. */
  private progressAt = Date.now();
  private readonly abort = new AbortController();
  private current?: AbortController;
  private resolveSynced!: () => void;
  readonly synced: Promise<void> = new Promise((r) => {
    this.resolveSynced = r;
  });
  hasSynced = false;
  /** The API server refuses this informer its namespace (403): it holds nothing until it may read again. */
  private denied = false;
  /** Counters the tests and metrics read. */
  stats = { lists: 0, watches: 0, restarts: 0, rewatches: 0, events: 0 };

  constructor(opts: InformerOptions) {
    this.opts = {
      relistMs: 30 * 60_000,
      idleMs: 3 * 60_000,
      watchTimeoutSeconds: 300,
      minBackoffMs: 200,
      maxBackoffMs: 30_000,
      ...opts,
    };
  }

  /**
   * How long the informer has made no progress at all (no list, no watch opened, no event).
   * A healthy watch is never silent past the idle watchdog, which then reconnects.
   */
  /** When the last list, watch opened or event arrived (ms since the epoch). */
  get lastProgressAt(): number {
    return this.progressAt;
  }
  /** The resource and namespace watched, for metrics. */
  get watching(): { resource: string; namespace: string } {
    return { resource: this.opts.resource.plural, namespace: this.opts.namespace ?? '' };
  }

  stalledMs(now = Date.now()): number {
    return now - this.progressAt;
  }
  get idleMs(): number {
    return this.opts.idleMs;
  }

  private lean(o: KubeObject): KubeObject {
    leanObject(o);
    return this.opts.transform ? this.opts.transform(o) : o;
  }

  on(handler: EventHandler): void {
    this.handlers.push(handler);
  }

  get(key: string): KubeObject | undefined {
    return this.cache.get(key);
  }
  list(): KubeObject[] {
    return [...this.cache.values()];
  }

  /** Cuts the current watch; the informer reconnects on its own (tests, and a manual nudge). */
  restartWatch(): void {
    this.current?.abort(new Error('watch restarted'));
  }

  start(): void {
    void this.run();
  }
  stop(): void {
    this.abort.abort();
    for (const k of this.cache.keys()) keys.delete(k);
  }

  private emit(type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    for (const h of this.handlers) {
      try {
        h(type, obj, old);
      } catch (err) {
        this.opts.log.error({ err }, 'informer handler threw');
      }
    }
  }

  /**
   * Lists in pages; a page token that expired meanwhile (410) means one list without pages, as
   * client-go's pager does.
   */
  private async listAll(): Promise<{ items: KubeObject[]; rv: string }> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let paged = true;
    for (;;) {
      let page: Awaited<ReturnType<Kube['list']>>;
      try {
        page = await this.opts.kube.list(
          this.opts.resource,
          this.opts.namespace,
          { limit: paged ? 500 : undefined, continue: cont, labelSelector: this.opts.labelSelector },
          this.opts.metadataOnly ? METADATA_ONLY.list : undefined,
        );
      } catch (err) {
        // a list longer than etcd's compaction window never ends in pages: all at once
        if (!(cont && err instanceof KubeError && err.status === 410)) throw err;
        items.length = 0;
        cont = undefined;
        paged = false;
        continue;
      }
      this.progressAt = Date.now();
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
      if (!cont) return { items, rv: page.metadata.resourceVersion };
    }
  }

  /**
   * A namespace the operator may no longer read (its RoleBinding went with the namespace's
   * deletion, or was never made) holds nothing for it: its objects leave the cache, and the
   * informer counts as synced and alive (the API server answered), so one such namespace does
   * not hold every other namespace's work behind a sync that never comes, nor fail liveness.
   */
  private forbidden(err: unknown): boolean {
    if (!(this.opts.namespace && err instanceof KubeError && err.status === 403)) return false;
    this.progressAt = Date.now();
    if (!this.denied)
      this.opts.log.warn(
        { resource: this.opts.resource.plural, namespace: this.opts.namespace },
        'no access to this namespace (403): taken as empty until access returns',
      );
    this.denied = true;
    this.settle([]);
    return true;
  }

  private async relist(): Promise<string> {
    const { items, rv } = await this.listAll();
    if (this.denied) {
      this.denied = false;
      this.opts.log.info(
        { resource: this.opts.resource.plural, namespace: this.opts.namespace },
        'access to this namespace is back',
      );
    }
    this.stats.lists++;
    this.settle(items);
    return rv;
  }

  /** The cache becomes what a list says: adds, updates, and deletes for what it no longer holds. */
  private settle(items: KubeObject[]): void {
    const seen = new Set<string>();
    for (const raw of items) {
      const obj = this.lean(raw);
      const k = intern(keyOf(obj));
      seen.add(k);
      const old = this.cache.get(k);
      this.cache.set(k, obj);
      if (!old) this.emit('add', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit('update', obj, old);
    }
    for (const [k, old] of this.cache) {
      if (!seen.has(k)) {
        this.cache.delete(k);
        keys.delete(k);
        this.emit('delete', old);
      }
    }
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.resolveSynced();
    }
  }

  private handle(e: WatchEvent): string | undefined {
    this.stats.events++;
    this.progressAt = Date.now();
    if (e.type === 'ERROR') {
      if (e.object.code === 410) throw new Gone(e.object.message);
      throw new KubeError(e.object.code ?? 500, `watch error: ${e.object.message}`);
    }
    const rv = e.object.metadata?.resourceVersion;
    if (e.type === 'BOOKMARK') return rv;
    const obj = this.lean(e.object);
    const k = e.type === 'DELETED' ? keyOf(obj) : intern(keyOf(obj));
    const old = this.cache.get(k);
    if (e.type === 'DELETED') {
      this.cache.delete(k);
      keys.delete(k);
      this.emit('delete', obj);
    } else {
      this.cache.set(k, obj);
      this.emit(old ? 'update' : 'add', obj, old);
    }
    return rv;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let backoff = this.opts.minBackoffMs;
    let rv: string | undefined;
    let listedAt = 0;
    while (!signal.aborted) {
      try {
        if (rv === undefined || Date.now() - listedAt > jitter(this.opts.relistMs)) {
          rv = await this.relist();
          listedAt = Date.now();
        }
        this.current = new AbortController();
        const both = AbortSignal.any([signal, this.current.signal]);
        this.stats.watches++;
        const started = Date.now();
        const eventsBefore = this.stats.events;
        await this.opts.kube.watch(
          this.opts.resource,
          this.opts.namespace,
          rv,
          (e) => {
            const next = this.handle(e);
            if (next) rv = next;
          },
          {
            signal: both,
            idleMs: this.opts.idleMs,
            timeoutSeconds: jitter(this.opts.watchTimeoutSeconds),
            labelSelector: this.opts.labelSelector,
            accept: this.opts.metadataOnly ? METADATA_ONLY.watch : undefined,
            onOpen: () => {
              this.progressAt = Date.now();
            },
          },
        );
        if (Date.now() - started > 5000) backoff = this.opts.minBackoffMs;
        // a watch closed at once with nothing in it (a proxy in front of the API server, say)
        // is a failure: reopened with the backoff, not in a loop as fast as the server answers
        else if (Date.now() - started < 1000 && this.stats.events === eventsBefore)
          throw new Error('the watch ended at once with no event');
      } catch (err) {
        if (signal.aborted) break;
        this.stats.restarts++;
        if (err instanceof Gone || (err instanceof KubeError && err.status === 410)) {
          this.opts.log.info({ resource: this.opts.resource.plural }, 'watch expired (410): relisting');
          rv = undefined;
          // every informer meets an API server's compaction at once: spread their lists
          await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1000)));
          continue;
        }
        // a namespace refused is said once (forbidden); any other failure each time
        if (this.forbidden(err)) rv = undefined;
        else
          this.opts.log.warn(
            { resource: this.opts.resource.plural, err: (err as Error).message },
            'watch failed; restarting',
          );
        const wait = Math.floor(Math.random() * backoff);
        backoff = Math.min(this.opts.maxBackoffMs, backoff * 2);
        await new Promise((r) => setTimeout(r, wait));
        // Re-watch from the last resourceVersion seen, as client-go does: the API server
        // replays every event after it, so a cut connection loses nothing; if that version
        // is too old it answers 410 and the branch above relists.
        this.stats.rewatches++;
      }
    }
  }
}
