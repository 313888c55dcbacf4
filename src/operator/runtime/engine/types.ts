// What the engine's parts share: its options, the object's status as the engine reads it,
// what an object wants and what the API holds.
import type { Logger } from 'pino';
import type { EdgeClient } from '../../../api/client.ts';
import type { Resolution } from '../accounts/resolve.ts';
import type { AnyBinding, Common } from '../bindings/binding.ts';
import type { Condition, Phase } from '../bindings/conditions.ts';
import type { EventRecorder } from '../kube/events.ts';
import type { Kube, KubeObject, ResourcePath } from '../kube/kube.ts';
import type { EngineCache } from '../state/cache-view.ts';
import type { Observer } from '../state/observer.ts';
import type { Memos } from './memo.ts';

export type { EngineCache } from '../state/cache-view.ts';

/** Referenced Secrets' data. */
export interface EngineSecrets {
  /** A referenced Secret key's value (base64): undefined without the key, null without the Secret. */
  value(namespace: string, name: string, key: string): Promise<string | undefined | null>;
}

/** The accounts objects use (runtime/accounts): without it, every object uses `api`. */
export interface EngineAccounts {
  /** The account an object works with now (held or resolved; no API request), or why none. */
  accountOf(obj: KubeObject): Resolution;
  /** Whether objects of the namespace may use the account. */
  mayUse(id: string, namespace: string): boolean;
  /** Whether the object's status may name the account as holding its resource (else it is forged). */
  mayHold(obj: KubeObject, id: string): boolean;
  /**
   * Whether objects of the namespace may adopt, observe or reference by raw id the account's
   * resources that no object of their namespace made.
   */
  mayAdopt(id: string, namespace: string): boolean;
  /**
   * The account's client and the kind's bulk observation there, or why the object must wait
   * (`forDelete`: the last key the API accepted serves, whatever the account's state now).
   */
  use(
    id: string,
    kind: string,
    forDelete?: boolean,
  ): { client: EdgeClient; observer?: Observer } | { phase: Phase };
}

export interface EngineOptions {
  binding: AnyBinding;
  /** Only patches: the engine reads through the informers' caches (`cache`). */
  kube: Pick<Kube, 'patch'>;
  /** The client of every object when there are no accounts (else the account's, per object). */
  api?: EdgeClient;
  accounts?: EngineAccounts;
  events: EventRecorder;
  log: Logger;
  clusterId: string;
  /** HMAC key of the secret digests in status, known only to the operator. */
  digestKey: string;
  resyncMs: number;
  /** The kind's bulk observation, when there is one. */
  observer?: Observer;
  cache: EngineCache;
  secrets: EngineSecrets;
}

export interface Outcome {
  /** Reconcile again after this long (the resync, or a slow retry). */
  requeueAfterMs?: number;
  /** Retry with the queue's backoff. */
  retry?: boolean;
  /** Nothing done, nothing changed since the last sync: a retry an earlier run asked for still holds. */
  unchanged?: boolean;
}

export type Status = Record<string, unknown> & {
  id?: string;
  conditions?: Condition[];
  observedGeneration?: number;
  lastHandledReconcileAt?: string;
  secretDigests?: Record<string, string>;
};

export type Remote = Record<string, unknown> & {
  id: string;
  uri?: string;
  created_at?: string;
  metadata?: string;
  description?: string;
};

/** What an object asks the API for. */
export interface Wanted {
  desired: Record<string, unknown>;
  modules: Map<string, Record<string, unknown> | null>;
  common: Common;
}

/** What a read found under an id: the resource, or nothing. */
export type Seen = { found: true; remote: Remote } | { found: false };

/** One way of reading remote resources: a single GET, or a look-up in the kind's bulk list. */
export interface RemoteReader {
  read(id: string, desired: Record<string, unknown>): Promise<Seen>;
}

export const statusOf = (obj: KubeObject): Status => (obj.status ?? {}) as Status;

/** The options a reconcile works with: the object's account's client and bulk observation. */
export type ScopedOptions = EngineOptions & { api: EdgeClient };

/** What every part of the engine works with: its options, the kind's resource and the memos. */
export interface EngineContext {
  readonly opts: ScopedOptions;
  /** The account of the object reconciled (undefined without accounts). */
  readonly account?: string;
  /**
   * Whether the object's namespace may take or read resources of the account that none of its
   * objects made (without accounts: yes).
   */
  readonly mayAdopt?: boolean;
  readonly binding: AnyBinding;
  readonly resource: ResourcePath;
  readonly memos: Memos;
  /** The controller's name (the kind in lower case), for logs. */
  readonly name: string;
}
