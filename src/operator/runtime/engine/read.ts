// What the API and the caches hold for an object: its remote resource (from the kind's bulk
// list when fresh for the object, else a GET), its id, the owner its marker names, the
// objects and resources it may collide with, and the resource a create before a crash left.
import { isNotFound } from '../../../api/errors.ts';
import { decodeMetadata } from '../bindings/owner.ts';
import { CREATE_PENDING_ANNOTATION } from '../constants.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { ConflictKeys } from '../state/conflicts.ts';
import { idsUnder, type Snapshot } from '../state/observer.ts';
import { needsOwnerState, ownerOf } from './facts.ts';
import { ConditionError, call, type Failure } from './failure.ts';
import type { ConflictInput } from './plan.ts';
import type { LostCreate } from './plan-create.ts';
import type { EngineContext, Remote, RemoteReader, Seen, Status, Wanted } from './types.ts';
import { statusOf } from './types.ts';

function getReader(ctx: EngineContext, namespace: string): RemoteReader {
  return {
    read: async (id, desired) => {
      try {
        return { found: true, remote: await ctx.binding.api.get(ctx.opts.api, id, desired) };
      } catch (err) {
        if (isNotFound(err)) return { found: false };
        return call(ctx, namespace, `get ${id}`, () => Promise.reject(err), new Set([id]));
      }
    },
  };
}

/**
 * How this object's remote resource is read: from the kind's bulk list when its page was
 * sent after this process last wrote the resource (as good as a GET, and free), else by a
 * GET. A resource missing from the list is confirmed by a GET before it is recreated.
 * `fresh`: a GET whatever the list holds.
 */
export function readerFor(ctx: EngineContext, key: string, fresh = false): RemoteReader {
  const get = getReader(ctx, key.includes('/') ? key.slice(0, key.indexOf('/')) : '');
  const snapshot = ctx.opts.observer?.latest;
  if (fresh) return get;
  if (!snapshot) {
    ctx.opts.log.debug({ object: key }, 'read: the kind has not been listed yet, reading it');
    return get;
  }
  const touched = ctx.memos.peek(key)?.lastRemoteWrite ?? 0;
  return {
    read: async (id, desired) => {
      const listed = snapshot.items.get(id);
      // listed on a page sent after this process's last write finished: current
      if (listed && listed.at > touched) return { found: true, remote: listed.remote as Remote };
      ctx.opts.log.debug(
        { object: key, id, listed: !!listed, pageAt: listed?.at, listStartedAt: snapshot.startedAt, touched },
        'read: the list is not fresh for this object, reading it',
      );
      return get.read(id, desired);
    },
  };
}

/**
 * The resource under `id` (as readerFor reads it; `fresh`: a GET whatever the list holds), or
 * the failure to read it: a value, which the plan orders after what was found before it.
 */
export async function readRemote(
  ctx: EngineContext,
  key: string,
  fresh: boolean,
  id: string,
  desired: Record<string, unknown>,
): Promise<Seen | Failure> {
  try {
    return await readerFor(ctx, key, fresh).read(id, desired);
  } catch (err) {
    if (err instanceof ConditionError) return err.failure;
    throw err;
  }
}

/** The owner marker's object, read only when it names another object of this installation. */
export async function readOwnerState(ctx: EngineContext, obj: KubeObject, seen: Seen | undefined) {
  if (!seen?.found) return undefined;
  const marker = decodeMetadata(seen.remote.metadata).owner;
  if (!needsOwnerState(marker, ownerOf(ctx.binding.kind, obj, ctx.opts.clusterId))) return undefined;
  return ctx.opts.cache.ownerState(marker!.object, marker!.uid, obj.metadata.namespace ?? '');
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
  return call(ctx, obj.metadata.namespace ?? '', `list ${ctx.binding.kind} (recovery)`, async () => {
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

/**
 * A create-pending object without an id: what this process remembers of its last create, and
 * the resource found by its marker (a create cut short, or whose answer was lost). No list
 * before the memo's next look: each costs the kind's whole list. The plan decides
 * (plan-create.ts planLostCreate).
 */
export async function readLostCreate(
  ctx: EngineContext,
  obj: KubeObject,
  desired: Record<string, unknown>,
): Promise<LostCreate> {
  const last = ctx.memos.failedCreates.get(keyOf(obj));
  if (last?.nextLook !== undefined && last.nextLook > Date.now()) return { last, looked: false };
  const found = await findOwned(ctx, obj, desired);
  return { ...(last ? { last } : {}), looked: true, ...(found ? { found: found.id } : {}) };
}

/**
 * The objects and bulk-listed resources a kind's object may collide with (the plan decides
 * whether it does). What the API keeps unique it keeps per account: only objects of the
 * same account are candidates.
 */
export class ConflictReader {
  private readonly keys: ConflictKeys;
  private readonly base: EngineContext;

  constructor(ctx: EngineContext) {
    this.base = ctx;
    this.keys = new ConflictKeys(ctx.binding);
  }

  /** The candidates for the key this object wants; undefined when the kind keeps nothing unique. */
  read(ctx: EngineContext, want: Wanted): ConflictInput | undefined {
    const { binding, opts } = ctx;
    const c = binding.conflict;
    if (!c) return undefined;
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
    // what changed since the last reconcile, or (the first time) every object
    const changed = opts.cache.changes();
    if (changed) this.keys.update(changed, opts.cache.get, ref);
    else this.keys.of(opts.cache.list(), ref);
    return {
      key,
      // only the objects with the same key are asked for their account
      others: this.keys.holding(key, ref).filter((o) => sameAccount(o.obj)),
      live: this.keys.live,
      remotes: listedUnder(opts.observer?.latest, key),
    };
  }
}

/** The kind's listed resources under a conflict key (the list indexed them), read as needed. */
function* listedUnder(snapshot: Snapshot | undefined, key: string) {
  for (const id of idsUnder(snapshot, key)) {
    const listed = snapshot!.items.get(id);
    if (listed) yield { id, remote: listed.remote as Remote };
  }
}

/**
 * What says whether `id` is this object's to delete (deleteGuard): what its last sync
 * established, else what the API holds (the kind's bulk list when fresh for the object, else
 * a GET), with the object of this installation that claims an unmarked resource.
 */
export async function readDeleteEvidence(
  ctx: EngineContext,
  obj: KubeObject,
  id: string,
): Promise<{ evidence: 'synced' | Seen; claimedBy?: string }> {
  const key = keyOf(obj);
  const last = ctx.memos.peek(key)?.last;
  if (last?.id === id && !last.stalled) return { evidence: 'synced' };
  const desired = ctx.binding.desiredFromStatus?.(statusOf(obj)) ?? {};
  const seen = await readerFor(ctx, key).read(id, desired);
  const unmarked = seen.found && !decodeMetadata(seen.remote.metadata).owner;
  const other = unmarked
    ? ctx.opts.cache.list().find((o) => o.metadata.uid !== obj.metadata.uid && statusOf(o).id === id)
    : undefined;
  const claimedBy = other && `${ctx.binding.kind}/${other.metadata.namespace}/${other.metadata.name}`;
  return { evidence: seen, claimedBy };
}
