// An EdgeAccount's key Secret is deleted in the same sweep as the account and its objects when
// their namespace goes. The account keeps the key it read in memory, but an operator restarted
// meanwhile would find no Secret and could delete nothing remote. So the Secret carries the
// operator's finalizer while any account reading it has objects holding remote resources, and
// loses it when none has (a ClusterEdgeAccount's Secret lives in the platform's namespace, not
// in a tenant's: it is not held).
import type { Logger } from 'pino';
import { Holds, KEY_FINALIZER } from '../kube/holds.ts';
import type { Kube } from '../kube/kube.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

/** What one account needs of its key Secret. */
export interface KeyUse {
  namespace: string;
  secret: string;
  /** Objects of the account holding remote resources. */
  holding: number;
}

/** Whether a Secret is held: some account reading it has objects holding remote resources. */
export function keyNeeded(uses: Iterable<KeyUse>, namespace: string, secret: string): boolean {
  for (const u of uses) if (u.namespace === namespace && u.secret === secret && u.holding > 0) return true;
  return false;
}

export class KeyHolds {
  readonly holds: Holds;
  /** Account id -> what it needs. */
  private readonly uses = new Map<string, KeyUse>();

  constructor(o: { kube: Kube; log: Logger }) {
    this.holds = new Holds({ ...o, resource: SECRETS, finalizer: KEY_FINALIZER, what: 'secret' });
  }

  /**
   * An account's use now (undefined: it is gone). A release waits until `caughtUp` (every
   * cache listed): an object not yet seen must not let its key go.
   */
  async update(account: string, use: KeyUse | undefined, caughtUp: boolean): Promise<void> {
    const before = this.uses.get(account);
    if (use) this.uses.set(account, use);
    else this.uses.delete(account);
    const touched = [before, use].filter((u): u is KeyUse => !!u);
    // decided when the Secret's turn comes: accounts are looked at by several workers at once
    for (const { namespace, secret } of touched) {
      await this.holds.set(namespace, secret, () => {
        const need = keyNeeded(this.uses.values(), namespace, secret);
        return need || caughtUp ? need : undefined;
      });
      // no account reads it any more (tenants may make and delete accounts in a loop): nothing stays
      if (![...this.uses.values()].some((u) => u.namespace === namespace && u.secret === secret))
        this.holds.drop(namespace, secret);
    }
  }

  heldIn(ns: string): boolean {
    return this.holds.heldIn(ns);
  }
}
