// With watchNamespaces the operator's rights in a namespace are a RoleBinding there (to the
// chart's ClusterRole, which lives outside the namespace). Deleting the namespace deletes the
// binding in the same sweep as the objects waiting on the operator: without a hold the
// operator gets 403 and they stay Terminating. So the binding carries the operator's finalizer
// while anything in the namespace awaits the operator (an object or EdgeAccount with its
// finalizer, a key Secret it holds), and loses it once nothing does. A binding with a
// deletionTimestamp still authorises (the RBAC authorizer does not look at it); removing the
// finalizer is the operator's last request there. The binding's rules include get and patch on
// exactly that binding (by name); a change of finalizers alone is not subject to RBAC's
// escalation check (only the GC fields change).
import type { Logger } from 'pino';
import { FINALIZER } from '../constants.ts';
import { ACCESS_FINALIZER, Holds } from '../kube/holds.ts';
import type { Kube, KubeObject } from '../kube/kube.ts';
import type { Timers } from './worker.ts';

const ROLEBINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' };
/** How often the caches are looked at (in memory; a request only when the answer changed). */
export const ACCESS_CHECK_MS = 1000;
/** How often what was seen on the bindings is read again. */
const FORGET_MS = 60_000;

export interface AccessOptions {
  kube: Kube;
  log: Logger;
  /** The watched namespaces. */
  namespaces: string[];
  /** The RoleBinding's name (the same in each). */
  binding: string;
  /** How many things in each watched namespace await the operator (from the caches). */
  awaiting(): Map<string, number>;
  timers: Timers;
}

/** Whether the operator holds its binding in a namespace: while anything there awaits it. */
export const accessNeeded = (awaiting: number): boolean => awaiting > 0;

export class AccessKeeper {
  private readonly holds: Holds;
  private stopped = false;
  /** Namespaces whose failure was logged since the last forget (once a minute, not each second). */
  private readonly warned = new Set<string>();
  private loop?: Promise<void>;

  private readonly o: AccessOptions;
  constructor(o: AccessOptions) {
    this.o = o;
    this.holds = new Holds({
      kube: o.kube,
      log: o.log,
      resource: ROLEBINDINGS,
      finalizer: ACCESS_FINALIZER,
      what: 'rolebinding',
    });
  }

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let forgotAt = Date.now();
    while (!this.stopped) {
      if (Date.now() - forgotAt > FORGET_MS) {
        this.holds.forget();
        this.warned.clear();
        forgotAt = Date.now();
      }
      await this.check();
      await this.o.timers.sleep(ACCESS_CHECK_MS);
    }
  }

  /** Each namespace's binding held or released as its contents say. */
  async check(): Promise<void> {
    const awaiting = this.o.awaiting();
    for (const ns of this.o.namespaces) {
      if (this.stopped) return;
      try {
        await this.holds.set(ns, this.o.binding, accessNeeded(awaiting.get(ns) ?? 0));
      } catch (err) {
        if (this.warned.has(ns)) continue;
        this.warned.add(ns);
        this.o.log.warn(
          { namespace: ns, binding: this.o.binding, err: (err as Error).message },
          'cannot hold the operator’s RoleBinding (a namespace deleted meanwhile may strand objects); will retry',
        );
      }
    }
  }

  /** Last of all on shutdown: holds go except in namespaces being deleted (the next operator finishes). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.o.timers.wakeAll();
    await this.loop;
    await this.holds.unholdOnShutdown();
  }
}

/**
 * What in each namespace awaits the operator: objects (edge objects, EdgeAccounts) with its
 * finalizer in these caches, and a key Secret it holds there. One pass over the caches.
 */
export function awaitingIn(
  namespaces: string[],
  informers: { list(): KubeObject[] }[],
  keys?: { heldIn(ns: string): boolean },
): Map<string, number> {
  const out = new Map(namespaces.map((ns) => [ns, keys?.heldIn(ns) ? 1 : 0]));
  for (const inf of informers)
    for (const o of inf.list()) {
      const n = out.get(o.metadata.namespace ?? '');
      if (n !== undefined && o.metadata.finalizers?.includes(FINALIZER))
        out.set(o.metadata.namespace!, n + 1);
    }
  return out;
}
