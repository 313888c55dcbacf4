// A failure the engine turns into a condition, and the API errors that become one.
import { ApiError, isRetryable } from '../../../api/errors.ts';
import type { Phase } from '../conditions.ts';
import type { Outcome } from './types.ts';

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

/** A failure the engine turns into a condition, with or without a retry. */
export class ConditionError extends Error {
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

/** A stall: tried again when the spec changes or at the next resync. */
export const stall = (reason: string, message: string, outcome: Outcome = {}) =>
  new ConditionError({ state: 'stalled', reason, message }, outcome);

/** API errors become conditions: a rejected request stalls, anything else retries. */
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
    const detail = nameIds?.(raw) ?? raw;
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
    throw stall(
      auth ? 'ApiUnauthorized' : 'ApiRejected',
      `${what}: ${detail}`,
      auth ? { requeueAfterMs: SLOW_RETRY_MS } : {},
    );
  }
}
