// What the manager runs per kind: its controller (informers, queue, observer, engine), the
// workers that take keys from the queue, the scrape of gauges read from the caches, and
// timers stop() cuts short.
import type { Logger } from 'pino';
import type { AnyBinding } from '../bindings/binding.ts';
import type { Engine } from '../engine/index.ts';
import type { Informer } from '../kube/informer.ts';
import type { SecretStore } from '../kube/secrets.ts';
import type { Metrics } from '../metrics.ts';
import { runKey } from '../scheduler/controller-loop.ts';
import type { WorkQueue } from '../scheduler/workqueue.ts';
import type { Observer } from '../state/observer.ts';

export interface Controller {
  binding: AnyBinding;
  engine: Engine;
  queue: WorkQueue<string>;
  informers: Informer[];
  observer: Observer;
}

/**
 * One worker: reconciles the kind's keys until the queue shuts down. `urgent`: edits and deletes
 * only; `newcomer`: only a namespace's first item (fair share while the others wait). A run that
 * has to wait for its account's budget, or out a 429's Retry-After, lets its worker go to the next
 * key: it goes on by itself once served (the queue keeps it in progress). Only with a queue that
 * keeps work back (else the whole backlog would move into the budget's queue): the runs waiting
 * so are as many as the queue let begin while the budget had room (policy.ts `admission`), a
 * moment's worth per account, not a number per kind.
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

/** One key's run on the controller loop (controller-loop.ts). `waiting`: told once if it waits for budget. */
function runOne(
  c: Controller,
  o: { metrics: Metrics; log: Logger },
  key: string,
  waiting?: () => void,
): Promise<void> {
  const name = c.binding.kind.toLowerCase();
  const end = o.metrics.reconcileTime.startTimer({ controller: name });
  o.metrics.activeWorkers.inc({ controller: name });
  let working = true;
  const letGo = () => {
    if (!working) return;
    working = false;
    o.metrics.activeWorkers.dec({ controller: name });
    waiting!();
  };
  return runKey(c.queue, key, (k) => c.engine.reconcile(k, waiting && letGo, c.queue.freshSince(k)), {
    ended: (_, result) => o.metrics.reconcileTotal.inc({ controller: name, result }),
    failed: (k, err) => {
      o.metrics.reconcileTotal.inc({ controller: name, result: 'error' });
      o.metrics.reconcileErrors.inc({ controller: name });
      o.log.warn(
        { controller: name, object: k, err: (err as Error).message },
        'reconcile failed; will retry',
      );
    },
    finally: () => {
      end();
      if (working) o.metrics.activeWorkers.dec({ controller: name });
      working = false;
    },
  });
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
