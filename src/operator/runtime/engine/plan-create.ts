// Pure decisions of a create whose outcome is unknown (cut short by a crash, or its answer
// lost): the resource found by its owner marker is the object's (recovered); not found, it is
// made anew, or looked for again while it may still be made. The look is read.ts's
// (readLostCreate), the memo's write execute.ts's (noteLostCreate).
import { type Failure, failure } from './failure.ts';

/**
 * A create that got no answer of the API's own (a timeout, a reset, a gateway's 504) may still be
 * made, later than the answer was lost: the first look finds nothing yet. Not found, it is
 * looked for again CREATE_FIRST_LOOK_MS after the failure, then CREATE_SETTLE_MS after, and only
 * then made anew; a duplicate would be a resource nobody owns, billed and routing. One the API
 * refused or never received (`answered`) is made again at once. After a restart nothing says
 * how the last create went (`answered` unknown, `at` the first look): a crash is no sign of a
 * late commit, so one more look CREATE_FIRST_LOOK_MS later is enough.
 */
export const CREATE_FIRST_LOOK_MS = 5_000;
export const CREATE_SETTLE_MS = 30_000;

export function unfoundCreate(i: {
  /** The last failed create (when it failed, whether the API's answer settled it), or the first look after a restart. */
  last: { at: number; answered?: boolean } | undefined;
  now: number;
}): { action: 'create' } | { action: 'wait'; ms: number } {
  if (i.last?.answered) return { action: 'create' };
  const age = i.last ? i.now - i.last.at : 0;
  if (age >= (i.last?.answered === false ? CREATE_SETTLE_MS : CREATE_FIRST_LOOK_MS))
    return { action: 'create' };
  return { action: 'wait', ms: (age < CREATE_FIRST_LOOK_MS ? CREATE_FIRST_LOOK_MS : CREATE_SETTLE_MS) - age };
}

/** The last failed create this process remembers of an object (memo.ts `failedCreates`). */
export interface FailedCreate {
  at: number;
  answered?: boolean;
  /** Not looked for by its marker again before then. */
  nextLook?: number;
}

/** What was read of a create-pending object without an id: the memo, and the look by its marker. */
export interface LostCreate {
  last?: FailedCreate;
  /** Looked for by its marker (never before `last.nextLook`): the id found, if any. */
  looked: boolean;
  found?: string;
}

/** What the memo of failed creates is to hold after the look: nothing, or a new entry. */
export type FailedCreateWrite = { forget: true } | { set: FailedCreate };

export type LostCreateDecision =
  /** Found by its marker: the object's id (a Recovered Event with a sync), and the memo forgets. */
  | { action: 'recovered'; id: string; memo: FailedCreateWrite }
  /** Not found and not to be waited for: made anew (a delete lets it go). */
  | { action: 'create' }
  /** It may still be made: a failure that waits, and (after a look) when to look next. */
  | { action: 'wait'; failure: Failure; memo?: FailedCreateWrite };

/** Recovered, made anew, or waited for: from the memo, the look and the time. */
export function planLostCreate(kind: string, l: LostCreate, now: number): LostCreateDecision {
  const unconfirmed = (ms: number) =>
    failure(
      {
        state: 'progressing',
        reason: 'CreateUnconfirmed',
        message: `the last create of this ${kind} got no answer from the API and may still be made: it is looked for by its owner marker again before anything is created or let go`,
      },
      { requeueAfterMs: ms },
    );
  if (!l.looked)
    return { action: 'wait', failure: unconfirmed(Math.max((l.last?.nextLook ?? now) - now, 1)) };
  if (l.found) return { action: 'recovered', id: l.found, memo: { forget: true } };
  const d = unfoundCreate({ last: l.last, now });
  if (d.action === 'create') return { action: 'create' };
  return {
    action: 'wait',
    failure: unconfirmed(d.ms),
    memo: { set: { ...(l.last ?? { at: now }), nextLook: now + d.ms } },
  };
}
