// The account reconciler's decisions that read no cache and write nothing: what one run does
// with the facts gathered (the account, its users, its registry entry, whether every cache has
// listed, its connection as a value), when a deleted account may go, and what it says
// meanwhile. Tested by tables (test/unit/account-plan.test.ts, test/unit/accounts.test.ts).
import type { Phase } from '../bindings/conditions.ts';
import type { FinalizerEvent } from '../kube/finalizer.ts';
import { ACCOUNT_RESYNC_MS, type Connected } from './probe.ts';

/** How soon a deleted account whose objects may not all be listed yet is looked at again. */
export const UNSETTLED_RECHECK_MS = 1000;

/**
 * A deleted account: held while objects hold remote resources in it ('keep'), let go once none
 * does ('release'). Its users are counted from the caches of the managed kinds, which an
 * operator just started may not have listed yet (the accounts' own are listed first): "none"
 * then only means "none seen yet", and letting go would strand every remote resource of a
 * namespace being deleted (its objects then wait for an account that is gone).
 */
export function accountDeleteStep(
  holding: number,
  caughtUp: boolean,
): 'keep' | 'wait-for-caches' | 'release' {
  if (holding > 0) return 'keep';
  return caughtUp ? 'release' : 'wait-for-caches';
}

/** What a deleted account still in use says: how many objects hold resources in it, the first few named. */
export const inUse = (users: { names: string[]; holding: number }): Phase => ({
  state: 'progressing',
  reason: 'InUse',
  message: `deleted, but ${users.holding} object(s) still hold remote resources in it (${users.names.slice(0, 3).join(', ')}${users.names.length > 3 ? ', ...' : ''}): it goes once they are gone`,
});

/**
 * Workers for the accounts, and one more for a namespace none of whose accounts is being looked
 * at: a key's proof waits for its account's budget and for the API (up to --api-timeout when it
 * hangs), so one account's probe must not hold every other account's.
 */
export const ACCOUNT_WORKERS = 3;

/** What a run reads before it writes anything. */
export interface AccountFacts {
  /** Apply or Cleanup (finalizer.ts); 'gone': no longer in the cache. */
  event: FinalizerEvent | 'gone';
  /** The objects using it (a few named), and how many hold remote resources in it. */
  users: { names: string[]; holding: number };
  /** Its registry entry as the run began. */
  entry?: { usable: boolean; verified: boolean };
  /** Every cache has listed: "no user seen" means no user. */
  caughtUp: boolean;
}

/** What a run does before its connection is known. */
export interface AccountOpening {
  /** Gone: its client goes (before its key Secret's hold is let go). */
  forget: boolean;
  /** Its key Secret's hold: the objects holding remote resources in it; 'gone': it reads the Secret no more. */
  holdKey: number | 'gone';
  /** Connect (one cheap request when the key is new), its result gathered as a value. */
  connect: boolean;
}

/**
 * Before connecting: a gone account forgets its client and lets its key go; a live one holds
 * its key for its objects and connects; a deleted one holds its key too, and connects only to
 * prove a client its objects' deletes still need (an operator restarted meanwhile has none).
 */
export function openAccount(f: AccountFacts): AccountOpening {
  if (f.event === 'gone') return { forget: true, holdKey: 'gone', connect: false };
  const holdKey = f.users.holding;
  if (f.event === 'apply') return { forget: false, holdKey, connect: true };
  const step = accountDeleteStep(f.users.holding, f.caughtUp);
  return { forget: false, holdKey, connect: step !== 'release' && !f.entry?.verified };
}

/** The connection gathered: its result, and the registry's entry right after it. */
export interface AccountConnection {
  /** Undefined: not tried. */
  connected?: Connected;
  /** The entry after connecting (undefined: none, or gone meanwhile). */
  entry?: { phase?: Phase; url?: string };
}

/** What a run writes once its connection is known. */
export interface AccountPlan {
  /** Whether objects may use its client, and why (undefined: left as it is). */
  mark?: { usable: boolean; phase?: Phase };
  /** Its status: phase and URL (undefined: none written). */
  status?: { phase: Phase; url?: string };
  /** The objects naming it may go on: it turned usable. */
  wake: boolean;
  /** Cleanup is done: the finalizer comes off, then its client goes. */
  release: boolean;
  /** When to look again (undefined: at its next change). */
  againMs?: number;
}

const NOTHING: AccountPlan = { wake: false, release: false };

/** The phase of an account whose key the API takes. */
export const keyAccepted = (url: string): Phase => ({
  state: 'ready',
  reason: 'KeyAccepted',
  message: `the API at ${url} accepts the key`,
});

/**
 * Once connected (or not): a live account is usable or not and says why, waking its objects
 * when it turns usable; a deleted one still in use keeps serving their deletes (a client proved
 * meanwhile wakes them) and says it is in use, or waits for every cache; one no longer in use
 * is released.
 */
export function planAccount(f: AccountFacts, c: AccountConnection): AccountPlan {
  if (f.event === 'gone') return NOTHING;
  const wasUsable = !!f.entry?.usable;
  if (f.event === 'apply') {
    const r = c.connected;
    if (!r) return NOTHING;
    if (!r.ok)
      return {
        mark: { usable: false, phase: r.phase },
        status: { phase: r.phase },
        wake: false,
        release: false,
        againMs: r.retryMs ?? ACCOUNT_RESYNC_MS,
      };
    const phase = keyAccepted(r.url);
    return {
      mark: { usable: true, phase },
      status: { phase, url: r.url },
      // an entry gone while connecting serves nobody: marking it changes nothing
      wake: !!c.entry && !wasUsable,
      release: false,
      againMs: ACCOUNT_RESYNC_MS,
    };
  }
  const step = accountDeleteStep(f.users.holding, f.caughtUp);
  if (step === 'release') return { ...NOTHING, release: true };
  const proved = !!c.connected?.ok;
  const held: AccountPlan = {
    ...(proved ? { mark: { usable: true, phase: c.entry?.phase } } : {}),
    wake: proved,
    release: false,
  };
  if (step === 'wait-for-caches') return { ...held, againMs: UNSETTLED_RECHECK_MS };
  return { ...held, status: { phase: inUse(f.users), url: c.entry?.url }, againMs: ACCOUNT_RESYNC_MS };
}
