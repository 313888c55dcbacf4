// The managed-resource engine: one reconciler for every kind. A binding says what differs
// between kinds; everything here is the same for all of them.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { EdgeClient } from '../../api/client.ts';
import { ApiError, isNotFound, isRetryable } from '../../api/errors.ts';
import { ID_PREFIX, type IdKind } from '../../api/limits.ts';
import { type Priority, type PriorityCell, withPriority } from '../../api/rate-limiter.ts';
import type { AnyBinding, Common } from './binding.ts';
import { type Condition, conditionsFor, type Phase } from './conditions.ts';
import { ConflictKeys, findConflict } from './conflicts.ts';
import {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  FORCE_DELETE_ANNOTATION,
  ID_ANNOTATION,
  managedResource,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
} from './constants.ts';
import type { EventRecorder } from './events.ts';
import { isConflict, type Kube, KubeError, type KubeObject, type ResourcePath } from './kube.ts';
import { mergePatch } from './merge-patch.ts';
import {
  covers,
  isLegacyDigest,
  legacySecretDigest,
  outputToInput,
  secretDigest,
  withoutSecrets,
} from './module-compare.ts';
import type { Observer } from './observer.ts';
import { decodeMetadata, encodeMetadata, type Owner } from './owner.ts';

export interface EngineOptions {
  binding: AnyBinding;
  /** Only patches: the engine reads through the informers' caches (`get`, `lookup`). */
  kube: Pick<Kube, 'patch'>;
  api: EdgeClient;
  events: EventRecorder;
  log: Logger;
  clusterId: string;
  /** HMAC key of the secret digests in status, known only to the operator. */
  digestKey: string;
  resyncMs: number;
  /** Reads any managed object from the informer caches (a Secret: metadata only). */
  lookup(kind: string, namespace: string, name: string): KubeObject | undefined;
  /** A referenced Secret's data, read by name; undefined when it does not exist. */
  readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** Objects in the cluster that reference this one ("Kind name"), for reference-aware deletion. */
  referrersOf?(kind: string, namespace: string, name: string): string[];
  /** Names the Kubernetes objects behind remote ids in a message. */
  nameIds?(text: string): string;
  /** The kind's bulk observation, when there is one. */
  observer?: Observer;
  /** The references another kind's object makes (cycle detection); undefined for an unknown kind. */
  referencesOf?(kind: string, spec: Record<string, unknown>): { kind: string; name: string }[] | undefined;
  /** Reads the own kind's object for a queue key. */
  get(key: string): KubeObject | undefined;
  /**
   * Whether the object an owner marker names (`Kind/namespace/name`) still exists, in any
   * namespace and installation: 'unknown' when that cannot be read.
   */
  ownerState?(object: string, uid: string): Promise<'live' | 'gone' | 'unknown'>;
  /**
   * The object in another namespace that manages the resource of this id, when this
   * namespace may not reach it by id (namespaces are tenants, unless the platform shares one).
   */
  managedElsewhere?(
    id: string,
    namespace: string,
  ): { kind: string; namespace: string; name: string } | undefined;
  /** Every object of the own kind in the cache (conflicts between objects). */
  list?(): KubeObject[];
}

export interface Outcome {
  /** Reconcile again after this long (the resync, or a slow retry). */
  requeueAfterMs?: number;
  /** Retry with the queue's backoff. */
  retry?: boolean;
}

const METADATA_MAX = 4096;
/** Waits shorter than this are not written to a new object's status. */
const QUIET_WAIT_MS = 5000;
/**
 * ... and waits for a referenced object that exists and is on its way (not stalled) get
 * longer: applying a thousand policies with their rules is not a thousand waits to report.
 */
const QUIET_WAIT_FOR_PROGRESS_MS = 60_000;
const WAITS = new Set(['WaitingForReference', 'WaitingForSecret']);
/**
 * Progressing states a person running `kubectl describe` should see as Events too (repeats
 * are dropped by the recorder; throttling shows in metrics, not per object).
 */
const NOTEWORTHY = new Set([...WAITS, 'ApiUnavailable', 'DeleteFailed']);
const SLOW_RETRY_MS = 5 * 60_000;
/** A conflict is looked at again this often (no API call: the cache and the last list). */
const CONFLICT_RECHECK_MS = 15_000;

type Status = Record<string, unknown> & {
  id?: string;
  conditions?: Condition[];
  observedGeneration?: number;
  lastHandledReconcileAt?: string;
};

const isPaused = (obj: KubeObject) => obj.metadata.annotations?.[PAUSED_ANNOTATION] === 'true';
/** managementPolicy Observe: read and report, never write to the account. */
const observesOnly = (obj: KubeObject) =>
  (obj.spec as { managementPolicy?: string } | undefined)?.managementPolicy === 'Observe';
/** A reconcile-requested-at value not handled yet. */
const requestedReconcile = (obj: KubeObject): string | undefined => {
  const v = obj.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
  return v && v !== (obj.status as Status | undefined)?.lastHandledReconcileAt ? v : undefined;
};

type Remote = Record<string, unknown> & { id: string; uri?: string; created_at?: string; metadata?: string };

/** What an object asks the API for. */
interface Wanted {
  desired: Record<string, unknown>;
  modules: Map<string, Record<string, unknown> | null>;
  common: Common;
}

/** What the API holds for an object, or that it holds nothing under the id. */
type Observation = { found: true; remote: Remote } | { found: false };

/** One way of observing remote resources: a single GET, or a bulk observation. */
interface RemoteObserver {
  observe(id: string, desired: Record<string, unknown>): Promise<Observation>;
}

/** What this process last did to an object, so an unchanged object costs nothing until its resync. */
interface LastSync {
  at: number;
  generation?: number;
  id?: string;
  stalled?: boolean;
  digests?: Record<string, string>;
  /** The status as this process last wrote or found it: anything else was written by someone else. */
  status?: unknown;
  /** The object's resourceVersion after that. */
  resourceVersion?: string;
}

/**
 * resourceVersion a is older than b. Kubernetes calls them opaque, but every API server
 * backed by etcd hands out increasing integers; anything else is never called older.
 */
function olderThan(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

/** An id of a resource kind this operator manages, by its prefix (`ipp_...`). */
const MANAGED_ID = new RegExp(
  `^(${['ipPolicy', 'ipPolicyRule', 'ipRestriction', 'tunnelGroupBackend', 'weightedBackend', 'sshCredential', 'httpsEdge', 'httpsEdgeRoute', 'tcpEdge', 'tlsEdge'].map((k) => ID_PREFIX[k as IdKind]).join('|')})_[A-Za-z0-9]+$`,
);

/**
 * The ids of managed kinds a spec names in its `...ID`/`...IDs` fields (`ipPolicyID`,
 * `backendID`, `ipPolicyIDs`): resources made outside the cluster, or so the user says.
 */
export function rawIds(value: unknown, path: string): { path: string; id: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => rawIds(v, `${path}[${i}]`));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => {
    if (/IDs?$/.test(k)) {
      const ids = typeof v === 'string' ? [v] : Array.isArray(v) ? v : [];
      return ids.flatMap((x, i) =>
        typeof x === 'string' && MANAGED_ID.test(x)
          ? [{ path: `${path}.${k}${Array.isArray(v) ? `[${i}]` : ''}`, id: x }]
          : [],
      );
    }
    return rawIds(v, `${path}.${k}`);
  });
}

/** A failure the engine turns into a condition, with or without a retry. */
class ConditionError extends Error {
  readonly phase: Phase;
  readonly outcome: Outcome;
  /** How long a new object may wait like this before its status says so. */
  readonly quietMs: number;
  constructor(phase: Phase, outcome: Outcome, quietMs = QUIET_WAIT_MS) {
    super(phase.message);
    this.phase = phase;
    this.outcome = outcome;
    this.quietMs = quietMs;
  }
}

export class Engine {
  readonly binding: AnyBinding;
  readonly resource: ResourcePath;
  private readonly opts: EngineOptions;
  /** What this process last applied per object: the cache can lag behind our own writes. */
  private readonly lastSync = new Map<string, LastSync>();

  constructor(o: EngineOptions) {
    this.opts = o;
    this.binding = o.binding;
    this.conflictKeys = new ConflictKeys(o.binding);
    this.resource = managedResource(o.binding.plural);
  }

  get name(): string {
    return this.binding.kind.toLowerCase();
  }

  /** When this process last finished writing an object's remote resource: older snapshots are stale for it. */
  private readonly lastRemoteWrite = new Map<string, number>();

  /** Bumped by forget(): a reconcile that started before must not record its result. */
  private readonly resets = new Map<string, number>();

  /**
   * Objects whose id is in status but not yet in the id annotation. The annotation is what a
   * restore without status (Velero's default) finds the remote resource by; a crash needs
   * neither (the create-pending mark and status.id cover it). So it is written when the
   * queues are idle (recordIds): a bulk apply's objects go Ready first. Each with the time
   * its id reached status.
   */
  private readonly idsToRecord = new Map<string, { id: string; since: number }>();

  /**
   * Writes the pending id annotations until `busy()` says work arrived; returns how many.
   * `olderThanMs`: only those waiting at least that long (an operator that is never idle
   * still writes them, a few at a time).
   */
  async recordIds(busy: () => boolean, opts: { olderThanMs?: number; max?: number } = {}): Promise<number> {
    let written = 0;
    const now = Date.now();
    for (const [key, { id, since }] of [...this.idsToRecord]) {
      if (busy() || written >= (opts.max ?? Infinity)) break;
      if (opts.olderThanMs !== undefined && now - since < opts.olderThanMs) continue;
      const cached = this.opts.get(key);
      if (cached && isPaused(cached)) continue;
      if (
        !cached ||
        cached.metadata.deletionTimestamp ||
        cached.metadata.annotations?.[ID_ANNOTATION] === id
      ) {
        this.idsToRecord.delete(key);
        continue;
      }
      // the cache has not seen the status write yet: next round
      if ((cached.status as Status | undefined)?.id !== id) continue;
      try {
        await this.patchMeta(structuredClone(cached), {
          annotations: { [ID_ANNOTATION]: id, [CREATE_PENDING_ANNOTATION]: null },
        });
        this.idsToRecord.delete(key);
        written++;
      } catch (err) {
        // a newer version in flight (409) or the API server away: next round
        this.opts.log.debug({ object: key, err: (err as Error).message }, 'id annotation not written yet');
        if (!(err instanceof KubeError)) throw err;
      }
    }
    return written;
  }

  forget(key: string): void {
    this.lastSync.delete(key);
    this.resets.set(key, (this.resets.get(key) ?? 0) + 1);
  }

  private remember(key: string, resetsAtStart: number, value: LastSync) {
    if ((this.resets.get(key) ?? 0) === resetsAtStart) this.lastSync.set(key, value);
  }

  /** A write to the remote resource finished: bulk observations that began before it are stale for it. */
  private wrote(obj: KubeObject): void {
    this.lastRemoteWrite.set(`${obj.metadata.namespace}/${obj.metadata.name}`, Date.now());
  }

  /**
   * Remote resources this process deleted for an object whose finalizer is not yet removed:
   * a retry (the finalizer patch met a newer version of the object) does not DELETE again.
   */
  private readonly deletedRemote = new Map<string, string>();

  /** Objects told (by an Event) that the API is unavailable, until they get past it. */
  private readonly unavailableNoted = new Set<string>();

  /** When a new object began waiting for a reference or a Secret, until it says so in status. */
  private readonly waitingSince = new Map<string, number>();

  /** The budget priority of each reconcile in flight, by object. */
  private readonly running = new Map<string, PriorityCell>();

  /**
   * The user changed an object whose reconcile is in flight: its remaining API calls go at
   * urgent priority, so the edit (re-queued behind it) does not wait behind creates.
   */
  escalate(key: string): void {
    const cell = this.running.get(key);
    if (cell && cell.priority !== 'urgent') {
      cell.priority = 'urgent';
      this.opts.api.transport.limiter.reprioritized();
    }
  }

  /** Drops what is kept for an object that is gone. */
  drop(key: string): void {
    this.waitingSince.delete(key);
    this.lastSync.delete(key);
    this.lastRemoteWrite.delete(key);
    this.resets.delete(key);
    this.idsToRecord.delete(key);
    this.deletedRemote.delete(key);
    this.unavailableNoted.delete(key);
  }

  async reconcile(key: string): Promise<Outcome> {
    // a copy: the cache must only change through watch events, or old/new comparisons lie
    const resetsAtStart = this.resets.get(key) ?? 0;
    const cached = this.opts.get(key);
    const obj = cached && structuredClone(cached);
    if (!obj) {
      this.lastSync.delete(key);
      return {};
    }
    if (isPaused(obj)) return this.pause(obj);
    const status = obj.status as Status | undefined;
    if (status?.conditions?.some((c) => c.type === 'Paused')) {
      // resumed: one observation, whatever the last sync knew
      this.lastSync.delete(key);
      this.opts.events.record(
        obj,
        'Normal',
        'ReconcileResumed',
        `${PAUSED_ANNOTATION} removed: reconciling again`,
      );
    }
    const requested = requestedReconcile(obj);
    try {
      // Why this reconcile calls the API decides its place in the budget: a change to a
      // resource that exists (an edit, a delete) before creates, both before observation.
      // A reconcile asked for by annotation is a user's request too.
      const priority: Priority =
        obj.metadata.deletionTimestamp ||
        requested ||
        (status?.id && status.observedGeneration !== obj.metadata.generation)
          ? 'urgent'
          : 'high';
      const cell: PriorityCell = { priority };
      this.running.set(key, cell);
      return await withPriority(cell, () =>
        obj.metadata.deletionTimestamp ? this.finalize(obj) : this.sync(obj, resetsAtStart, requested),
      ).finally(() => this.running.delete(key));
    } catch (err) {
      if (err instanceof ConditionError) {
        // Throttled while only looking (nothing the user changed is pending): the object
        // keeps its Ready state, no condition flaps; it is looked at again after Retry-After.
        const st = obj.status as Status | undefined;
        if (
          err.phase.reason === 'ApiThrottled' &&
          st?.observedGeneration === obj.metadata.generation &&
          st?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        )
          return err.outcome;
        // A new object waiting for a reference or a Secret that is on its way (applied in
        // the same breath) says so only if the wait lasts: most waits end within a second,
        // and each status write is a Kubernetes write.
        if (WAITS.has(err.phase.reason) && !(obj.status as Status | undefined)?.conditions) {
          const since = this.waitingSince.get(key) ?? Date.now();
          this.waitingSince.set(key, since);
          const left = err.quietMs - (Date.now() - since);
          if (left > 0) return { requeueAfterMs: left };
        }
        this.waitingSince.delete(key);
        // an API that stays away is one Event per object, whichever call meets it next (the
        // cache may not show this process's last status write yet: remembered here)
        const repeated = err.phase.reason === 'ApiUnavailable' && this.unavailableNoted.has(key);
        if (err.phase.reason === 'ApiUnavailable') this.unavailableNoted.add(key);
        else this.unavailableNoted.delete(key);
        // a stalled object is tried again when its spec changes or at the next resync, not sooner
        await this.writeStatus(obj, requested ? { lastHandledReconcileAt: requested } : {}, err.phase);
        // a conflict is looked at again shortly: the other object may go
        if (err.phase.state === 'stalled' && err.phase.reason !== 'Conflict')
          this.remember(key, resetsAtStart, {
            at: Date.now(),
            generation: obj.metadata.generation,
            stalled: true,
            status: obj.status,
            resourceVersion: obj.metadata.resourceVersion,
          });
        if ((err.phase.state === 'stalled' || NOTEWORTHY.has(err.phase.reason)) && !repeated)
          this.opts.events.record(
            obj,
            err.phase.state === 'stalled' || err.phase.reason !== 'WaitingForReference'
              ? 'Warning'
              : 'Normal',
            err.phase.reason,
            err.phase.message,
          );
        return err.outcome;
      }
      if (err instanceof KubeError && isConflict(err)) return { retry: true };
      throw err;
    }
  }

  private owner(obj: KubeObject): Owner {
    const m = obj.metadata;
    return {
      cluster: this.opts.clusterId,
      uid: m.uid!,
      object: `${this.binding.kind}/${m.namespace}/${m.name}`,
    };
  }

  /** API errors become conditions: a rejected request stalls, anything else retries. */
  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const raw = err.apiMessage ?? err.message;
      const detail = this.opts.nameIds?.(raw) ?? raw;
      if (isRetryable(err)) {
        const wait = err.retryAfterMs;
        throw new ConditionError(
          {
            state: 'progressing',
            reason: err.status === 429 ? 'ApiThrottled' : 'ApiUnavailable',
            message: `${what}: ${detail}`,
          },
          wait ? { requeueAfterMs: wait } : { retry: true },
        );
      }
      const auth = err.status === 401 || err.status === 403;
      throw new ConditionError(
        { state: 'stalled', reason: auth ? 'ApiUnauthorized' : 'ApiRejected', message: `${what}: ${detail}` },
        auth ? { requeueAfterMs: SLOW_RETRY_MS } : {},
      );
    }
  }

  private resyncDue(key: string): boolean {
    const last = this.lastSync.get(key)?.at;
    return last === undefined || Date.now() - last >= this.opts.resyncMs * 0.8;
  }

  /**
   * observe -> compare -> act. What the object wants (references, Secrets, modules), what
   * the API holds (from the kind's bulk observation when it is fresh for this object,
   * else one GET), then create, recreate, adopt or update, and report.
   */
  private async sync(obj: KubeObject, resetsAtStart: number, requested?: string): Promise<Outcome> {
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    if (observesOnly(obj)) return this.observeOnly(obj, resetsAtStart, requested);
    await this.keepFinalizer(obj);
    if (!requested && this.unchanged(key, obj)) return {};
    // asked for by annotation: read the resource itself, not the kind's last list
    const observer = this.observerFor(key, !!requested);
    const want = await this.wanted(obj);
    const id = await this.knownId(obj, want);
    const seen = id ? await observer.observe(id, want.desired) : undefined;
    const conflict = this.conflictOf(obj, want, id, seen);
    if (conflict)
      throw new ConditionError(
        { state: 'stalled', reason: 'Conflict', message: conflict.message },
        { requeueAfterMs: CONFLICT_RECHECK_MS },
      );
    const remote = await this.act(obj, want, id, seen);
    await this.writeStatus(
      obj,
      {
        id: remote.id,
        uri: remote.uri,
        createdAt: remote.created_at,
        ...(this.binding.statusOf?.(remote, want.desired) ?? {}),
        ...(this.binding.modules?.some((m) => m.secretPaths)
          ? { secretDigests: this.digests(want.modules) }
          : {}),
        lastHandledReconcileAt: requested ?? (obj.status as Status | undefined)?.lastHandledReconcileAt,
      },
      { state: 'ready', reason: 'Synced', message: `${this.binding.kind} ${remote.id} is in sync` },
    );
    if (obj.metadata.annotations?.[ID_ANNOTATION] === remote.id) this.idsToRecord.delete(key);
    else if (this.idsToRecord.get(key)?.id !== remote.id)
      this.idsToRecord.set(key, { id: remote.id, since: Date.now() });
    this.remember(key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      id: remote.id,
      digests: this.digests(want.modules),
      status: obj.status,
      resourceVersion: obj.metadata.resourceVersion,
    });
    this.waitingSince.delete(key);
    this.unavailableNoted.delete(key);
    // the next look comes with the kind's next bulk observation
    return {};
  }

  /**
   * Nothing changed since the last sync (or the API refused this generation), and no
   * newer observation: no work until the spec changes or the kind is observed again. A
   * status someone else wrote (a second installation, a person) is a change: put right at once.
   */
  private unchanged(key: string, obj: KubeObject): boolean {
    const last = this.lastSync.get(key);
    if (!last || last.generation !== obj.metadata.generation) return false;
    // the cache has not caught up with this process's own last write yet: its event follows
    const lagging = olderThan(obj.metadata.resourceVersion, last.resourceVersion);
    if (!lagging && !isDeepStrictEqual(last.status, obj.status)) return false;
    const snapshot = this.opts.observer?.latest;
    if (snapshot && snapshot.completedAt > last.at) {
      // a newer bulk observation: news for this object unless this process wrote the
      // resource after its page (or, for a resource not listed, after the list) began
      const touched = this.lastRemoteWrite.get(key) ?? 0;
      const listed = last.id ? snapshot.items.get(last.id) : undefined;
      return !(listed ? listed.at > touched : snapshot.startedAt > touched);
    }
    // the kind's next observation is on its way: wait for it rather than read one by one
    if (this.opts.observer && !this.opts.observer.failing) return true;
    // no observer, or its lists fail: a GET once the resync is due
    return !this.resyncDue(key);
  }

  /**
   * How this object's remote resource is observed: from the kind's bulk observation when
   * its page was sent after this process last wrote the resource (as good as a GET,
   * and free), else by a GET. A resource missing from the list is confirmed by a GET
   * before it is recreated.
   */
  private observerFor(key: string, fresh = false): RemoteObserver {
    const get: RemoteObserver = {
      observe: async (id, desired) => {
        try {
          return { found: true, remote: await this.binding.api.get(this.opts.api, id, desired) };
        } catch (err) {
          if (isNotFound(err)) return { found: false };
          return this.call(`get ${id}`, () => Promise.reject(err));
        }
      },
    };
    const snapshot = this.opts.observer?.latest;
    if (fresh) return get;
    if (!snapshot) {
      this.opts.log.debug({ object: key }, 'observation: the kind has not been listed yet, reading it');
      return get;
    }
    const touched = this.lastRemoteWrite.get(key) ?? 0;
    return {
      observe: async (id, desired) => {
        const listed = snapshot.items.get(id);
        // listed on a page sent after this process's last write finished: current
        if (listed && listed.at > touched) return { found: true, remote: listed.remote as Remote };
        this.opts.log.debug(
          {
            object: key,
            id,
            listed: !!listed,
            pageAt: listed?.at,
            listStartedAt: snapshot.startedAt,
            touched,
          },
          'observation: not fresh for this object, reading it',
        );
        return get.observe(id, desired);
      },
    };
  }

  private readonly conflictKeys: ConflictKeys;
  private remoteKeys?: { of: object; byKey: Map<string, { id: string; remote: Remote }[]> };

  /** The last bulk list's resources by conflict key, indexed once per list. */
  private remotesByKey(): Map<string, { id: string; remote: Remote }[]> {
    const snapshot = this.opts.observer?.latest;
    if (!snapshot || !this.binding.conflict) return new Map();
    if (this.remoteKeys?.of !== snapshot) {
      const byKey = new Map<string, { id: string; remote: Remote }[]>();
      for (const l of snapshot.items.values()) {
        const remote = l.remote as Remote;
        const k = this.binding.conflict.key(this.binding.observe(remote));
        byKey.set(k, [...(byKey.get(k) ?? []), { id: remote.id, remote }]);
      }
      this.remoteKeys = { of: snapshot, byKey };
    }
    return this.remoteKeys.byKey;
  }

  /** Another object or remote resource that holds what the API keeps unique and this object wants. */
  private conflictOf(obj: KubeObject, want: Wanted, id: string | undefined, seen: Observation | undefined) {
    const c = this.binding.conflict;
    if (!c || !this.opts.list) return undefined;
    const key = c.key(want.desired);
    const objects = this.opts.list();
    const ref = (o: KubeObject) => (kind: string, name: string) => {
      const target = (this.opts.lookup(kind, o.metadata.namespace!, name)?.status as Status | undefined)?.id;
      if (!target) throw new Error(`${kind} ${name} has no id`);
      return target;
    };
    return findConflict({
      binding: this.binding,
      self: obj,
      key,
      holds: seen?.found && c.key(this.binding.observe(seen.remote)) === key ? seen.remote.id : undefined,
      selfId: id,
      others: this.conflictKeys.of(objects, ref),
      live: new Set(objects.map((o) => o.metadata.uid!)),
      remotes: this.remotesByKey().get(key) ?? [],
      clusterId: this.opts.clusterId,
    });
  }

  /**
   * managementPolicy Observe: the resource named by the id annotation is read (from the kind's
   * bulk observation when fresh, else a GET), reported in status, and compared with the spec;
   * nothing is ever written to the account, and the object needs no finalizer.
   */
  private async observeOnly(obj: KubeObject, resetsAtStart: number, requested?: string): Promise<Outcome> {
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    if (!requested && this.unchanged(key, obj)) return {};
    const status = (obj.status ?? {}) as Status;
    const id = obj.metadata.annotations?.[ID_ANNOTATION] ?? status.id;
    if (!id)
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'ObserveWithoutID',
          message: `managementPolicy Observe reads an existing resource: set the ${ID_ANNOTATION} annotation to its id`,
        },
        {},
      );
    const want = await this.wanted(obj);
    const seen = await this.observerFor(key, !!requested).observe(id, want.desired);
    if (!seen.found)
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'NotFound',
          message: `${id} does not exist (managementPolicy Observe creates nothing)`,
        },
        {},
      );
    const marker = decodeMetadata(seen.remote.metadata).owner;
    if (marker && marker.cluster !== this.opts.clusterId)
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'OwnedElsewhere',
          message: `${id} belongs to another installation (cluster ${marker.cluster}); not reading it`,
        },
        {},
      );
    await this.checkOwner(obj, id, marker);
    const drift = this.drift(seen.remote, want);
    const remote = seen.remote;
    const before = status.conditions?.find((c) => c.type === 'Ready')?.message;
    await this.writeStatus(
      obj,
      {
        id: remote.id,
        uri: remote.uri,
        createdAt: remote.created_at,
        ...(this.binding.statusOf?.(remote, want.desired) ?? {}),
        lastHandledReconcileAt: requested ?? status.lastHandledReconcileAt,
      },
      drift.length
        ? {
            state: 'ready',
            reason: 'ObservedWithDrift',
            message: `${remote.id} differs from the spec in ${drift.join(', ')} (managementPolicy Observe: left as it is)`,
          }
        : {
            state: 'ready',
            reason: 'Observed',
            message: `${remote.id} equals the spec (managementPolicy Observe)`,
          },
    );
    // an Event when the drift is new or different, not at every observation
    const after = (obj.status as Status | undefined)?.conditions?.find((c) => c.type === 'Ready')?.message;
    if (drift.length && after !== before)
      this.opts.events.record(
        obj,
        'Normal',
        'DriftObserved',
        `${remote.id} differs from the spec in ${drift.join(', ')}`,
      );
    this.remember(key, resetsAtStart, {
      at: Date.now(),
      generation: obj.metadata.generation,
      id: remote.id,
      status: obj.status,
      resourceVersion: obj.metadata.resourceVersion,
    });
    return {};
  }

  /** The fields (wire names) and modules in which a remote resource differs from what the spec asks. */
  private drift(remote: Remote, want: Wanted): string[] {
    const observed = this.binding.observe(remote);
    const out = Object.keys(want.desired).filter((k) => !isDeepStrictEqual(want.desired[k], observed[k]));
    if (((remote as { description?: string }).description ?? '') !== want.common.description)
      out.push('description');
    if (decodeMetadata(remote.metadata).user !== decodeMetadata(want.common.metadata).user)
      out.push('metadata');
    for (const m of this.binding.modules ?? []) {
      const w = want.modules.get(m.name) ?? null;
      const h = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
      if (
        (!w && h) ||
        (w &&
          (!h || !covers(withoutSecrets(w, m.secretPaths), withoutSecrets(outputToInput(h), m.secretPaths))))
      )
        out.push(m.name);
    }
    return out;
  }

  /**
   * An object that has (or may have) a remote resource keeps the finalizer: removed by hand from
   * a live object, it is put back at once, or the next delete would leave the resource behind.
   * Letting go is `deletionPolicy: Retain` or `edgectl drain`.
   */
  private async keepFinalizer(obj: KubeObject): Promise<void> {
    const ann = obj.metadata.annotations ?? {};
    if (obj.metadata.finalizers?.includes(FINALIZER)) return;
    if (!(obj.status as Status | undefined)?.id && !ann[CREATE_PENDING_ANNOTATION]) return;
    await this.patchMeta(obj, { finalizers: this.withFinalizer(obj) });
    this.opts.events.record(
      obj,
      'Warning',
      'FinalizerRestored',
      `put back ${FINALIZER}, which was removed: without it a delete would leave the remote resource behind (use deletionPolicy: Retain to keep it)`,
    );
  }

  /**
   * Ids written into the spec (`ipPolicyID`, `backendID`: resources made elsewhere) must not be
   * another namespace's resources: a namespace is a tenant.
   */
  private checkRawIds(obj: KubeObject): void {
    if (!this.opts.managedElsewhere) return;
    for (const { path, id } of rawIds(obj.spec ?? {}, 'spec')) {
      if (this.opts.managedElsewhere(id, obj.metadata.namespace!))
        throw new ConditionError(
          {
            state: 'stalled',
            reason: 'ReferenceNotAllowed',
            message: `${path}: ${id} is managed by an object in another namespace; a namespace may reference by id only resources made outside the cluster or shared with it (--shared-namespaces)`,
          },
          {},
        );
    }
  }

  /** What the object asks the API for: references resolved, Secrets read, modules built. */
  private async wanted(obj: KubeObject): Promise<Wanted> {
    this.checkRawIds(obj);
    const spec = (obj.spec ?? {}) as Record<string, unknown> & { description?: string; metadata?: string };
    const ids = new Map<string, string>();
    const references = this.binding.references?.(spec) ?? [];
    const seen = new Map<string, string>();
    for (const r of references) {
      const first = seen.get(`${r.kind}/${r.name}`);
      if (first)
        throw new ConditionError(
          {
            state: 'stalled',
            reason: 'DuplicateReference',
            message: `${r.path} and ${first} both reference ${r.kind} ${r.name}: list each once`,
          },
          {},
        );
      seen.set(`${r.kind}/${r.name}`, r.path);
    }
    for (const r of references) {
      const target = this.opts.lookup(r.kind, obj.metadata.namespace!, r.name);
      const id = (target?.status as Status | undefined)?.id;
      // a referenced object being deleted keeps its remote resource while this one uses it
      // (it waits as InUse), so its id still serves
      if (!id) {
        const cycle = this.cycleThrough(obj, r);
        if (cycle)
          throw new ConditionError(
            {
              state: 'stalled',
              reason: 'ReferenceCycle',
              message: `references form a cycle: ${cycle.join(' -> ')}; break it to continue`,
            },
            {},
          );
        const stalled = (target?.status as Status | undefined)?.conditions?.some(
          (c) => c.type === 'Stalled' && c.status === 'True',
        );
        throw new ConditionError(
          {
            state: 'progressing',
            reason: 'WaitingForReference',
            message: `waiting for ${r.kind} ${r.name} (${r.path}) to have an id`,
          },
          {},
          target && !stalled ? QUIET_WAIT_FOR_PROGRESS_MS : QUIET_WAIT_MS,
        );
      }
      ids.set(`${r.kind}/${r.name}`, id);
    }
    const ref = (kind: string, name: string) => ids.get(`${kind}/${name}`)!;
    const secrets = new Map<string, string>();
    for (const s of this.binding.secrets?.(spec) ?? []) {
      const secret = await this.opts.readSecret(obj.metadata.namespace!, s.name);
      const data = secret?.[s.key];
      if (data === undefined) {
        throw new ConditionError(
          {
            state: 'progressing',
            reason: 'WaitingForSecret',
            message: secret
              ? `Secret ${s.name} has no key ${s.key} (${s.path})`
              : `Secret ${s.name} not found (${s.path})`,
          },
          {},
        );
      }
      secrets.set(`${s.name}/${s.key}`, Buffer.from(data, 'base64').toString('utf8'));
    }
    const secret = (name: string, key: string) => secrets.get(`${name}/${key}`)!;
    const common: Common = {
      description: spec.description ?? '',
      metadata: encodeMetadata(this.owner(obj), spec.metadata ?? ''),
    };
    if (Buffer.byteLength(common.metadata) > METADATA_MAX) {
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'MetadataTooLong',
          message: `spec.metadata with the owner marker exceeds the API's ${METADATA_MAX} bytes`,
        },
        {},
      );
    }
    return {
      desired: this.binding.desired(spec, ref),
      modules: new Map((this.binding.modules ?? []).map((m) => [m.name, m.desired(spec, ref, secret)])),
      common,
    };
  }

  /** The remote id this object has: recorded, named for adoption, or found after a crash mid-create. */
  private async knownId(obj: KubeObject, want: Wanted): Promise<string | undefined> {
    const ann = obj.metadata.annotations ?? {};
    const id = (obj.status as Status | undefined)?.id ?? ann[ID_ANNOTATION];
    if (id || !ann[CREATE_PENDING_ANNOTATION]) return id;
    // A create may have happened before a crash: find it by its owner marker.
    const found = await this.findOwned(obj, want.desired);
    if (found)
      this.opts.events.record(
        obj,
        'Normal',
        'Recovered',
        `found ${found.id}, created before a restart; adopting it`,
      );
    return found?.id;
  }

  /** Creates, recreates, adopts or updates; returns the remote resource as it now is. */
  private async act(
    obj: KubeObject,
    want: Wanted,
    id: string | undefined,
    seen: Observation | undefined,
  ): Promise<Remote> {
    const status = (obj.status ?? {}) as Status;
    const ann = obj.metadata.annotations ?? {};
    if (!id) {
      await this.patchMeta(obj, {
        finalizers: this.withFinalizer(obj),
        annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString() },
      });
      const remote = await this.create(obj, want);
      this.opts.events.record(obj, 'Normal', 'Created', `created ${remote.id}`);
      return remote;
    }
    if (!obj.metadata.finalizers?.includes(FINALIZER))
      await this.patchMeta(obj, { finalizers: this.withFinalizer(obj) });
    if (!seen?.found) {
      if (status.id !== id)
        throw new ConditionError(
          { state: 'stalled', reason: 'AdoptionFailed', message: `${ID_ANNOTATION}: ${id} does not exist` },
          {},
        );
      // Deleted behind our back: put it back.
      await this.patchMeta(obj, {
        annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString(), [ID_ANNOTATION]: null },
      });
      const remote = await this.create(obj, want);
      this.opts.events.record(
        obj,
        'Warning',
        'Recreated',
        `${id} was deleted outside the cluster; created ${remote.id}`,
      );
      return remote;
    }
    const marker = decodeMetadata(seen.remote.metadata).owner;
    if (marker && marker.cluster !== this.opts.clusterId) {
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'OwnedElsewhere',
          message: `${seen.remote.id} belongs to another installation (cluster ${marker.cluster}); not taking it over`,
        },
        {},
      );
    }
    await this.checkOwner(obj, seen.remote.id, marker);
    const adopting = status.id !== seen.remote.id;
    const remote = await this.syncModules(
      obj,
      await this.update(obj, seen.remote, want.desired, want.common),
      want.desired,
      want.modules,
    );
    if (adopting) {
      if (ann[ID_ANNOTATION] !== remote.id || ann[CREATE_PENDING_ANNOTATION]) {
        await this.patchMeta(obj, {
          annotations: { [ID_ANNOTATION]: remote.id, [CREATE_PENDING_ANNOTATION]: null },
        });
      }
      if (!ann[CREATE_PENDING_ANNOTATION])
        this.opts.events.record(obj, 'Normal', 'Adopted', `adopted existing ${remote.id}`);
    }
    return remote;
  }

  /**
   * Ownership is per object: a resource whose owner marker names another object that still
   * exists (in any namespace) is never adopted, updated or deleted by this one. It may be taken
   * when it has no marker, its owner is gone, or its owner is this object (a restore: the same
   * kind, namespace and name under a new uid).
   */
  private async checkOwner(obj: KubeObject, id: string, marker: Owner | undefined): Promise<void> {
    if (!marker || marker.uid === obj.metadata.uid || marker.object === this.owner(obj).object) return;
    const state = (await this.opts.ownerState?.(marker.object, marker.uid)) ?? 'unknown';
    if (state === 'gone') return;
    const [kind, ns, name] = marker.object.split('/');
    // another namespace's object names are not this tenant's to read
    const who = ns === obj.metadata.namespace ? `${kind} ${name}` : 'an object in another namespace';
    throw new ConditionError(
      {
        state: 'stalled',
        reason: 'OwnedElsewhere',
        message: `${id} is managed by ${who}; not taking it over`,
      },
      {},
    );
  }

  /**
   * One API create with the modules inline. The id goes to status with the Ready condition
   * (one write); the create-pending mark stays until the id annotation replaces it.
   */
  private async create(obj: KubeObject, want: Wanted): Promise<Remote> {
    const remote = await this.call(`create ${this.binding.kind}`, () =>
      this.binding.api.create(this.opts.api, {
        ...want.desired,
        ...want.common,
        ...this.inline(want.modules),
      }),
    );
    this.wrote(obj);
    return remote;
  }

  /** Puts right whatever differs and can be changed in place; stalls on what cannot. */
  private async update(
    obj: KubeObject,
    remote: Record<string, unknown> & { id: string; metadata?: string; description?: string },
    desired: Record<string, unknown>,
    common: Common,
  ) {
    const observed = this.binding.observe(remote);
    const changed = Object.keys(desired).filter((k) => !isDeepStrictEqual(desired[k], observed[k]));
    const fixed = changed.filter((k) => !(this.binding.updatable as string[]).includes(k));
    if (fixed.length) {
      throw new ConditionError(
        {
          state: 'stalled',
          reason: 'ImmutableFieldDiffers',
          message: `${fixed.join(', ')} of ${remote.id} differ from the spec and cannot be changed in place: delete and recreate this object`,
        },
        {},
      );
    }
    const patch: Record<string, unknown> = Object.fromEntries(changed.map((k) => [k, desired[k]]));
    if ((remote.description ?? '') !== common.description) patch.description = common.description;
    // An adopted resource without an owner marker gets one with its first write, not a write
    // of its own: adopting what already equals the spec costs no API call (edgectl export).
    const held = decodeMetadata(remote.metadata);
    const metadataDiffers = held.owner
      ? remote.metadata !== common.metadata
      : held.user !== decodeMetadata(common.metadata).user;
    if (metadataDiffers || (Object.keys(patch).length > 0 && remote.metadata !== common.metadata))
      patch.metadata = common.metadata;
    if (Object.keys(patch).length === 0) return remote;
    const updated = await this.call(`update ${remote.id}`, () =>
      this.binding.api.update(this.opts.api, remote.id, patch, desired),
    );
    this.wrote(obj);
    const drift = (obj.status as Status | undefined)?.observedGeneration === obj.metadata.generation;
    this.opts.events.record(
      obj,
      'Normal',
      drift ? 'DriftCorrected' : 'Updated',
      `${drift ? 'put back out-of-band change to' : 'updated'} ${Object.keys(patch).join(', ')} of ${remote.id}`,
    );
    return updated;
  }

  private inline(modules: Map<string, Record<string, unknown> | null>): Record<string, unknown> {
    return Object.fromEntries([...modules].filter(([, v]) => v !== null));
  }

  private digests(modules: Map<string, Record<string, unknown> | null>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const m of this.binding.modules ?? []) {
      const body = modules.get(m.name);
      const d = body ? secretDigest(body, m.secretPaths, this.opts.digestKey) : undefined;
      if (d) out[m.name] = d;
    }
    return out;
  }

  /** PUTs the modules that differ, DELETEs the ones the spec dropped; returns the resource as it now is. */
  private async syncModules(
    obj: KubeObject,
    remote: Remote,
    desired: Record<string, unknown>,
    modules: Map<string, Record<string, unknown> | null>,
  ): Promise<Remote> {
    const now: Remote = { ...remote };
    const status = (obj.status ?? {}) as Status & { secretDigests?: Record<string, string> };
    const applied =
      this.lastSync.get(`${obj.metadata.namespace}/${obj.metadata.name}`)?.digests ?? status.secretDigests;
    const changed: string[] = [];
    for (const m of this.binding.modules ?? []) {
      const want = modules.get(m.name) ?? null;
      const have = (remote[m.name] as Record<string, unknown> | null | undefined) ?? null;
      if (!want) {
        if (have) {
          await this.call(`delete module ${m.name} of ${remote.id}`, () =>
            m.delete(this.opts.api, remote.id, desired),
          );
          now[m.name] = null;
          changed.push(`-${m.name}`);
        }
        continue;
      }
      const digest = secretDigest(want, m.secretPaths, this.opts.digestKey);
      const was = applied?.[m.name];
      // A digest from before the operator had a key of its own (keyed by the object's uid)
      // still proves the applied value: the status is rewritten with the new digest, the
      // module is not PUT again.
      // With no digest yet (an adoption), the API's own copy of the secrets decides: it
      // returns them, so adopting a module whose secrets already match is no write.
      const sameSecrets =
        digest === was ||
        (was !== undefined &&
          isLegacyDigest(was) &&
          was === legacySecretDigest(want, m.secretPaths, obj.metadata.uid)) ||
        (was === undefined &&
          have !== null &&
          digest === secretDigest(outputToInput(have), m.secretPaths, this.opts.digestKey));
      const same =
        have &&
        covers(withoutSecrets(want, m.secretPaths), withoutSecrets(outputToInput(have), m.secretPaths)) &&
        sameSecrets;
      if (!same) {
        const put = await this.call(`put module ${m.name} of ${remote.id}`, () =>
          m.put(this.opts.api, remote.id, want, desired),
        );
        if (put && typeof put === 'object') now[m.name] = put;
        changed.push(m.name);
      }
    }
    if (changed.length) this.wrote(obj);
    if (changed.length)
      this.opts.events.record(
        obj,
        'Normal',
        'ModulesUpdated',
        `applied modules of ${remote.id}: ${changed.join(', ')}`,
      );
    return now;
  }

  /**
   * A path of references from the referenced object back to `obj`, or undefined. Only
   * asked while waiting for a reference, so a cycle stalls with its members named instead
   * of waiting forever.
   */
  private cycleThrough(obj: KubeObject, first: { kind: string; name: string }): string[] | undefined {
    const ns = obj.metadata.namespace!;
    const self = `${this.binding.kind}/${obj.metadata.name}`;
    const visited = new Set<string>();
    const walk = (node: { kind: string; name: string }, path: string[]): string[] | undefined => {
      const id = `${node.kind}/${node.name}`;
      if (id === self) return [...path, `${node.kind} ${node.name}`];
      if (visited.has(id)) return undefined;
      visited.add(id);
      const target = this.opts.lookup(node.kind, ns, node.name);
      if (!target) return undefined;
      for (const next of this.opts.referencesOf?.(node.kind, target.spec ?? {}) ?? []) {
        const found = walk(next, [...path, `${node.kind} ${node.name}`]);
        if (found) return found;
      }
      return undefined;
    };
    return walk(first, [`${this.binding.kind} ${obj.metadata.name}`]);
  }

  /**
   * The remote resource this object created, by its owner marker: by uid after a crash; by
   * kind/namespace/name too when the object was restored from a backup without status (a new
   * uid, and the create-pending mark older than the object itself). An object whose mark this
   * process wrote never takes a resource of an earlier object of the same name (Retain).
   */
  private async findOwned(obj: KubeObject, desired: Record<string, unknown>) {
    const mark = Date.parse(obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION] ?? '');
    const restored = mark < Date.parse(obj.metadata.creationTimestamp ?? '');
    const { object } = this.owner(obj);
    return this.call(`list ${this.binding.kind} (recovery)`, async () => {
      let byName: { id: string } | undefined;
      for await (const r of this.binding.api.list(this.opts.api, desired)) {
        const o = decodeMetadata((r as { metadata?: string }).metadata).owner;
        if (!o || o.cluster !== this.opts.clusterId) continue;
        if (o.uid === obj.metadata.uid) return r as { id: string };
        if (restored && o.object === object) byName ??= r as { id: string };
      }
      return byName;
    });
  }

  /**
   * Paused: no API call and no Kubernetes write, deletes included (the finalizer waits), but
   * for the one status write and Event that say so.
   */
  private async pause(obj: KubeObject): Promise<Outcome> {
    const st = (obj.status ?? {}) as Status;
    if (st.conditions?.some((c) => c.type === 'Paused' && c.status === 'True')) return {};
    const message = `${PAUSED_ANNOTATION} is "true": no API calls and no writes${obj.metadata.deletionTimestamp ? ', and the delete waits,' : ''} until it is removed`;
    const paused: Condition = {
      type: 'Paused',
      status: 'True',
      reason: 'ReconcilePaused',
      message,
      observedGeneration: obj.metadata.generation,
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    const updated = await this.opts.kube.patch(
      this.resource,
      obj.metadata.namespace,
      obj.metadata.name,
      { status: { conditions: [...(st.conditions ?? []).filter((c) => c.type !== 'Paused'), paused] } },
      'merge',
      'status',
    );
    obj.status = updated.status;
    this.opts.events.record(obj, 'Normal', 'ReconcilePaused', message);
    return {};
  }

  private async finalize(obj: KubeObject): Promise<Outcome> {
    if (!obj.metadata.finalizers?.includes(FINALIZER)) return {};
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    const status = (obj.status ?? {}) as Status;
    const spec = (obj.spec ?? {}) as { deletionPolicy?: string };
    let id = status.id;
    if (!id && obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION]) {
      // A create may have landed without its id being recorded: it must not be orphaned.
      id = (await this.findOwned(obj, {}))?.id;
    }
    if (id && observesOnly(obj)) {
      this.opts.events.record(obj, 'Normal', 'Retained', `left ${id} in place (managementPolicy: Observe)`);
    } else if (id && spec.deletionPolicy === 'Retain') {
      this.opts.events.record(obj, 'Normal', 'Retained', `left ${id} in place (deletionPolicy: Retain)`);
    } else if (id) {
      // The API does not refuse every such delete (route modules, backends): deleting what
      // other objects still use would silently open or break their traffic. The manager
      // requeues this object when a referrer goes away or stops referencing it.
      const referrers =
        this.opts.referrersOf?.(this.binding.kind, obj.metadata.namespace!, obj.metadata.name) ?? [];
      if (referrers.length && obj.metadata.annotations?.[FORCE_DELETE_ANNOTATION] !== 'true') {
        const names =
          referrers.slice(0, 10).join(', ') +
          (referrers.length > 10 ? `, and ${referrers.length - 10} more` : '');
        const message = `${id} is still referenced by ${names}: delete them or remove their references first (or annotate ${FORCE_DELETE_ANNOTATION}=true)`;
        this.opts.events.record(obj, 'Warning', 'InUse', message);
        throw new ConditionError({ state: 'progressing', reason: 'InUse', message }, {});
      }
      const target = id;
      try {
        if (this.deletedRemote.get(key) !== target) {
          await this.binding.api.delete(this.opts.api, target, status);
          this.deletedRemote.set(key, target);
          this.opts.events.record(obj, 'Normal', 'Deleted', `deleted ${target}`);
        }
      } catch (err) {
        if (!isNotFound(err)) {
          // Deletes are retried whatever the API said: a dependent may still be going away.
          const raw = err instanceof ApiError ? (err.apiMessage ?? err.message) : (err as Error).message;
          const msg = this.opts.nameIds?.(raw) ?? raw;
          throw new ConditionError(
            { state: 'progressing', reason: 'DeleteFailed', message: `delete ${target}: ${msg}` },
            { retry: true },
          );
        }
      }
    }
    await this.patchMeta(obj, { finalizers: (obj.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) });
    this.lastSync.delete(key);
    return {};
  }

  private withFinalizer(obj: KubeObject): string[] {
    const f = obj.metadata.finalizers ?? [];
    return f.includes(FINALIZER) ? f : [...f, FINALIZER];
  }

  /** A metadata merge patch guarded by resourceVersion, so a stale cache cannot clobber. */
  private async patchMeta(
    obj: KubeObject,
    meta: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ) {
    const updated = await this.opts.kube.patch(this.resource, obj.metadata.namespace, obj.metadata.name, {
      metadata: { resourceVersion: obj.metadata.resourceVersion, ...meta },
    });
    obj.metadata = updated.metadata;
  }

  /**
   * In sync, the status is what the kind reports now: a key it no longer reports (a
   * route's SAML URLs after SAML is removed) goes. Otherwise (waiting, stalled) only the
   * conditions change: what was last known of the remote resource stays.
   */
  private async writeStatus(obj: KubeObject, fields: Record<string, unknown>, phase: Phase): Promise<void> {
    const old = (obj.status ?? {}) as Status;
    const gen = obj.metadata.generation;
    const next: Status = {
      // the tunnels loop's field stays whatever the reconcile found
      ...(phase.state === 'ready' ? { tunnelsOnline: old.tunnelsOnline } : old),
      ...fields,
      observedGeneration: gen,
      conditions: conditionsFor(phase, gen, old.conditions),
    };
    // what the status should be, whole: keys that go become null at any depth
    const patch = mergePatch(old as Record<string, unknown>, next as Record<string, unknown>);
    if (Object.keys(patch).length === 0) return;
    this.opts.log.info(
      {
        controller: this.name,
        object: `${obj.metadata.namespace}/${obj.metadata.name}`,
        id: next.id,
        state: phase.state,
        reason: phase.reason,
        message: phase.message,
      },
      'reconciled',
    );
    // conditions are a list: a merge patch replaces it whole, so conditions that no longer apply go
    const updated = await this.opts.kube.patch(
      this.resource,
      obj.metadata.namespace,
      obj.metadata.name,
      { status: patch },
      'merge',
      'status',
    );
    obj.status = updated.status;
    obj.metadata = updated.metadata;
  }
}
