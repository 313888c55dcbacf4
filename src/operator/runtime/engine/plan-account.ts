// Pure: which account a reconcile works with. A delete goes to the account that holds the
// resource; anything else to the account the object resolves to (which must be the one
// holding it: the resolution says so). No account, or one not Ready: a condition, and no
// API request.
import type { Resolution } from '../accounts/resolve.ts';
import type { Phase } from '../bindings/conditions.ts';
import { type Failure, failure } from './failure.ts';

/** An object waiting for its account looks again this often (an account turning Ready re-queues it sooner). */
export const ACCOUNT_RECHECK_MS = 60_000;

export function planAccount(i: {
  deleting: boolean;
  /** The account status says holds the resource, if the object may name it. */
  held?: string;
  /** The account the object resolves to now. */
  resolved: Resolution;
}): { id: string } | Failure {
  if (i.deleting && i.held) return { id: i.held };
  const r = i.resolved;
  if (r.ok) return { id: r.id };
  return failure(
    { state: r.state, reason: r.reason, message: r.message },
    r.state === 'progressing' ? { requeueAfterMs: ACCOUNT_RECHECK_MS } : {},
  );
}

/** The account cannot serve now (its key refused, not Ready): wait for it. */
export const accountUnusable = (phase: Phase): Failure =>
  failure(phase, { requeueAfterMs: ACCOUNT_RECHECK_MS });
