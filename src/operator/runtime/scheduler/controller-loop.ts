// The one controller loop of every reconciler (the kinds' engine, the accounts): a key from
// the work queue, one reconcile, and what its outcome asks of the queue. A reconcile says
// what it wants as a value; an error it throws is logged and retried with backoff, and the
// key is always handed back (done), so it can come again.

/** What one reconcile asks of the queue. */
export interface LoopOutcome {
  /** Again after the key's backoff (a conflict, a failure worth retrying soon). */
  retry?: boolean;
  /** Again after this long (the backoff forgotten). */
  requeueAfterMs?: number;
  /** Found nothing to do: a delay pending when the run began still holds. */
  unchanged?: boolean;
}

/** How a run ended, as the reconcile metrics count it. */
export type LoopResult = 'requeue' | 'requeue_after' | 'success' | 'error';

/** What the loop asks of a work queue (the WorkQueue's methods of these names). */
export interface LoopQueue<K> {
  addRateLimited(key: K): void;
  forget(key: K): void;
  addAfter(key: K, ms: number): void;
  keepDelay(key: K): void;
  done(key: K): void;
}

/** The outcome applied to the queue: a retry backs off; anything else forgets the backoff. */
export function applyOutcome<K>(queue: LoopQueue<K>, key: K, out: LoopOutcome): Exclude<LoopResult, 'error'> {
  if (out.retry) {
    queue.addRateLimited(key);
    return 'requeue';
  }
  queue.forget(key);
  if (out.requeueAfterMs !== undefined) queue.addAfter(key, out.requeueAfterMs);
  else if (out.unchanged) queue.keepDelay(key);
  return out.requeueAfterMs ? 'requeue_after' : 'success';
}

/** What a loop's owner hears of each run (its metrics, its log). */
export interface LoopHooks<K> {
  /** The run ended with an outcome, applied. */
  ended?(key: K, result: Exclude<LoopResult, 'error'>): void;
  /** The run threw: said here, then retried with backoff. */
  failed(key: K, err: unknown): void;
  /** After either, before the key is handed back. */
  finally?(key: K): void;
}

/** One key's run: reconcile, apply its outcome (or back off on an error), hand the key back. */
export async function runKey<K>(
  queue: LoopQueue<K>,
  key: K,
  run: (key: K) => Promise<LoopOutcome>,
  hooks: LoopHooks<K>,
): Promise<void> {
  try {
    const result = applyOutcome(queue, key, await run(key));
    hooks.ended?.(key, result);
  } catch (err) {
    hooks.failed(key, err);
    queue.addRateLimited(key);
  } finally {
    hooks.finally?.(key);
    queue.done(key);
  }
}

/** Keys from `next` one after another until it gives none (the queue shut down). */
export async function runLoop<K>(
  queue: LoopQueue<K>,
  next: () => Promise<K | undefined>,
  run: (key: K) => Promise<LoopOutcome>,
  hooks: LoopHooks<K>,
): Promise<void> {
  for (;;) {
    const key = await next();
    if (key === undefined) return;
    await runKey(queue, key, run, hooks);
  }
}
