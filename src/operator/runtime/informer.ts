// List + watch with its failure modes handled: every error restarts the watch after a
// jittered backoff, bookmarks keep the resourceVersion fresh, an idle watchdog aborts a
// watch that went silent, 410 Gone and a periodic relist rebuild the cache. Handlers run
// synchronously and must only enqueue; a throw in one is caught and logged.
import type { Logger } from 'pino';
import { type Kube, KubeError, type KubeObject, type ResourcePath, type WatchEvent } from './kube.ts';

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
}

export const keyOf = (o: { metadata: { namespace?: string; name: string } }) =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;

const jitter = (ms: number, f = 0.2) => Math.round(ms * (1 - f + Math.random() * 2 * f));

class Gone extends Error {}

/** managedFields is often most of an object's size and nothing here reads it (controller-runtime drops it too). */
function lean<T extends KubeObject>(o: T): T {
  delete (o.metadata as { managedFields?: unknown }).managedFields;
  return o;
}

export class Informer {
  readonly cache = new Map<string, KubeObject>();
  private readonly handlers: EventHandler[] = [];
  private readonly o: Required<Omit<InformerOptions, 'namespace'>> & { namespace?: string };
  private readonly abort = new AbortController();
  private current?: AbortController;
  private resolveSynced!: () => void;
  readonly synced: Promise<void> = new Promise((r) => {
    this.resolveSynced = r;
  });
  hasSynced = false;
  /** Counters the tests and metrics read. */
  stats = { lists: 0, watches: 0, restarts: 0, events: 0 };

  constructor(opts: InformerOptions) {
    this.o = {
      relistMs: 30 * 60_000,
      idleMs: 3 * 60_000,
      watchTimeoutSeconds: 300,
      minBackoffMs: 200,
      maxBackoffMs: 30_000,
      ...opts,
    };
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
  }

  private emit(type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    for (const h of this.handlers) {
      try {
        h(type, obj, old);
      } catch (err) {
        this.o.log.error({ err }, 'informer handler threw');
      }
    }
  }

  private async relist(): Promise<string> {
    const items: KubeObject[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.o.kube.list(this.o.resource, this.o.namespace, { limit: 500, continue: cont });
      items.push(...page.items);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion;
    } while (cont);
    this.stats.lists++;
    const seen = new Set<string>();
    for (const obj of items) {
      const k = keyOf(obj);
      seen.add(k);
      const old = this.cache.get(k);
      this.cache.set(k, lean(obj));
      if (!old) this.emit('add', obj);
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit('update', obj, old);
    }
    for (const [k, old] of this.cache) {
      if (!seen.has(k)) {
        this.cache.delete(k);
        this.emit('delete', old);
      }
    }
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.resolveSynced();
    }
    return rv;
  }

  private handle(e: WatchEvent): string | undefined {
    this.stats.events++;
    if (e.type === 'ERROR') {
      if (e.object.code === 410) throw new Gone(e.object.message);
      throw new KubeError(e.object.code ?? 500, `watch error: ${e.object.message}`);
    }
    const rv = e.object.metadata?.resourceVersion;
    if (e.type === 'BOOKMARK') return rv;
    const k = keyOf(e.object);
    const old = this.cache.get(k);
    if (e.type === 'DELETED') {
      this.cache.delete(k);
      this.emit('delete', e.object);
    } else {
      this.cache.set(k, lean(e.object));
      this.emit(old ? 'update' : 'add', e.object, old);
    }
    return rv;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let backoff = this.o.minBackoffMs;
    let rv: string | undefined;
    let listedAt = 0;
    while (!signal.aborted) {
      try {
        if (rv === undefined || Date.now() - listedAt > jitter(this.o.relistMs)) {
          rv = await this.relist();
          listedAt = Date.now();
        }
        this.current = new AbortController();
        const both = AbortSignal.any([signal, this.current.signal]);
        this.stats.watches++;
        const started = Date.now();
        await this.o.kube.watch(
          this.o.resource,
          this.o.namespace,
          rv,
          (e) => {
            const next = this.handle(e);
            if (next) rv = next;
          },
          { signal: both, idleMs: this.o.idleMs, timeoutSeconds: jitter(this.o.watchTimeoutSeconds) },
        );
        if (Date.now() - started > 5000) backoff = this.o.minBackoffMs;
      } catch (err) {
        if (signal.aborted) break;
        this.stats.restarts++;
        if (err instanceof Gone || (err instanceof KubeError && err.status === 410)) {
          this.o.log.info({ resource: this.o.resource.plural }, 'watch expired (410): relisting');
          rv = undefined;
          continue;
        }
        this.o.log.warn(
          { resource: this.o.resource.plural, err: (err as Error).message },
          'watch failed; restarting',
        );
        const wait = Math.floor(Math.random() * backoff);
        backoff = Math.min(this.o.maxBackoffMs, backoff * 2);
        await new Promise((r) => setTimeout(r, wait));
        // a watch that died on a connection error may have missed events
        if (!(err instanceof Error && /restarted|idle/.test(err.message))) rv = undefined;
      }
    }
  }
}
