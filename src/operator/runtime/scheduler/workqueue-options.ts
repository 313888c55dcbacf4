// What a work queue is told: its name and metrics, its retry backoff, and the policy it asks of
// each item (its flow, its account, the account's cap, whether it is kept back, its priority).
import type { Deferral } from './policy.ts';
import type { Priority } from './priority.ts';

type Labels = Record<string, string>;
/** The queue's series (the operator's registry has them: runtime/metrics.ts). */
export interface QueueMetrics {
  queueAdds: { inc(labels: Labels): void };
  queueRetries: { inc(labels: Labels): void };
  queueDepth: { set(labels: Labels, value: number): void };
  queueDuration: { observe(labels: Labels, value: number): void };
  queueWait: { observe(labels: Labels, value: number): void };
  workDuration: { observe(labels: Labels, value: number): void };
}

export interface QueueOptions<T = string> {
  name: string;
  metrics?: QueueMetrics;
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
   * The lane an item waits in (lanes.ts): its account, and the gate it waits for that others of
   * the account do not (its kind's first list). Items of one lane are let go or kept back
   * together; by default an item's lane is its account.
   */
  laneOf?: (item: T, priority: Priority) => string;
  /**
   * Whether a lane's items of this priority are kept back now (policy.ts `admission`), its
   * namespaces' newcomers or the rest: they then stay queued here, where they hold no worker and
   * decide nothing on state that would be old by their turn; `wake()` when what this depends on
   * changes.
   */
  deferred?: (lane: string, priority: Priority, newcomer: boolean) => Deferral;
  /** Told when an item's run begins (its lane and priority) and when it is done: the seats of its budget. */
  onBegin?: (item: T, lane: string, priority: Priority) => void;
  onDone?: (item: T) => void;
  /**
   * The priority an item takes when added without one (a retry, a reference let go): a
   * delete or an edit stays urgent whoever queues it, not only the watch event that began it.
   */
  priorityOf?: (item: T) => Priority | undefined;
}

export type { Deferral };

/** A namespaced key's namespace (`ns/name`); '' for a cluster-scoped one. */
export const namespaceOfKey = (key: unknown): string => {
  const k = String(key);
  const slash = k.indexOf('/');
  return slash < 0 ? '' : k.slice(0, slash);
};
