// A reconcile's one read phase, one value: what the spec wants (resolve.ts), the id the object
// has (status, the id annotation), or what is remembered of a create whose outcome is unknown
// and the look by its owner marker, the remote resource under that id (from the kind's bulk
// list when fresh, else a GET), what the object may collide with, the state of the object the
// resource's marker names, and the secret digests this process last applied. It decides
// nothing: plan-sync.ts does.
import { CREATE_PENDING_ANNOTATION, ID_ANNOTATION } from '../constants.ts';
import { keyOf } from '../kube/informer.ts';
import type { KubeObject } from '../kube/kube.ts';
import { isFailure } from './failure.ts';
import type { Gathered, GatheredObserved } from './plan-sync.ts';
import { type ConflictReader, readLostCreate, readOwnerState, readRemote } from './read.ts';
import { wanted } from './resolve.ts';
import { type EngineContext, statusOf } from './types.ts';

/** What a sync reads. `requested`: a reconcile asked for by annotation reads the resource itself, not the kind's last list. */
export async function gatherSync(
  ctx: EngineContext,
  obj: KubeObject,
  conflicts: ConflictReader,
  requested: string | undefined,
): Promise<Gathered> {
  const key = keyOf(obj);
  const want = await wanted(ctx, obj);
  if (isFailure(want)) return { want };
  const ann = obj.metadata.annotations ?? {};
  const id = statusOf(obj).id ?? ann[ID_ANNOTATION];
  const lost =
    !id && ann[CREATE_PENDING_ANNOTATION] ? await readLostCreate(ctx, obj, want.desired) : undefined;
  const under = id || lost?.found;
  const seen = under ? await readRemote(ctx, key, !!requested, under, want.desired) : undefined;
  const conflict = conflicts.read(ctx, want);
  const ownerState = seen && !isFailure(seen) ? await readOwnerState(ctx, obj, seen) : undefined;
  return {
    want,
    ...(id ? { id } : {}),
    ...(lost ? { lost } : {}),
    ...(seen ? { seen } : {}),
    ...(conflict ? { conflict } : {}),
    ...(ownerState ? { ownerState } : {}),
    applied: ctx.memos.peek(key)?.last?.digests,
  };
}

/** What an observe-only read reads: the resource `id` names, and its owner's state. */
export async function gatherObserved(
  ctx: EngineContext,
  obj: KubeObject,
  id: string,
  requested: string | undefined,
): Promise<GatheredObserved> {
  const want = await wanted(ctx, obj);
  if (isFailure(want)) return { want };
  const seen = await readRemote(ctx, keyOf(obj), !!requested, id, want.desired);
  const ownerState = isFailure(seen) ? undefined : await readOwnerState(ctx, obj, seen);
  return { want, seen, ...(ownerState ? { ownerState } : {}) };
}
