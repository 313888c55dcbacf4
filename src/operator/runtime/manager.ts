// Wires informers, queues, workers and engines together; runs them only while leader;
// serves /healthz, /readyz and /metrics; drains in-flight reconciles on shutdown.
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { EdgeClient } from '../../api/client.ts';
import type { AnyBinding } from '../kinds/binding.ts';
import { GROUP, VERSION } from '../kinds/crd-schema.ts';
import { Engine } from './engine.ts';
import { EventRecorder } from './events.ts';
import { Informer, keyOf } from './informer.ts';
import type { Kube, KubeObject } from './kube.ts';
import { LeaderElector } from './leader.ts';
import type { Metrics } from './metrics.ts';
import { WorkQueue } from './workqueue.ts';

export interface ManagerOptions {
  kube: Kube;
  api: EdgeClient;
  bindings: AnyBinding[];
  log: Logger;
  metrics: Metrics;
  clusterId: string;
  identity: string;
  /** Namespaces to watch; empty: all. */
  namespaces: string[];
  concurrency: number;
  resyncMs: number;
  drainMs: number;
  leaderElection: { enabled: boolean; namespace: string; name: string };
  /** host:port for /metrics, /healthz and /readyz; empty: none. */
  listen?: string;
  /** host:port for /healthz and /readyz only, when probes should not share the metrics port. */
  probeListen?: string;
  informer?: { idleMs?: number; relistMs?: number; watchTimeoutSeconds?: number };
}

interface Controller {
  binding: AnyBinding;
  engine: Engine;
  queue: WorkQueue<string>;
  informers: Informer[];
  /** "Kind/ns/name" of a referenced object -> keys of this kind that reference it. */
  dependents: Map<string, Set<string>>;
  refsOf: Map<string, string[]>;
}

export class Manager {
  private readonly o: ManagerOptions;
  readonly controllers = new Map<string, Controller>();
  private readonly servers: Server[] = [];
  private elector?: LeaderElector;
  private started = false;
  private stopping = false;
  private workers: Promise<void>[] = [];

  constructor(o: ManagerOptions) {
    this.o = o;
  }

  /** Informers of objects the kinds read but do not manage (Secrets). */
  private readonly watched = new Map<string, Informer[]>();

  lookup = (kind: string, namespace: string, name: string): KubeObject | undefined => {
    for (const inf of this.controllers.get(kind)?.informers ?? this.watched.get(kind) ?? []) {
      const o = inf.get(`${namespace}/${name}`);
      if (o) return o;
    }
    return undefined;
  };

  get synced(): boolean {
    return (
      [...this.controllers.values()].every((c) => c.informers.every((i) => i.hasSynced)) &&
      [...this.watched.values()].every((l) => l.every((i) => i.hasSynced))
    );
  }
  get isLeader(): boolean {
    return !this.o.leaderElection.enabled || !!this.elector?.isLeader;
  }

  async start(): Promise<void> {
    if (this.o.listen) await this.serve(this.o.listen, true);
    if (this.o.probeListen && this.o.probeListen !== this.o.listen)
      await this.serve(this.o.probeListen, false);
    if (this.o.leaderElection.enabled) {
      this.elector = new LeaderElector({
        kube: this.o.kube,
        ...this.o.leaderElection,
        identity: this.o.identity,
        log: this.o.log,
      });
      this.o.log.info({ identity: this.o.identity }, 'waiting for leadership');
      await this.elector.acquire(() => {
        this.o.log.error('leadership lost: exiting so a standby takes over');
        void this.stop().finally(() => process.exit(1));
      });
      if (this.stopping) return;
      this.o.metrics.leader.set({ name: this.o.leaderElection.name }, 1);
    }
    this.startControllers();
  }

  private startControllers(): void {
    const events = new EventRecorder(this.o.kube, this.o.log, this.o.identity);
    const namespaces = this.o.namespaces.length ? this.o.namespaces : [undefined];
    for (const b of this.o.bindings) {
      const resource = { group: GROUP, version: VERSION, plural: b.plural };
      const queue = new WorkQueue<string>({ name: b.kind.toLowerCase(), metrics: this.o.metrics });
      const informers = namespaces.map(
        (ns) =>
          new Informer({
            kube: this.o.kube,
            resource,
            namespace: ns,
            log: this.o.log.child({ informer: b.plural }),
            ...this.o.informer,
          }),
      );
      const c: Controller = {
        binding: b,
        queue,
        informers,
        dependents: new Map(),
        refsOf: new Map(),
        engine: undefined as never,
      };
      c.engine = new Engine({
        binding: b,
        kube: this.o.kube,
        api: this.o.api,
        events,
        log: this.o.log,
        clusterId: this.o.clusterId,
        resyncMs: this.o.resyncMs,
        lookup: this.lookup,
        get: (key) => {
          for (const i of informers) {
            const o = i.get(key);
            if (o) return o;
          }
          return undefined;
        },
      });
      this.controllers.set(b.kind, c);
    }
    if (this.o.bindings.some((b) => b.secrets)) {
      const secrets = namespaces.map(
        (ns) =>
          new Informer({
            kube: this.o.kube,
            resource: { group: '', version: 'v1', plural: 'secrets' },
            namespace: ns,
            log: this.o.log.child({ informer: 'secrets' }),
            ...this.o.informer,
          }),
      );
      for (const inf of secrets) {
        // a rotated Secret re-applies the modules that use it
        inf.on((_type, obj) => this.enqueueDependents('Secret', obj));
        inf.start();
      }
      this.watched.set('Secret', secrets);
    }
    for (const c of this.controllers.values()) {
      for (const inf of c.informers) {
        inf.on((type, obj, old) => this.onEvent(c, type, obj, old));
        inf.start();
      }
      for (let i = 0; i < this.o.concurrency; i++) this.workers.push(this.work(c));
    }
    this.started = true;
  }

  /** Handlers only enqueue. */
  private onEvent(c: Controller, type: 'add' | 'update' | 'delete', obj: KubeObject, old?: KubeObject): void {
    const key = keyOf(obj);
    const ns = obj.metadata.namespace ?? '';
    // keep the reverse index of references current
    for (const r of c.refsOf.get(key) ?? []) c.dependents.get(r)?.delete(key);
    const spec = obj.spec ?? {};
    const refs =
      type === 'delete'
        ? []
        : [
            ...(c.binding.references?.(spec) ?? []).map((r) => `${r.kind}/${ns}/${r.name}`),
            ...(c.binding.secrets?.(spec) ?? []).map((s) => `Secret/${ns}/${s.name}`),
          ];
    c.refsOf.set(key, refs);
    for (const r of refs) {
      const s = c.dependents.get(r) ?? new Set<string>();
      c.dependents.set(r, s);
      s.add(key);
    }
    if (type === 'delete') {
      c.refsOf.delete(key);
      c.engine.forget(key);
      // a referenced object waiting on its dependents to go may now be deletable
      for (const r of c.binding.references?.(obj.spec ?? {}) ?? [])
        this.controllers.get(r.kind)?.queue.add(`${ns}/${r.name}`);
    } else {
      c.queue.add(key);
    }
    // objects referencing this one react to it getting (or losing) an id
    const idChanged =
      (obj.status as { id?: string } | undefined)?.id !== (old?.status as { id?: string } | undefined)?.id;
    if (type !== 'update' || idChanged || obj.metadata.deletionTimestamp)
      this.enqueueDependents(c.binding.kind, obj);
    this.o.metrics.managedObjects.set(
      { kind: c.binding.kind },
      c.informers.reduce((n, i) => n + i.cache.size, 0),
    );
  }

  private enqueueDependents(kind: string, obj: KubeObject): void {
    const ref = `${kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    for (const other of this.controllers.values()) {
      for (const dep of other.dependents.get(ref) ?? []) {
        // a new id or a rotated Secret must be looked at even when no resync is due
        other.engine.forget(dep);
        other.queue.add(dep);
      }
    }
  }

  private async work(c: Controller): Promise<void> {
    const name = c.binding.kind.toLowerCase();
    await Promise.all(c.informers.map((i) => i.synced));
    for (;;) {
      const key = await c.queue.get();
      if (key === undefined) return;
      const end = this.o.metrics.reconcileTime.startTimer({ controller: name });
      this.o.metrics.activeWorkers.inc({ controller: name });
      try {
        const out = await c.engine.reconcile(key);
        if (out.retry) {
          c.queue.addRateLimited(key);
          this.o.metrics.reconcileTotal.inc({ controller: name, result: 'requeue' });
        } else {
          c.queue.forget(key);
          if (out.requeueAfterMs !== undefined) c.queue.addAfter(key, out.requeueAfterMs);
          this.o.metrics.reconcileTotal.inc({
            controller: name,
            result: out.requeueAfterMs ? 'requeue_after' : 'success',
          });
        }
      } catch (err) {
        this.o.metrics.reconcileTotal.inc({ controller: name, result: 'error' });
        this.o.metrics.reconcileErrors.inc({ controller: name });
        this.o.log.warn(
          { controller: name, object: key, err: (err as Error).message },
          'reconcile failed; will retry',
        );
        c.queue.addRateLimited(key);
      } finally {
        end();
        this.o.metrics.activeWorkers.dec({ controller: name });
        c.queue.done(key);
      }
    }
  }

  /** One listener; `metrics` false serves only the probes (a separate probe address). */
  private serve(listen: string, metrics: boolean): Promise<Server> {
    const i = listen.lastIndexOf(':');
    const host = listen.slice(0, i) || '0.0.0.0';
    const port = Number(listen.slice(i + 1));
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz') return res.writeHead(200).end('ok');
      if (path === '/readyz') {
        // a standby is ready (it serves probes and waits); a leader once its caches synced
        const ok = !this.stopping && (!this.started || this.synced);
        return res.writeHead(ok ? 200 : 503).end(ok ? 'ok' : 'not ready');
      }
      if (path === '/metrics' && metrics) {
        this.o.metrics.apiLimiterWait.set(this.o.api.transport.limiter.waitedMs / 1000);
        void this.o.metrics.registry
          .metrics()
          .then((m) => res.writeHead(200, { 'content-type': this.o.metrics.registry.contentType }).end(m));
        return;
      }
      res.writeHead(404).end('not found');
    });
    this.servers.push(server);
    return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
  }

  get address(): string | undefined {
    const a = this.servers[0]?.address();
    return a && typeof a === 'object' ? `${a.address}:${a.port}` : undefined;
  }

  /** Stops taking work, lets in-flight reconciles finish within the drain deadline, releases the lease. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const drained = await Promise.all(
      [...this.controllers.values()].map((c) => c.queue.shutdown(this.o.drainMs)),
    );
    if (drained.includes(false)) this.o.log.warn('drain deadline passed with reconciles in flight');
    for (const c of this.controllers.values()) for (const i of c.informers) i.stop();
    for (const l of this.watched.values()) for (const i of l) i.stop();
    await this.elector?.release();
    await Promise.all(this.servers.map((srv) => new Promise<void>((r) => srv.close(() => r()))));
    this.o.log.info('stopped');
  }
}
