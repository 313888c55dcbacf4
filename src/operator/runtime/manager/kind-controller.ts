// One kind's controller as the manager runs it: its informers (one per watched namespace), its
// bulk observer (the installation's account), its engine and its work queue.
import { INSTALLATION } from '../accounts/resolve.ts';
import type { AnyBinding } from '../bindings/binding.ts';
import { managedResource } from '../constants.ts';
import { Engine, priorityOf, requestedReconcile } from '../engine/index.ts';
import type { EventRecorder } from '../kube/events.ts';
import { Informer } from '../kube/informer.ts';
import type { SecretStore } from '../kube/secrets.ts';
import { WorkQueue } from '../scheduler/workqueue.ts';
import type { ObjectCache } from '../state/cache.ts';
import { kindObserver, type Observer } from '../state/observer.ts';
import type { References } from '../state/references.ts';
import type { ManagerAccounts } from './manager-accounts.ts';
import type { ManagerOptions } from './manager-options.ts';
import type { Controller } from './worker.ts';

export type KindDeps = Pick<
  ManagerOptions,
  'kube' | 'api' | 'log' | 'metrics' | 'informer' | 'clusterId' | 'digestKey' | 'resyncMs' | 'bindings'
> & {
  /** The installation's observer of a kind (its controller's). */
  observerOf: (kind: string) => Observer | undefined;
  namespaces: (string | undefined)[];
  labelSelector: string;
  cache: ObjectCache;
  references: References;
  accounts?: ManagerAccounts;
  events: EventRecorder;
  secrets: () => SecretStore | undefined;
};

export function kindController(b: AnyBinding, d: KindDeps): Controller {
  const resource = managedResource(b.plural);
  const informers = d.namespaces.map(
    (ns) =>
      new Informer({
        kube: d.kube,
        resource,
        namespace: ns,
        labelSelector: d.labelSelector,
        log: d.log.child({ informer: b.plural }),
        ...d.informer,
      }),
  );
  d.cache.addKind(b, informers);
  const cache = d.cache.view(b.kind);
  d.references.addKind(b.kind);
  const observer = kindObserver(b, {
    // the whole account's resources of the kind, at low budget priority
    list: (onPage, onMalformed, first) =>
      b.api.list(d.api!, {}, { priority: first ? 'high' : 'low', onPage, onMalformed }),
    log: d.log,
    metrics: d.metrics,
    account: INSTALLATION,
    bindings: d.bindings,
    observer: d.observerOf,
    existing: d.observerOf,
  });
  // the installation's account observes each kind with this one
  if (d.api) d.accounts?.installation?.observers.set(b.kind, observer);
  const engine = new Engine({
    observer,
    binding: b,
    kube: d.kube,
    api: d.api,
    accounts: d.accounts?.engineAccounts(),
    events: d.events,
    log: d.log,
    clusterId: d.clusterId,
    digestKey: d.digestKey,
    resyncMs: d.resyncMs,
    cache,
    secrets: { value: (ns, name, key) => d.secrets()!.value(ns, name, key) },
  });
  const queue = new WorkQueue<string>({
    name: b.kind.toLowerCase(),
    metrics: d.metrics,
    ...d.accounts?.queueCap(b.kind, cache.get),
    priorityOf: (key) => {
      const obj = cache.get(key);
      return obj && priorityOf(obj, requestedReconcile(obj));
    },
  });
  return { binding: b, queue, informers, engine, observer };
}

/** The controller of the kind whose list carries this one's resources, if it runs here. */
export function carrierOf(controllers: Map<string, Controller>, c: Controller): Controller | undefined {
  return [...controllers.values()].find((x) => x.binding.carries?.kind === c.binding.kind);
}

/** The kind and the kind its list carries: observed in one pass, on one schedule. */
export function observedWith(controllers: Map<string, Controller>, c: Controller): Controller[] {
  const carried = c.binding.carries && controllers.get(c.binding.carries.kind);
  return carried ? [c, carried] : [c];
}
