// Why an API call is made decides when it goes: its priority, and the flow (namespace) whose turn
// it takes. The engine knows both; the client need not: they travel with the async context.
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Order of service: `urgent` (a change to something that exists: an edit, a delete), then
 * `high` (other work a user caused: creates), then `low` (background observation).
 */
export type Priority = 'urgent' | 'high' | 'low';
export const PRIORITIES: readonly Priority[] = ['urgent', 'high', 'low'];
/** Lower is served first. */
export const PRIORITY_RANK: Record<Priority, number> = { urgent: 0, high: 1, low: 2 };

/**
 * The priority of a unit of work, raised while it waits when the user changes what it works on,
 * and its flow: the namespace it serves (none for background work of the whole installation).
 */
export interface PriorityCell {
  priority: Priority;
  flow?: string;
  /**
   * Told when one of its calls has to wait for the budget: the work need not hold a worker
   * while it waits (the worker may take other work meanwhile).
   */
  onWait?: () => void;
  /**
   * The first work of a namespace that had none queued nor in progress (the work queue's
   * newcomer): its calls take the newcomer's turn in the budget's queue too.
   */
  fresh?: number;
  /** Set by the budget the work waits at: told that `priority` was raised, it serves the work by it. */
  raised?: () => void;
}

const context = new AsyncLocalStorage<PriorityCell>();
/** Runs `fn` with every API call it makes at the cell's priority, in the cell's flow. */
export const withPriority = <T>(cell: PriorityCell | Priority, fn: () => Promise<T>): Promise<T> =>
  context.run(typeof cell === 'string' ? { priority: cell } : cell, fn);
export const currentCell = (): PriorityCell | undefined => context.getStore();
