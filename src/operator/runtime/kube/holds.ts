// The operator's own finalizers on what it needs to finish deleting a namespace. The namespace
// controller deletes everything in a namespace in one sweep: the edge objects, their
// EdgeAccount, the account's key Secret and (with watchNamespaces) the RoleBinding that lets the
// operator in. Objects wait on the operator's finalizer; what the operator needs to remove that
// finalizer (the key to delete the remote resources, the rights to patch the objects) waits on
// these, and each goes once nothing in the namespace needs it any more. A finalizer (and not
// wider cluster-wide rights) because RBAC cannot narrow a right to "namespaces being deleted":
// the only cluster-wide grant that survives the sweep is one on every namespace's Secrets and
// edge objects, which is what watchNamespaces exists to avoid.
import type { Logger } from 'pino';
import { GROUP } from '../constants.ts';
import { finalizersWith } from './finalizer.ts';
import { isConflict, isKubeNotFound, type Kube, type KubeObject, type ResourcePath } from './kube.ts';

/** On an EdgeAccount's key Secret while objects hold remote resources through the account. */
export const KEY_FINALIZER = `${GROUP}/key-in-use`;
/** On the operator's RoleBinding in a watched namespace while something there awaits the operator. */
export const ACCESS_FINALIZER = `${GROUP}/operator-access`;

/**
 * Whether a hold stays. While running: exactly while needed. On shutdown: only in a namespace
 * being deleted, where the next operator (a restart, the standby) still has work to finish;
 * elsewhere it goes, so that an uninstall never leaves a Secret or RoleBinding Terminating on
 * a finalizer no operator will remove (the next operator puts it back at start).
 */
export function keepHold(o: { needed: boolean; shuttingDown: boolean; terminating: boolean }): boolean {
  return o.needed && (!o.shuttingDown || o.terminating);
}

const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

/** Whether a namespace is being deleted (gone counts as being deleted). */
export async function terminating(kube: Kube, ns: string): Promise<boolean> {
  try {
    return !!(await kube.get(NAMESPACES, undefined, ns)).metadata.deletionTimestamp;
  } catch (err) {
    if (isKubeNotFound(err)) return true;
    throw err;
  }
}

interface HoldsOptions {
  kube: Kube;
  log: Logger;
  resource: ResourcePath;
  finalizer: string;
  /** The log field naming an object. */
  what: string;
}

/**
 * One finalizer of the operator's on objects of one resource: held or released by name, with
 * what it last saw remembered, so that a decision that did not change costs no request.
 */
export class Holds {
  /** `ns/name` -> held, as last written or read. */
  private readonly known = new Map<string, boolean>();
  private readonly o: HoldsOptions;
  constructor(o: HoldsOptions) {
    this.o = o;
  }

  /** Writes in progress, by `ns/name`. */
  private readonly writing = new Map<string, Promise<void>>();

  /**
   * Held (true) or released (false) now; a missing object needs nothing. `hold` may be a
   * decision, taken when this object's turn to be written comes (undefined: leave it): callers
   * working at once decide one after the other, so a decision taken before another's write
   * cannot land after it.
   */
  async set(ns: string, name: string, hold: boolean | (() => boolean | undefined)): Promise<void> {
    const key = `${ns}/${name}`;
    const before = this.writing.get(key);
    const mine = (before ? before.catch(() => {}) : Promise.resolve()).then(() => {
      const h = typeof hold === 'function' ? hold() : hold;
      return h === undefined ? undefined : this.write(ns, name, key, h);
    });
    this.writing.set(key, mine);
    try {
      await mine;
    } finally {
      if (this.writing.get(key) === mine) this.writing.delete(key);
    }
  }

  private async write(ns: string, name: string, key: string, hold: boolean): Promise<void> {
    if (this.known.get(key) === hold) return;
    for (let attempt = 0; ; attempt++) {
      let obj: KubeObject;
      try {
        obj = await this.o.kube.get(this.o.resource, ns, name);
      } catch (err) {
        if (!isKubeNotFound(err)) throw err;
        // nothing to hold (looked at again when needed, or after forget())
        this.known.set(key, false);
        return;
      }
      const next = finalizersWith(obj.metadata.finalizers, this.o.finalizer, hold);
      if (next) {
        try {
          await this.o.kube.patch(this.o.resource, ns, name, {
            metadata: { resourceVersion: obj.metadata.resourceVersion, finalizers: next },
          });
        } catch (err) {
          if (isConflict(err) && attempt < 3) continue;
          if (isKubeNotFound(err)) return void this.known.set(key, false);
          throw err;
        }
        this.o.log.info({ [this.o.what]: key, finalizer: this.o.finalizer }, hold ? 'holding' : 'released');
      }
      this.known.set(key, hold);
      return;
    }
  }

  /** Whether the operator holds one in this namespace (as far as it knows). */
  heldIn(ns: string): boolean {
    for (const [key, held] of this.known) if (held && key.startsWith(`${ns}/`)) return true;
    return false;
  }

  /** Held ones, as [ns, name]. */
  held(): [string, string][] {
    return [...this.known]
      .filter(([, h]) => h)
      .map(([key]) => {
        const i = key.indexOf('/');
        return [key.slice(0, i), key.slice(i + 1)];
      });
  }

  /** Nothing asks about this one any more: what was known of it goes, unless it is held. */
  drop(ns: string, name: string): void {
    const key = `${ns}/${name}`;
    if (this.known.get(key) === false && !this.writing.has(key)) this.known.delete(key);
  }

  /** Forget what was seen: the next set() looks again (someone may have removed a finalizer). */
  forget(): void {
    this.known.clear();
  }

  /** On shutdown: release every hold outside namespaces being deleted. */
  async unholdOnShutdown(): Promise<void> {
    for (const [ns, name] of this.held()) {
      try {
        const keep = keepHold({
          needed: true,
          shuttingDown: true,
          terminating: await terminating(this.o.kube, ns),
        });
        if (!keep) await this.set(ns, name, false);
      } catch (err) {
        this.o.log.warn(
          { [this.o.what]: `${ns}/${name}`, err: (err as Error).message },
          'could not release on shutdown',
        );
      }
    }
  }
}
