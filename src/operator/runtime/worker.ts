// What the manager runs per kind: its controller (informers, queue, observer, engine), the
// workers that take keys from the queue, the scrape of gauges read from the caches, and
// timers stop() cuts short.
import type { Logger } from 'pino';
import type { AnyBinding } from './binding.ts';
import type { Engine } from './engine/index.ts';
import type { Informer } from './informer.ts';
import type { Metrics } from './metrics.ts';
import type { Observer } from './observer.ts';
import type { SecretStore } from './secrets.ts';
import type { WorkQueue } from './workqueue.ts';

export interface Controller {
  binding: AnyBinding;
  engine: Engine;
  queue: WorkQueue<string>;
  informers: Informer[];
  observer: Observer;
}

/**
 * One worker: reconciles the kind's keys until the queue shuts down. `urgent`: edits and deletes
 * only; `newcomer`: only namespaces with nothing in progress (fair share while the others wait).
 * A run that has to wait for its account's budget lets its worker go to the next key: it goes
 * on by itself once served (the queue keeps it in progress, and keeps back the account's further
 * keys while its budget is backed up), so accounts slow to serve (a low rateLimitPerMinute) hold
 * no worker other accounts' objects need. Only with a queue that keeps work back (else the whole
 * backlog would move into the budget's queue), and PARKED_MAX runs per kind at most.
 */
export async function runWorker(
  c: Controller,
  o: { metrics: Metrics; log: Logger },
  synced: Promise<unknown>,
  only?: 'urgent' | 'newcomer',
): Promise<void> {
  await synced;
  for (;;) {
    const key = await (only === 'newcomer' ? c.queue.getNewcomer() : c.queue.get(only === 'urgent'));
    if (key === undefined) return;
    if (!c.queue.defers) {
      await runOne(c, o, key);
      continue;
    }
    let letGo!: () => void;
    const waiting = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    await Promise.race([runOne(c, o, key, letGo), waiting]);
  }
}

/**
 * Runs waiting for budget without a worker, per kind, at most: each holds the object as read
 * before its turn; a tenant with many namespaces on slow accounts (one such run each, through
 * the newcomer worker) holds workers again past it, as it did before runs let them go.
 */
const PARKED_MAX = 64;
const parked = new WeakMap<Controller, number>();

/** One key's run, and what its outcome asks of the queue. `waiting`: told once if it waits for budget. */
async function runOne(
  c: Controller,
  o: { metrics: Metrics; log: Logger },
  key: string,
  waiting?: () => void,
): Promise<void> {
  const name = c.binding.kind.toLowerCase();
  const end = o.metrics.reconcileTime.startTimer({ controller: name });
  o.metrics.activeWorkers.inc({ controller: name });
  let working = true;
  let parks = false;
  const letGo = () => {
    if (!working || (parked.get(c) ?? 0) >= PARKED_MAX) return;
    working = false;
    parks = true;
    parked.set(c, (parked.get(c) ?? 0) + 1);
    o.metrics.activeWorkers.dec({ controller: name });
    waiting!();
  };
  try {
    const out = await c.engine.reconcile(key, waiting && letGo);
    if (out.retry) {
      c.queue.addRateLimited(key);
      o.metrics.reconcileTotal.inc({ controller: name, result: 'requeue' });
    } else {
      c.queue.forget(key);
      if (out.requeueAfterMs !== undefined) c.queue.addAfter(key, out.requeueAfterMs);
      else if (out.unchanged) c.queue.keepDelay(key);
      o.metrics.reconcileTotal.inc({
        controller: name,
        result: out.requeueAfterMs ? 'requeue_after' : 'success',
      });
    }
  } catch (err) {
    o.metrics.reconcileTotal.inc({ controller: name, result: 'error' });
    o.metrics.reconcileErrors.inc({ controller: name });
    o.log.warn(
      { controller: name, object: key, err: (err as Error).message },
      'reconcile failed; will retry',
    );
    c.queue.addRateLimited(key);
  } finally {
    end();
    if (working) o.metrics.activeWorkers.dec({ controller: name });
    working = false;
    if (parks) parked.set(c, (parked.get(c) ?? 1) - 1);
    c.queue.done(key);
  }
}

/**
 * Gauges read rather than pushed, before each scrape: cached Secret data, objects by
 * condition and the watches' progress (`informers`: those running). The API budget's are
 * each account's (AccountMetrics.scrape).
 */
export function scrape(
  metrics: Metrics,
  secrets: SecretStore | undefined,
  controllers: Controller[],
  informers: Informer[],
): void {
  metrics.secretDataCached.set(secrets?.cachedData ?? 0);
  for (const c of controllers) metrics.queueFlows.set({ name: c.binding.kind.toLowerCase() }, c.queue.flows);
  const { objectConditions, informerProgress } = metrics;
  objectConditions.reset();
  for (const c of controllers)
    for (const inf of c.informers)
      for (const o of inf.list())
        for (const cond of (o.status?.conditions as { type: string; status: string }[] | undefined) ?? [])
          objectConditions.inc({
            kind: c.binding.kind,
            namespace: o.metadata.namespace ?? '',
            condition: cond.type,
            status: cond.status,
          });
  informerProgress.reset();
  for (const inf of informers) {
    const w = inf.watching;
    informerProgress.set({ resource: w.resource, watch_namespace: w.namespace }, inf.lastProgressAt / 1000);
  }
}

/** Timers that stop() cuts short. */
export class Timers {
  private readonly waking = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(t);
        this.waking.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      t.unref();
      this.waking.add(wake);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waking]) wake();
  }
}
