// A reconcile that cannot finish: a value (Failure) from resolve, plan or execute to report.
// Only an API call's failure travels as an exception (ConditionError), from the call to the
// one place in the engine that turns it back into a value.
import { ApiError, isRetryable } from '../../../api/errors.ts';
import type { Phase } from '../bindings/conditions.ts';
import { isConflict, KubeError } from '../kube/kube.ts';
import type { EngineContext, Outcome } from './types.ts';

/** The longest wait a Retry-After may set for an object's next attempt. */
export const RETRY_AFTER_MAX_MS = 3_600_000;

/** Waits shorter than this are not written to a new object's status. */
export const QUIET_WAIT_MS = 5000;
/**
 * ... and waits for a referenced object that exists and is on its way (not stalled) get
 * longer: applying a thousand policies with their rules is not a thousand waits to report.
 */
export const QUIET_WAIT_FOR_PROGRESS_MS = 60_000;
export const SLOW_RETRY_MS = 5 * 60_000;
/** A conflict is looked at again this often (no API call: the cache and the last list). */
export const CONFLICT_RECHECK_MS = 15_000;

/** What a reconcile reports instead of success: the condition, when to try again, and how quietly. */
export interface Failure {
  readonly failed: true;
  readonly phase: Phase;
  readonly outcome: Outcome;
  /** How long a new object may wait like this before its status says so. */
  readonly quietMs: number;
  /** A Ready object waits this quietly too (a wait that follows every start, not a change of its own). */
  readonly quietWhenReady?: boolean;
}

export const failure = (
  phase: Phase,
  outcome: Outcome = {},
  quietMs = QUIET_WAIT_MS,
  quietWhenReady?: boolean,
): Failure => ({
  failed: true,
  phase,
  outcome,
  quietMs,
  ...(quietWhenReady ? { quietWhenReady } : {}),
});

/** A stall: tried again when the spec changes or at the next resync (or `outcome`). */
export const stalled = (reason: string, message: string, outcome: Outcome = {}): Failure =>
  failure({ state: 'stalled', reason, message }, outcome);

export const isFailure = (x: unknown): x is Failure =>
  typeof x === 'object' && x !== null && (x as { failed?: unknown }).failed === true;

/** An API call's failure, on its way to the engine's reconcile (which reports its `failure`). */
export class ConditionError extends Error {
  readonly failure: Failure;
  constructor(f: Failure) {
    super(f.phase.message);
    this.failure = f;
  }
}

/**
 * An API error as a condition: a rejected request stalls (unauthorized: looked at again
 * slowly), anything else retries (as the API asks, up to an hour: a Retry-After of days, a
 * proxy's mistake, would leave the object unlooked-at past every resync). `detail`: the API's
 * message with its ids named.
 */
export function apiFailure(
  what: string,
  err: { status?: number; retryable: boolean; retryAfterMs?: number },
  detail: string,
): Failure {
  const message = `${what}: ${detail}`;
  if (err.retryable) {
    const wait = err.retryAfterMs === undefined ? undefined : Math.min(err.retryAfterMs, RETRY_AFTER_MAX_MS);
    return failure(
      { state: 'progressing', reason: err.status === 429 ? 'APIThrottled' : 'APIUnavailable', message },
      wait ? { requeueAfterMs: wait } : { retry: true },
    );
  }
  const auth = err.status === 401 || err.status === 403;
  return stalled(
    auth ? 'APIUnauthorized' : 'APIRejected',
    message,
    auth ? { requeueAfterMs: SLOW_RETRY_MS } : {},
  );
}

/** API errors become conditions (apiFailure), thrown to the engine's reconcile. */
export async function apiCall<T>(
  what: string,
  fn: () => Promise<T>,
  nameIds?: (text: string) => string,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const raw = err.apiMessage ?? err.message;
    const retryable = isRetryable(err);
    throw new ConditionError(
      apiFailure(
        what,
        { status: err.status, retryable, retryAfterMs: err.retryAfterMs },
        nameIds?.(raw) ?? raw,
      ),
    );
  }
}

/**
 * API errors of a call, named with the objects behind the ids that `namespace` may see; other
 * ids are left out unless the object named them itself (`known`).
 */
export const call = <T>(
  ctx: EngineContext,
  namespace: string,
  what: string,
  fn: () => Promise<T>,
  known?: ReadonlySet<string>,
): Promise<T> => apiCall(what, fn, (text) => ctx.opts.cache.nameIds(text, namespace, known));

/**
 * What an exception out of a reconcile means: an API call's failure (a value again); a
 * conflict on a Kubernetes write (the object changed meanwhile: again, with the queue's
 * backoff); anything else is no failure of the object's (undefined: thrown on).
 */
export function ofThrown(err: unknown): { failure: Failure } | { outcome: Outcome } | undefined {
  if (err instanceof ConditionError) return { failure: err.failure };
  if (err instanceof KubeError && isConflict(err)) return { outcome: { retry: true } };
  return undefined;
}

/** A plan's stall as the failure report writes. */
export const fromStall = (s: { reason: string; message: string; requeueAfterMs?: number }): Failure =>
  stalled(s.reason, s.message, s.requeueAfterMs ? { requeueAfterMs: s.requeueAfterMs } : {});
