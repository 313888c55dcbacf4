// The managed-resource engine: one reconciler for every kind. A binding says what differs
// between kinds; everything here is the same for all of them.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { EdgeClient } from '../../api/client.ts';
import { ApiError, isNotFound, isRetryable } from '../../api/errors.ts';
import type { AnyBinding, Common } from '../kinds/binding.ts';
import { CREATE_PENDING_ANNOTATION, FINALIZER, GROUP, ID_ANNOTATION, VERSION } from '../kinds/crd-schema.ts';
import { type Condition, conditionsFor, findCondition, type Phase } from './conditions.ts';
import type { EventRecorder } from './events.ts';
import { isConflict, type Kube, KubeError, type KubeObject, type ResourcePath } from './kube.ts';
import { decodeMetadata, encodeMetadata, type Owner } from './owner.ts';

export interface EngineOptions {
  binding: AnyBinding;
  kube: Kube;
  api: EdgeClient;
  events: EventRecorder;
  log: Logger;
  clusterId: string;
  resyncMs: number;
  /** Reads any managed object from the informer caches. */
  lookup(kind: string, namespace: string, name: string): KubeObject | undefined;
  /** Reads the own kind's object for a queue key. */
  get(key: string): KubeObject | undefined;
}

export interface Outcome {
  /** Reconcile again after this long (the resync, or a slow retry). */
  requeueAfterMs?: number;
  /** Retry with the queue's backoff. */
  retry?: boolean;
}

const METADATA_MAX = 4096;
const SLOW_RETRY_MS = 5 * 60_000;
const jitter = (ms: number) => Math.round(ms * (0.85 + Math.random() * 0.3));

type Status = Record<string, unknown> & {
  id?: string;
  conditions?: Condition[];
  observedGeneration?: number;
};

/** A failure the engine turns into a condition, with or without a retry. */
class Stop extends Error {
  readonly phase: Phase;
  readonly outcome: Outcome;
  constructor(phase: Phase, outcome: Outcome) {
    super(phase.message);
    this.phase = phase;
    this.outcome = outcome;
  }
}

export class Engine {
  readonly b: AnyBinding;
  readonly resource: ResourcePath;
  private readonly o: EngineOptions;
  private readonly lastSync = new Map<string, number>();

  constructor(o: EngineOptions) {
    this.o = o;
    this.b = o.binding;
    this.resource = { group: GROUP, version: VERSION, plural: o.binding.plural };
  }

  get name(): string {
    return this.b.kind.toLowerCase();
  }

  forget(key: string): void {
    this.lastSync.delete(key);
  }

  async reconcile(key: string): Promise<Outcome> {
    const obj = this.o.get(key);
    if (!obj) {
      this.lastSync.delete(key);
      return {};
    }
    try {
      return obj.metadata.deletionTimestamp ? await this.finalize(obj) : await this.sync(obj);
    } catch (err) {
      if (err instanceof Stop) {
        // a stalled object is tried again when its spec changes or at the next resync, not sooner
        if (err.phase.state === 'stalled') this.lastSync.set(key, Date.now());
        await this.writeStatus(obj, {}, err.phase);
        if (err.phase.state === 'stalled')
          this.o.events.record(obj, 'Warning', err.phase.reason, err.phase.message);
        return err.outcome;
      }
      if (err instanceof KubeError && isConflict(err)) return { retry: true };
      throw err;
    }
  }

  private owner(obj: KubeObject): Owner {
    const m = obj.metadata;
    return { cluster: this.o.clusterId, uid: m.uid!, object: `${this.b.kind}/${m.namespace}/${m.name}` };
  }

  /** API errors become conditions: a rejected request stalls, anything else retries. */
  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const detail = err.apiMessage ?? err.message;
      if (isRetryable(err)) {
        const wait = err.retryAfterMs;
        throw new Stop(
          {
            state: 'progressing',
            reason: err.status === 429 ? 'ApiThrottled' : 'ApiUnavailable',
            message: `${what}: ${detail}`,
          },
          wait ? { requeueAfterMs: wait } : { retry: true },
        );
      }
      const auth = err.status === 401 || err.status === 403;
      throw new Stop(
        { state: 'stalled', reason: auth ? 'ApiUnauthorized' : 'ApiRejected', message: `${what}: ${detail}` },
        auth ? { requeueAfterMs: SLOW_RETRY_MS } : {},
      );
    }
  }

  private due(key: string): boolean {
    const last = this.lastSync.get(key);
    return last === undefined || Date.now() - last >= this.o.resyncMs * 0.8;
  }

  private async sync(obj: KubeObject): Promise<Outcome> {
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    const gen = obj.metadata.generation;
    const status = (obj.status ?? {}) as Status;
    const ann = obj.metadata.annotations ?? {};
    const spec = (obj.spec ?? {}) as Record<string, unknown> & { description?: string; metadata?: string };

    // Nothing changed since the last good sync: no API call until the resync is due.
    const ready = findCondition(status.conditions, 'Ready');
    if (status.id && status.observedGeneration === gen && ready?.status === 'True' && !this.due(key)) {
      return {
        requeueAfterMs: Math.max(1000, this.o.resyncMs - (Date.now() - (this.lastSync.get(key) ?? 0))),
      };
    }
    // The API refused this generation: retrying will not help until the spec changes.
    const stalled = findCondition(status.conditions, 'Stalled');
    if (
      stalled?.status === 'True' &&
      stalled.reason === 'ApiRejected' &&
      stalled.observedGeneration === gen &&
      !this.due(key)
    ) {
      return {};
    }

    const ids = new Map<string, string>();
    for (const r of this.b.references?.(spec) ?? []) {
      const target = this.o.lookup(r.kind, obj.metadata.namespace!, r.name);
      const id = (target?.status as Status | undefined)?.id;
      if (!id || target?.metadata.deletionTimestamp) {
        throw new Stop(
          {
            state: 'progressing',
            reason: 'WaitingForReference',
            message: `waiting for ${r.kind} ${r.name} (${r.path}) to have an id`,
          },
          {},
        );
      }
      ids.set(`${r.kind}/${r.name}`, id);
    }
    const desired = this.b.desired(spec, (kind: string, name: string) => ids.get(`${kind}/${name}`)!);
    const common: Common = {
      description: spec.description ?? '',
      metadata: encodeMetadata(this.owner(obj), spec.metadata ?? ''),
    };
    if (Buffer.byteLength(common.metadata) > METADATA_MAX) {
      throw new Stop(
        {
          state: 'stalled',
          reason: 'MetadataTooLong',
          message: `spec.metadata with the owner marker exceeds the API's ${METADATA_MAX} bytes`,
        },
        {},
      );
    }

    let id = status.id ?? ann[ID_ANNOTATION];
    let remote: Record<string, unknown> & { id: string; metadata?: string };
    let created = false;

    if (!id && ann[CREATE_PENDING_ANNOTATION]) {
      // A create may have happened before a crash: find it by its owner marker.
      const found = await this.findOwned(obj, desired);
      if (found) {
        id = found.id;
        this.o.events.record(
          obj,
          'Normal',
          'Recovered',
          `found ${found.id}, created before a restart; adopting it`,
        );
      }
    }

    if (!id) {
      await this.patchMeta(obj, {
        finalizers: this.withFinalizer(obj),
        annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString() },
      });
      remote = await this.call(`create ${this.b.kind}`, () =>
        this.b.api.create(this.o.api, { ...desired, ...common }),
      );
      created = true;
      await this.patchMeta(obj, {
        annotations: { [ID_ANNOTATION]: remote.id, [CREATE_PENDING_ANNOTATION]: null },
      });
      this.o.events.record(obj, 'Normal', 'Created', `created ${remote.id}`);
    } else {
      if (!obj.metadata.finalizers?.includes(FINALIZER))
        await this.patchMeta(obj, { finalizers: this.withFinalizer(obj) });
      const currentId = id;
      try {
        remote = await this.b.api.get(this.o.api, currentId, desired);
      } catch (err) {
        if (!isNotFound(err)) return this.call(`get ${currentId}`, () => Promise.reject(err));
        if (status.id !== currentId) {
          throw new Stop(
            {
              state: 'stalled',
              reason: 'AdoptionFailed',
              message: `${ID_ANNOTATION}: ${currentId} does not exist`,
            },
            {},
          );
        }
        // Deleted behind our back: put it back.
        await this.patchMeta(obj, {
          annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString(), [ID_ANNOTATION]: null },
        });
        remote = await this.call(`create ${this.b.kind}`, () =>
          this.b.api.create(this.o.api, { ...desired, ...common }),
        );
        created = true;
        await this.patchMeta(obj, {
          annotations: { [ID_ANNOTATION]: remote.id, [CREATE_PENDING_ANNOTATION]: null },
        });
        this.o.events.record(
          obj,
          'Warning',
          'Recreated',
          `${currentId} was deleted outside the cluster; created ${remote.id}`,
        );
      }
      if (!created) {
        const marker = decodeMetadata(remote.metadata).owner;
        if (marker && marker.cluster !== this.o.clusterId) {
          throw new Stop(
            {
              state: 'stalled',
              reason: 'OwnedElsewhere',
              message: `${remote.id} belongs to another installation (cluster ${marker.cluster}); not taking it over`,
            },
            {},
          );
        }
        const adopting = status.id !== remote.id;
        remote = await this.update(obj, remote, desired, common);
        if (adopting) {
          if (ann[ID_ANNOTATION] !== remote.id || ann[CREATE_PENDING_ANNOTATION]) {
            await this.patchMeta(obj, {
              annotations: { [ID_ANNOTATION]: remote.id, [CREATE_PENDING_ANNOTATION]: null },
            });
          }
          if (!ann[CREATE_PENDING_ANNOTATION])
            this.o.events.record(obj, 'Normal', 'Adopted', `adopted existing ${remote.id}`);
        }
      }
    }

    await this.writeStatus(
      obj,
      {
        id: remote.id,
        uri: remote.uri,
        createdAt: remote.created_at,
        ...(this.b.statusOf?.(remote, desired) ?? {}),
      },
      { state: 'ready', reason: 'Synced', message: `${this.b.kind} ${remote.id} is in sync` },
    );
    this.lastSync.set(key, Date.now());
    return { requeueAfterMs: jitter(this.o.resyncMs) };
  }

  /** Puts right whatever differs and can be changed in place; stalls on what cannot. */
  private async update(
    obj: KubeObject,
    remote: Record<string, unknown> & { id: string; metadata?: string; description?: string },
    desired: Record<string, unknown>,
    common: Common,
  ) {
    const observed = this.b.observe(remote);
    const changed = Object.keys(desired).filter((k) => !isDeepStrictEqual(desired[k], observed[k]));
    const fixed = changed.filter((k) => !(this.b.updatable as string[]).includes(k));
    if (fixed.length) {
      throw new Stop(
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
    if (remote.metadata !== common.metadata) patch.metadata = common.metadata;
    if (Object.keys(patch).length === 0) return remote;
    const updated = await this.call(`update ${remote.id}`, () =>
      this.b.api.update(this.o.api, remote.id, patch, desired),
    );
    const drift = (obj.status as Status | undefined)?.observedGeneration === obj.metadata.generation;
    this.o.events.record(
      obj,
      'Normal',
      drift ? 'DriftCorrected' : 'Updated',
      `${drift ? 'put back out-of-band change to' : 'updated'} ${Object.keys(patch).join(', ')} of ${remote.id}`,
    );
    return updated;
  }

  private async findOwned(obj: KubeObject, desired: Record<string, unknown>) {
    return this.call(`list ${this.b.kind} (recovery)`, async () => {
      for await (const r of this.b.api.list(this.o.api, desired)) {
        const o = decodeMetadata((r as { metadata?: string }).metadata).owner;
        if (o && o.cluster === this.o.clusterId && o.uid === obj.metadata.uid) return r as { id: string };
      }
      return undefined;
    });
  }

  private async finalize(obj: KubeObject): Promise<Outcome> {
    if (!obj.metadata.finalizers?.includes(FINALIZER)) return {};
    const status = (obj.status ?? {}) as Status;
    const spec = (obj.spec ?? {}) as { deletionPolicy?: string };
    let id = status.id;
    if (!id && obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION]) {
      // A create may have landed without its id being recorded: it must not be orphaned.
      id = (await this.findOwned(obj, {}))?.id;
    }
    if (id && spec.deletionPolicy === 'Retain') {
      this.o.events.record(obj, 'Normal', 'Retained', `left ${id} in place (deletionPolicy: Retain)`);
    } else if (id) {
      const target = id;
      try {
        await this.b.api.delete(this.o.api, target, status);
        this.o.events.record(obj, 'Normal', 'Deleted', `deleted ${target}`);
      } catch (err) {
        if (!isNotFound(err)) {
          // Deletes are retried whatever the API said: a dependent may still be going away.
          const msg = err instanceof ApiError ? (err.apiMessage ?? err.message) : (err as Error).message;
          throw new Stop(
            { state: 'progressing', reason: 'DeleteFailed', message: `delete ${target}: ${msg}` },
            { retry: true },
          );
        }
      }
    }
    await this.patchMeta(obj, { finalizers: (obj.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) });
    this.lastSync.delete(`${obj.metadata.namespace}/${obj.metadata.name}`);
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
    const updated = await this.o.kube.patch(this.resource, obj.metadata.namespace, obj.metadata.name, {
      metadata: { resourceVersion: obj.metadata.resourceVersion, ...meta },
    });
    obj.metadata = updated.metadata;
  }

  private async writeStatus(obj: KubeObject, fields: Record<string, unknown>, phase: Phase): Promise<void> {
    const old = (obj.status ?? {}) as Status;
    const gen = obj.metadata.generation;
    const next: Status = {
      ...old,
      ...fields,
      observedGeneration: gen,
      conditions: conditionsFor(phase, gen, old.conditions),
    };
    if (isDeepStrictEqual(next, old)) return;
    this.o.log.info(
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
    // Status is replaced whole (merge patch of /status): conditions that no longer apply go away.
    const updated = await this.o.kube.patch(
      this.resource,
      obj.metadata.namespace,
      obj.metadata.name,
      { status: { ...next, conditions: next.conditions } },
      'merge',
      'status',
    );
    obj.status = updated.status;
    obj.metadata = updated.metadata;
  }
}
