// What a work queue is told: its name and metrics, its retry backoff, and the policy it asks of
// each item (its flow, its account, the account's cap, whether it is kept back, its priority).
import type { Priority } from '../../api/priority.ts';
import type { Metrics } from './metrics.ts';

export interface QueueOptions<T = string> {
  name: string;
  metrics?: Metrics;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Overall bucket for rate-limited adds (controller-runtime: 10/s, burst 100). */
  qps?: number;
  burst?: number;
  /** The flow (namespace) an item belongs to; by default a key's part before its first `/`. */
  flowOf?: (item: T) => string;
  /** The account an item's work uses (undefined: none, it sends no request). */
  accountOf?: (item: T) => string | undefined;
  /**
   * How many items of one account may be in progress at once (Infinity: no cap). Fewer than
   * the workers: an account whose API hangs holds that many workers at most, and the others
   * keep serving every other account, in the same namespace too.
   */
  maxPerAccount?: () => number;
  /**
   * Whether an item is kept back now: `budget` while its account already has callers enough
   * waiting for its budget at this priority (RateLimiter.backedUp), `start` while what it needs
   * after a start is under way (its account's first check, its kind's first list). It then
   * stays queued here, where it holds no worker and decides nothing on state that would be old
   * by its turn; call `kick()` when that changes. A namespace's first item (the newcomer
   * worker's) goes anyway when only the budget keeps it, to take its turn among the namespaces
   * waiting for the budget.
   */
  deferred?: (item: T, priority: Priority) => Deferral;
  /**
   * The priority an item takes when added without one (a retry, a reference let go): a
   * delete or an edit stays urgent whoever queues it, not only the watch event that began it.
   */
  priorityOf?: (item: T) => Priority | undefined;
}

/** Why an item is kept back (QueueOptions.deferred), or false. */
export type Deferral = false | 'budget' | 'start';

/** A namespaced key's namespace (`ns/name`); '' for a cluster-scoped one. */
export const namespaceOfKey = (key: unknown): string => {
  const k = String(key);
  const slash = k.indexOf('/');
  return slash < 0 ? '' : k.slice(0, slash);
};
