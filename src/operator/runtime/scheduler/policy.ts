// The scheduler's decisions, as pure functions of what it knows: whether an item may begin now
// (its account's start, its kind's first list, its budget), how many callers a budget lets wait,
// how many workers one account may hold, and whether a run waiting for its budget lets its
// worker go. The queue, the budget and the workers only carry them out (workqueue.ts,
// budget.ts, worker.ts); the tables in test/unit/scheduler-policy.test.ts state them.
import type { Priority } from './priority.ts';

/** Why an item is kept back now, or false: it may begin. */
export type Deferral = false | 'budget' | 'start';

/** What the admission of one item looks at. */
export interface AdmissionFacts {
  priority: Priority;
  /** Its account's first check after a start is under way. */
  accountStarting: boolean;
  /** Its kind's first list in its account is under way. */
  kindListing: boolean;
  /** It has a remote resource to compare with that list (an id in status). */
  hasId: boolean;
  /** The API asked for patience (a 429's Retry-After) that is not over. */
  throttled: boolean;
  /** Runs of the account in progress (seats held) at this priority or above, waiting for the budget or about to. */
  waiting: number;
  /** Callers the budget serves in a moment (budget.ts MOMENT_MS). */
  room: number;
  /** The first item of a namespace with nothing queued nor in progress until now. */
  newcomer: boolean;
}

/**
 * Whether an item may begin. After a start an account's objects wait for its first check, and
 * those with a remote resource for their kind's first list (one list instead of a GET each);
 * an edit or a delete reads its own resource and does not wait for the list. A run decides on
 * what it reads when it begins: begun while the budget already has a moment's callers waiting,
 * it would decide on state as old as its wait, so it stays queued (where it holds no worker)
 * until the budget has room. A newcomer namespace's first item has room of its own, as much
 * again: it takes its turn among the namespaces waiting instead of behind their backlogs.
 */
export function admission(f: AdmissionFacts): Deferral {
  if (f.accountStarting) return 'start';
  if (f.kindListing && f.hasId && f.priority !== 'urgent') return 'start';
  if (f.throttled) return 'budget';
  return f.waiting >= (f.newcomer ? 2 : 1) * f.room ? 'budget' : false;
}

/** Callers a budget lets wait before it counts as backed up: what it serves in `momentMs`, at least one. */
export const roomOf = (ratePerMs: number, momentMs: number): number =>
  Math.max(1, Math.round(ratePerMs * momentMs));

/**
 * Workers of one kind that one account's items may hold at once: with more than one account,
 * all but one, so an account whose API hangs (each request waiting out the timeout) never holds
 * every worker; with one account there is nobody to keep a worker for.
 */
export const accountCap = (workers: number, accounts: number): number =>
  accounts > 1 ? Math.max(1, workers - 1) : Number.POSITIVE_INFINITY;

/**
 * A 429 asking for this long or longer holds the account's work not begun until it is over; a
 * shorter one (the API's usual second) only makes its own call wait. Either way the run that met
 * it lets its worker go.
 */
export const THROTTLE_MS = 2_000;

/** Whether a 429's Retry-After holds the account's work not begun (see THROTTLE_MS). */
export const throttles = (retryAfterMs: number): boolean => retryAfterMs >= THROTTLE_MS;

/** A run waiting for its budget shorter than this keeps its worker: handing it on costs more. */
export const LET_GO_MS = 100;

/** Whether a run that has to wait about `expectedWaitMs` for its budget lets its worker go. */
export const letsGo = (expectedWaitMs: number): boolean => expectedWaitMs >= LET_GO_MS;
