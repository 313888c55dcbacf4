// The account reconciler's decisions that read no cache and write nothing: when a deleted
// account may go, and what it says meanwhile. Tested by tables (test/unit/accounts.test.ts).
import type { Phase } from '../conditions.ts';

/** How soon a deleted account whose objects may not all be listed yet is looked at again. */
export const UNSETTLED_RECHECK_MS = 1000;

/**
 * A deleted account: held while objects hold remote resources in it ('keep'), let go once none
 * does ('release'). Its users are counted from the caches of the managed kinds, which an
 * operator just started may not have listed yet (the accounts' own are listed first): "none"
 * then only means "none seen yet", and letting go would strand every remote resource of a
 * namespace being deleted (its objects then wait for an account that is gone).
 */
export function accountDeleteStep(holding: number, settled: boolean): 'keep' | 'wait-for-caches' | 'release' {
  if (holding > 0) return 'keep';
  return settled ? 'release' : 'wait-for-caches';
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
