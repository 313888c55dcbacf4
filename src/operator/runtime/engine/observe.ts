// What the API holds for an object: from the kind's bulk observation when it is fresh for
// the object, else a GET; whether anything changed since the last sync; conflicts with
// other objects; the resource a create before a crash left behind.
import { isDeepStrictEqual } from 'node:util';
import { isNotFound } from '../../../api/errors.ts';
import { ConflictKeys, findConflict } from '../conflicts.ts';
import { CREATE_PENDING_ANNOTATION } from '../constants.ts';
import type { KubeObject } from '../kube.ts';
import { decodeMetadata } from '../owner.ts';
import { apiCall } from './condition-error.ts';
import { ownerOf } from './plan.ts';
import type { EngineContext, Observation, Remote, RemoteObserver, Status, Wanted } from './types.ts';

/**
 * resourceVersion a is older than b. Kubernetes calls them opaque, but every API server
 * backed by etcd hands out increasing integers; anything else is never called older.
 */
export function olderThan(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

/** API errors of a call, named with the objects behind the ids. */
export const call = <T>(ctx: EngineContext, what: string, fn: () => Promise<T>): Promise<T> =>
  apiCall(what, fn, ctx.opts.cache.nameIds?.bind(ctx.opts.cache));

function resyncDue(ctx: EngineContext, key: string): boolean {
  const last = ctx.memos.peek(key)?.last?.at;
  return last === undefined || Date.now() - last >= ctx.opts.resyncMs * 0.8;
}

/**
 * Nothing changed since the last sync (or the API refused this generation), and no
 * newer observation: no work until the spec changes or the kind is observed again. A
 * status someone else wrote (a second installation, a person) is a change: put right at once.
 */
export function unchanged(ctx: EngineContext, key: string, obj: KubeObject): boolean {
  const memo = ctx.memos.peek(key);
  const last = memo?.last;
  if (!last || last.generation !== obj.metadata.generation) return false;
  // the cache has not caught up with this process's own last write yet: its event follows
  const lagging = olderThan(obj.metadata.resourceVersion, last.resourceVersion);
  if (!lagging && !isDeepStrictEqual(last.status, obj.status)) return false;
  const observer = ctx.opts.observer;
  const snapshot = observer?.latest;
  if (snapshot && snapshot.completedAt > last.at) {
    // a newer bulk observation: news for this object unless this process wrote the
    // resource after its page (or, for a resource not listed, after the list) began
    const touched = memo?.lastRemoteWrite ?? 0;
    const listed = last.id ? snapshot.items.get(last.id) : undefined;
    return !(listed ? listed.at > touched : snapshot.startedAt > touched);
  }
  // the kind's next observation is on its way: wait for it rather than read one by one
  if (observer && !observer.failing) return true;
  // no observer, or its lists fail: a GET once the resync is due
  return !resyncDue(ctx, key);
}

function getObserver(ctx: EngineContext): RemoteObserver {
  return {
    observe: async (id, desired) => {
      try {
        return { found: true, remote: await ctx.binding.api.get(ctx.opts.api, id, desired) };
      } catch (err) {
        if (isNotFound(err)) return { found: false };
        return call(ctx, `get ${id}`, () => Promise.reject(err));
      }
    },
  };
}

/**
 * How this object's remote resource is observed: from the kind's bulk observation when
 * its page was sent after this process last wrote the resource (as good as a GET,
 * and free), else by a GET. A resource missing from the list is confirmed by a GET
 * before it is recreated.
 */
export function observerFor(ctx: EngineContext, key: string, fresh = false): RemoteObserver {
  const get = getObserver(ctx);
  const snapshot = ctx.opts.observer?.latest;
  if (fresh) return get;
  if (!snapshot) {
    ctx.opts.log.debug({ object: key }, 'observation: the kind has not been listed yet, reading it');
    return get;
  }
  const touched = ctx.memos.peek(key)?.lastRemoteWrite ?? 0;
  return {
    observe: async (id, desired) => {
      const listed = snapshot.items.get(id);
      // listed on a page sent after this process's last write finished: current
      if (listed && listed.at > touched) return { found: true, remote: listed.remote as Remote };
      ctx.opts.log.debug(
        { object: key, id, listed: !!listed, pageAt: listed?.at, listStartedAt: snapshot.startedAt, touched },
        'observation: not fresh for this object, reading it',
      );
      return get.observe(id, desired);
    },
  };
}

/**
 * Conflicts of a kind's objects: between them, and with the resources of its last bulk list.
 * What the API keeps unique it keeps per account: only objects of the same account collide.
 */
export class Conflicts {
  private readonly keys: ConflictKeys;
  /** Each bulk list's resources by conflict key, indexed once per list (one list per account). */
  private readonly remoteKeys = new WeakMap<object, Map<string, { id: string; remote: Remote }[]>>();
  private readonly base: EngineContext;

  constructor(ctx: EngineContext) {
    this.base = ctx;
    this.keys = new ConflictKeys(ctx.binding);
  }

  private remotesByKey(ctx: EngineContext): Map<string, { id: string; remote: Remote }[]> {
    const { binding, opts } = ctx;
    const snapshot = opts.observer?.latest;
    if (!snapshot || !binding.conflict) return new Map();
    let byKey = this.remoteKeys.get(snapshot);
    if (!byKey) {
      byKey = new Map();
      for (const l of snapshot.items.values()) {
        const remote = l.remote as Remote;
        const k = binding.conflict.key(binding.observe(remote));
        byKey.set(k, [...(byKey.get(k) ?? []), { id: remote.id, remote }]);
      }
      this.remoteKeys.set(snapshot, byKey);
    }
    return byKey;
  }

  /** Another object or remote resource that holds what the API keeps unique and this object wants. */
  of(
    ctx: EngineContext,
    obj: KubeObject,
    want: Wanted,
    id: string | undefined,
    seen: Observation | undefined,
  ) {
    const { binding, opts } = ctx;
    const c = binding.conflict;
    if (!c || !opts.cache.list) return undefined;
    const key = c.key(want.desired);
    const accounts = this.base.opts.accounts;
    const sameAccount = (o: KubeObject) => {
      if (!accounts || !ctx.account) return true;
      const r = accounts.accountOf(o);
      return r.ok && r.id === ctx.account;
    };
    const ref = (o: KubeObject) => (kind: string, name: string) => {
      const target = (opts.cache.lookup(kind, o.metadata.namespace!, name)?.status as Status | undefined)?.id;
      if (!target) throw new Error(`${kind} ${name} has no id`);
      return target;
    };
    // what changed since the last reconcile, or (the first time, or without a feed) every object
    const changed = opts.cache.changes?.();
    if (changed) this.keys.update(changed, opts.cache.get, ref);
    else this.keys.of(opts.cache.list(), ref);
    return findConflict({
      binding,
      self: obj,
      key,
      holds: seen?.found && c.key(binding.observe(seen.remote)) === key ? seen.remote.id : undefined,
      selfId: id,
      // only the objects with the same key are asked for their account
      others: this.keys.holding(key).filter((o) => sameAccount(o.obj)),
      live: this.keys.live,
      remotes: this.remotesByKey(ctx).get(key) ?? [],
      clusterId: opts.clusterId,
    });
  }
}

/**
 * The remote resource this object created, by its owner marker: by uid after a crash; by
 * kind/namespace/name too when the object was restored from a backup without status (a new
 * uid, and the create-pending mark older than the object itself). An object whose mark this
 * process wrote never takes a resource of an earlier object of the same name (Retain).
 */
export async function findOwned(ctx: EngineContext, obj: KubeObject, desired: Record<string, unknown>) {
  const mark = Date.parse(obj.metadata.annotations?.[CREATE_PENDING_ANNOTATION] ?? '');
  const restored = mark < Date.parse(obj.metadata.creationTimestamp ?? '');
  const { object } = ownerOf(ctx.binding.kind, obj, ctx.opts.clusterId);
  return call(ctx, `list ${ctx.binding.kind} (recovery)`, async () => {
    let byName: { id: string } | undefined;
    for await (const r of ctx.binding.api.list(ctx.opts.api, desired)) {
      const o = decodeMetadata((r as { metadata?: string }).metadata).owner;
      if (!o || o.cluster !== ctx.opts.clusterId) continue;
      if (o.uid === obj.metadata.uid) return r as { id: string };
      if (restored && o.object === object) byName ??= r as { id: string };
    }
    return byName;
  });
}
