// The id annotation (`edge.tunnel.dev/id`), written when the operator is idle: a restore from a
// backup without status (Velero's default) finds the resource by it. Replaces the create-pending mark.
import { CREATE_PENDING_ANNOTATION, ID_ANNOTATION } from '../constants.ts';
import { KubeError } from '../kube/kube.ts';
import { patchMeta } from './execute.ts';
import { isPaused } from './plan.ts';
import { type EngineContext, statusOf } from './types.ts';

/**
 * Writes the pending id annotations until `busy()` says work arrived; returns how many.
 * `olderThanMs`: only those waiting at least that long (an operator that is never idle
 * still writes them, a few at a time).
 */
export async function recordIds(
  ctx: EngineContext,
  busy: () => boolean,
  opts: { olderThanMs?: number; max?: number } = {},
): Promise<number> {
  let written = 0;
  const now = Date.now();
  for (const [key, { id, since }] of ctx.memos.idsToRecord()) {
    if (busy() || written >= (opts.max ?? Infinity)) break;
    if (opts.olderThanMs !== undefined && now - since < opts.olderThanMs) continue;
    const cached = ctx.opts.cache.get(key);
    if (cached && isPaused(cached)) continue;
    if (!cached || cached.metadata.deletionTimestamp || cached.metadata.annotations?.[ID_ANNOTATION] === id) {
      ctx.memos.recorded(key);
      continue;
    }
    // the cache has not seen the status write yet: next round
    if (statusOf(cached).id !== id) continue;
    try {
      const annotations = { [ID_ANNOTATION]: id, [CREATE_PENDING_ANNOTATION]: null };
      // patchMeta replaces the copy's metadata and changes nothing inside it: a shallow copy
      // keeps the cache intact
      await patchMeta(ctx, { ...cached }, { annotations });
      // a newer id that came meanwhile still waits
      ctx.memos.recorded(key, id);
      written++;
    } catch (err) {
      // a newer version in flight (409) or the API server away: next round
      ctx.opts.log.debug({ object: key, err: (err as Error).message }, 'id annotation not written yet');
      if (!(err instanceof KubeError)) throw err;
    }
  }
  return written;
}
