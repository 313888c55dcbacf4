// Fair queuing within priorities (the API server's Priority and Fairness, reduced to what one
// operator needs). Every item belongs to a flow (a namespace). Within a priority, the flows
// that have items take turns, one item a turn: every item costs about the same (one reconcile,
// one request), so this is deficit round robin with a quantum of one. A flow with one item
// waits for one turn of each other busy flow, not for their backlogs.
//
// Between priorities, urgent work (edits, deletes) goes before creates, but not for ever: while
// both wait, creates get one turn after every URGENT_TURNS urgent ones, as APF's priority
// levels each keep a share. Otherwise, in an account two namespaces share, one namespace's
// bulk delete or stream of edits would hold the other's creates for as long as it lasts. An
// edit still waits for one create at most; observation (`low`) comes after both.
//
// The newcomer's turn: a flow pushed as `fresh` (a namespace with nothing queued nor in progress
// until now) also waits on a stack of newcomers, and every other turn of a priority goes to the
// newest of them. While a thousand namespaces each hold a backlog, one more namespace's first
// item goes within two turns instead of a round of a thousand; the round robin still gets every
// other turn, so the backlogs are not starved by a stream of new namespaces, and older newcomers
// are served by it in their order.
//
// Every operation is O(1) amortised, whatever the number of flows or items: the busy flows of a
// priority are a Map in turn order (a flow just served goes to the back, a new one joins at the
// back), each flow's items a Set in arrival order, so removing an item from the middle is cheap;
// the newcomers' stack drops flows served or gone when it meets them.
import { PRIORITIES, type Priority } from './priority.ts';

/** While urgent and high items both wait, urgent ones take this many turns for each high one. */
export const URGENT_TURNS = 3;
const HIGH_FIRST: readonly Priority[] = ['high', 'urgent', 'low'];

interface Place {
  priority: Priority;
  flow: string;
}

/** Entries of newcomer flows served meanwhile kept on the stack, past its live ones, before it is compacted. */
const STALE_MAX = 32;

export class FairQueue<T> {
  private readonly levels: Record<Priority, Map<string, Set<T>>> = {
    urgent: new Map(),
    high: new Map(),
    low: new Map(),
  };
  private readonly counts: Record<Priority, number> = { urgent: 0, high: 0, low: 0 };
  private readonly places = new Map<T, Place>();
  /** Urgent items handed out in a row while high ones waited. */
  private urgentRun = 0;
  /**
   * Per priority, the flows pushed fresh and not served since (`set`: since when each is a
   * newcomer), and the same as a stack ordered by that time, newest last (entries of flows
   * served since are dropped where they are met).
   */
  private readonly fresh: Record<
    Priority,
    { stack: { flow: string; since: number }[]; set: Map<string, number> }
  > = {
    urgent: { stack: [], set: new Map() },
    high: { stack: [], set: new Map() },
    low: { stack: [], set: new Map() },
  };
  /** Per priority, whether its last turn went to a newcomer. */
  private readonly lastFresh: Record<Priority, boolean> = { urgent: false, high: false, low: false };
  /**
   * `alternate`: every other turn goes to the newest newcomer (the budget's callers). `kept`: the
   * newest newcomer goes only while the rest is kept back (`ok` refuses them and lets newcomers
   * go: the work queue under its budget's pressure); otherwise the plain turns, in arrival order,
   * so a bulk apply's kinds meet their namespaces in one order and references are found ready.
   */
  private readonly newcomers: 'alternate' | 'kept';

  constructor(newcomers: 'alternate' | 'kept' = 'alternate') {
    this.newcomers = newcomers;
  }

  get size(): number {
    return this.places.size;
  }

  /** Items queued at this priority. */
  count(priority: Priority): number {
    return this.counts[priority];
  }

  /** Flows with items at this priority (how many take turns). */
  flows(priority: Priority): number {
    return this.levels[priority].size;
  }

  has(item: T): boolean {
    return this.places.has(item);
  }

  priorityOf(item: T): Priority | undefined {
    return this.places.get(item)?.priority;
  }

  /** Newcomer flows at this priority. */
  freshFlows(priority: Priority): number {
    return this.fresh[priority].set.size;
  }

  /** Whether the item's flow is a newcomer at the item's priority. */
  isFresh(item: T): boolean {
    const place = this.places.get(item);
    return !!place && this.fresh[place.priority].set.has(place.flow);
  }

  /** Whether the flow has items at any priority. */
  hasFlow(flow: string): boolean {
    return PRIORITIES.some((p) => this.levels[p].has(flow));
  }

  /**
   * Queues an item at the back of its flow; an item already queued is moved there. `since`: the
   * flow is a newcomer since then (see the newcomer's turn), if it has no items at this priority
   * yet; the newest newcomer goes first.
   */
  push(item: T, priority: Priority, flow: string, since?: number): void {
    this.remove(item);
    const level = this.levels[priority];
    let items = level.get(flow);
    if (!items) {
      items = new Set();
      level.set(flow, items);
      if (since !== undefined) {
        const f = this.fresh[priority];
        f.set.set(flow, since);
        // in order of `since`: mostly the newest, so the place is found at the top
        let i = f.stack.length;
        while (i > 0 && f.stack[i - 1]!.since > since) i--;
        f.stack.splice(i, 0, { flow, since });
        // entries of flows served meanwhile stay until met: keep them from piling up
        if (f.stack.length > 2 * f.set.size + STALE_MAX)
          f.stack = f.stack.filter((e) => f.set.get(e.flow) === e.since);
      }
    }
    items.add(item);
    this.counts[priority]++;
    this.places.set(item, { priority, flow });
  }

  /** Takes an item out of the queue, wherever it is; false if it was not queued. */
  remove(item: T): boolean {
    const place = this.places.get(item);
    if (!place) return false;
    const level = this.levels[place.priority];
    const items = level.get(place.flow)!;
    items.delete(item);
    if (!items.size) {
      level.delete(place.flow);
      this.fresh[place.priority].set.delete(place.flow);
    }
    this.counts[place.priority]--;
    this.places.delete(item);
    return true;
  }

  /** The highest priority with items. */
  top(): Priority | undefined {
    for (const p of PRIORITIES) if (this.counts[p]) return p;
    return undefined;
  }

  /** The next item: the first of the flow whose turn it is, at the priority whose turn it is. */
  shift(onlyUrgent = false): T | undefined {
    return this.shiftWhere(undefined, onlyUrgent)?.[0];
  }

  /**
   * The next item at the priority whose turn it is (the highest, unless high's share is due) or
   * else the next that has one (only `urgent` with `onlyUrgent`), among those `ok` lets go: a
   * priority's newcomers (`fresh`) and the rest are let go or not as a whole (the queue's items of
   * one lane share one account and gate), so no item is looked at to be refused. Every other turn
   * of a priority goes to its newest newcomer; `onlyFresh`: newcomers only.
   */
  shiftWhere(
    ok?: (priority: Priority, fresh: boolean) => boolean,
    onlyUrgent = false,
    onlyFresh = false,
  ): [T, Priority, number | undefined] | undefined {
    const order = onlyUrgent
      ? (['urgent'] as const)
      : this.counts.high && this.urgentRun >= URGENT_TURNS
        ? HIGH_FIRST
        : PRIORITIES;
    for (const priority of order) {
      const level = this.levels[priority];
      if (!level.size) continue;
      const okOld = !onlyFresh && (ok?.(priority, false) ?? true);
      const okNew = ok?.(priority, true) ?? true;
      const turn = !okOld || (this.newcomers === 'alternate' && !this.lastFresh[priority]);
      if (okNew && turn && this.fresh[priority].set.size) {
        const got = this.shiftFresh(priority);
        if (got) return got;
      }
      if (!okOld) continue;
      const [flow, items] = level.entries().next().value as [string, Set<T>];
      return this.served(items.values().next().value as T, priority, flow, false);
    }
    return undefined;
  }

  /** The first item of the newest newcomer flow at this priority, if any. */
  private shiftFresh(priority: Priority): [T, Priority, number | undefined] | undefined {
    const { stack, set } = this.fresh[priority];
    // flows served or gone since they were pushed are dropped where they are met
    const live = (e: { flow: string; since: number }) => set.get(e.flow) === e.since;
    while (stack.length && !live(stack[stack.length - 1]!)) stack.pop();
    const flow = stack[stack.length - 1]?.flow;
    if (flow === undefined) return undefined;
    const first = this.levels[priority].get(flow)!.values().next().value as T;
    return this.served(first, priority, flow, true);
  }

  /**
   * Takes the item out and moves its flow to the back of the turns: it has had this one. The
   * third value: since when the flow was a newcomer, if it was (`newcomerTurn`: the turn was the
   * newcomer's).
   */
  private served(
    item: T,
    priority: Priority,
    flow: string,
    newcomerTurn: boolean,
  ): [T, Priority, number | undefined] {
    const level = this.levels[priority];
    const items = level.get(flow)!;
    const since = this.fresh[priority].set.get(flow);
    this.fresh[priority].set.delete(flow);
    this.remove(item);
    if (level.has(flow)) {
      level.delete(flow);
      level.set(flow, items);
    }
    this.lastFresh[priority] = newcomerTurn;
    this.urgentRun = priority === 'urgent' && this.counts.high ? this.urgentRun + 1 : 0;
    return [item, priority, since];
  }

  /** A flow's items at this priority, in arrival order. */
  flow(priority: Priority, flow: string): ReadonlySet<T> {
    return this.levels[priority].get(flow) ?? new Set();
  }

  /** Every item queued. */
  items(): Iterable<T> {
    return this.places.keys();
  }

  /** The first item of each flow at this priority, in turn order. */
  *heads(priority: Priority): Iterable<T> {
    for (const items of this.levels[priority].values()) yield items.values().next().value as T;
  }
}
