// What an administrator bounds of the accounts tenants make: how many EdgeAccounts a namespace
// has in use, and how large a budget an EdgeAccount may claim. Each account in use costs a
// client, a budget, a bulk observation per kind, its metric series and a poll a minute; a
// tenant's budget beyond the installation's would only turn into 429s from the API. Pure.
import type { KubeObject } from '../kube/kube.ts';

export interface AccountLimits {
  /** EdgeAccounts one namespace may have in use: the oldest are served. */
  maxPerNamespace: number;
  /** The highest spec.rateLimitPerMinute of an EdgeAccount. */
  maxRatePerMinute: number;
}

const age = (o: KubeObject) => `${o.metadata.creationTimestamp ?? ''}\u0000${o.metadata.name}`;

/**
 * Why an EdgeAccount may not be served, or undefined. `siblings`: the EdgeAccounts of its
 * namespace (itself included). The oldest `maxPerNamespace` of those not being deleted are
 * served, so a new account never takes the place of one in use.
 */
export function edgeAccountRefusal(
  account: KubeObject,
  siblings: KubeObject[],
  limits: AccountLimits,
): { reason: 'RateLimitNotAllowed' | 'AccountLimit'; message: string } | undefined {
  // one being deleted serves its objects' deletes whatever it asks (an upgrade may find it over a bound)
  if (account.metadata.deletionTimestamp) return undefined;
  const rate = (account.spec as { rateLimitPerMinute?: number } | undefined)?.rateLimitPerMinute;
  if (rate !== undefined && rate > limits.maxRatePerMinute)
    return {
      reason: 'RateLimitNotAllowed',
      message: `spec.rateLimitPerMinute ${rate} is above the ${limits.maxRatePerMinute} a minute the installation allows an EdgeAccount (--max-account-rate-limit, chart value accounts.maxRateLimitPerMinute)`,
    };
  const live = siblings
    .filter((o) => !o.metadata.deletionTimestamp)
    .sort((a, b) => (age(a) < age(b) ? -1 : 1));
  const rank = live.findIndex((o) => o.metadata.uid === account.metadata.uid);
  if (rank < limits.maxPerNamespace) return undefined;
  return {
    reason: 'AccountLimit',
    message: `namespace ${account.metadata.namespace} has ${live.length} EdgeAccounts; the installation serves ${limits.maxPerNamespace} per namespace, the oldest (--max-accounts-per-namespace, chart value accounts.maxPerNamespace): delete one to use this one`,
  };
}
