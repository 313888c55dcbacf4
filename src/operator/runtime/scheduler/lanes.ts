// The work queue's waiting items, in lanes: one per account and gate (QueueOptions.laneOf), each
// a FairQueue of its namespaces by priority. Whether an item may begin depends on its lane, its
// priority and whether its namespace is a newcomer (policy.ts `admission`), never on the item
// itself: so a take asks each lane a few questions and looks at no item it would refuse, and
// its cost is the number of lanes (accounts), whatever the backlog. The lane with the most
// pressing admissible work goes first; lanes with the same take turns.
import { FairQueue } from './fair-queue.ts';
import { PRIORITIES, PRIORITY_RANK, type Priority } from './priority.ts';

interface Lane<T> {
  key: string;
  /** The account whose cap the lane's items count against (undefined: none). */
  cap?: string;
  queue: FairQueue<T>;
}

export class Lanes<T> {
  /** Lanes with items, in turn order (the one served goes to the back). */
  private readonly lanes = new Map<string, Lane<T>>();
  private readonly laneOf = new Map<T, Lane<T>>();
  /** Items queued per flow, across lanes (whether a namespace has work waiting anywhere). */
  private readonly perFlow = new Map<string, number>();
  private readonly flowOf = new Map<T, string>();

  get size(): number {
    return this.laneOf.size;
  }

  count(priority: Priority): number {
    let n = 0;
    for (const l of this.lanes.values()) n += l.queue.count(priority);
    return n;
  }

  /** Namespaces taking turns at this priority (in all lanes). */
  flows(priority: Priority): number {
    let n = 0;
    for (const l of this.lanes.values()) n += l.queue.flows(priority);
    return n;
  }

  hasFlow(flow: string): boolean {
    return this.perFlow.has(flow);
  }

  priorityOf(item: T): Priority | undefined {
    return this.laneOf.get(item)?.queue.priorityOf(item);
  }

  isFresh(item: T): boolean {
    return !!this.laneOf.get(item)?.queue.isFresh(item);
  }

  *items(): Iterable<T> {
    yield* this.laneOf.keys();
  }

  /** Queues an item in its lane (an item queued elsewhere moves). */
  push(
    item: T,
    priority: Priority,
    flow: string,
    since: number | undefined,
    lane: string,
    cap?: string,
  ): void {
    this.remove(item);
    let l = this.lanes.get(lane);
    if (!l) {
      l = { key: lane, cap, queue: new FairQueue<T>('kept') };
      this.lanes.set(lane, l);
    }
    l.queue.push(item, priority, flow, since);
    this.laneOf.set(item, l);
    this.flowOf.set(item, flow);
    this.perFlow.set(flow, (this.perFlow.get(flow) ?? 0) + 1);
  }

  remove(item: T): boolean {
    const l = this.laneOf.get(item);
    if (!l) return false;
    l.queue.remove(item);
    this.forget(item, l);
    return true;
  }

  private forget(item: T, l: Lane<T>): void {
    this.laneOf.delete(item);
    const flow = this.flowOf.get(item)!;
    this.flowOf.delete(item);
    const n = this.perFlow.get(flow)! - 1;
    if (n > 0) this.perFlow.set(flow, n);
    else this.perFlow.delete(flow);
    if (!l.queue.size) this.lanes.delete(l.key);
  }

  /**
   * The next item that may begin: `admit` says of a lane, a priority and newcomers or not whether
   * they may; `capped` whether an account holds as many workers as it may. The lane whose best
   * admissible priority is the highest goes (in turn order among equals), and within it its
   * FairQueue decides. `onlyUrgent`, `onlyFresh`: the urgent and the newcomer workers' takes.
   * Gives the item, its priority, since when its namespace was a newcomer (if it was), its lane.
   */
  shift(
    admit: (lane: string, priority: Priority, fresh: boolean) => boolean,
    capped: (account: string) => boolean,
    onlyUrgent = false,
    onlyFresh = false,
  ): [T, Priority, number | undefined, string] | undefined {
    let best: Lane<T> | undefined;
    let bestRank = Infinity;
    for (const l of this.lanes.values()) {
      if (l.cap !== undefined && capped(l.cap)) continue;
      for (const p of onlyUrgent ? (['urgent'] as const) : PRIORITIES) {
        if (PRIORITY_RANK[p] >= bestRank) break;
        if (!l.queue.count(p)) continue;
        if ((!onlyFresh && admit(l.key, p, false)) || (l.queue.freshFlows(p) && admit(l.key, p, true))) {
          best = l;
          bestRank = PRIORITY_RANK[p];
          break;
        }
      }
      if (bestRank === 0) break;
    }
    if (!best) return undefined;
    const got = best.queue.shiftWhere((p, fresh) => admit(best.key, p, fresh), onlyUrgent, onlyFresh);
    if (!got) return undefined;
    this.forget(got[0], best);
    if (this.lanes.has(best.key)) {
      this.lanes.delete(best.key);
      this.lanes.set(best.key, best);
    }
    return [got[0], got[1], got[2], best.key];
  }
}
