// What this process remembers of each object, in one place: the cache can lag behind its
// own writes, and some decisions (a second DELETE, a repeated Event) depend on what it did.
import type { PriorityCell } from '../scheduler/budget.ts';
import { remoteDigest } from '../state/fingerprint.ts';

export { remoteDigest, textDigest } from '../state/fingerprint.ts';

/**
 * A status's fingerprint, the same way. kube-apiserver writes an object's keys in one order, so
 * an equal status has an equal fingerprint; were it ever otherwise, that costs one more sync
 * (which writes nothing), never a missed change.
 */
export const statusDigest = (status: unknown): string => (status === undefined ? '' : remoteDigest(status));

/** What this process last did to an object, so an unchanged object costs nothing until its resync. */
export interface LastSync {
  at: number;
  generation?: number;
  id?: string;
  stalled?: boolean;
  digests?: Record<string, string>;
  /**
   * The status as this process last wrote or found it (statusDigest): anything else was
   * written by someone else. A fingerprint, not the status: the cache holds that already.
   */
  status?: string;
  /** The object's resourceVersion after that. */
  resourceVersion?: string;
  /** The remote resource as that sync left it (remoteDigest): a list showing the same is no news. */
  remote?: string;
}

export interface Memo {
  /** What this process last applied. */
  last?: LastSync;
  /** When this process last finished writing the remote resource: older snapshots are stale for it. */
  lastRemoteWrite?: number;
  /** Bumped by readAfresh(): a reconcile that started before must not record its result. */
  resets: number;
  /**
   * The id in status but not yet in the id annotation, with the time it reached status. The
   * annotation is what a restore without status (Velero's default) finds the remote resource
   * by; a crash needs neither (the create-pending mark and status.id cover it). So it is
   * written when the queues are idle (recordIds): a bulk apply's objects go Ready first.
   */
  idToRecord?: { id: string; since: number };
  /** When a new object began waiting for a reference or a Secret, until it says so in status. */
  waitingSince?: number;
  /** The budget priority of the reconcile in flight. */
  running?: PriorityCell;
  /**
   * The remote resource this process deleted while the finalizer is not yet removed: a retry
   * (the finalizer patch met a newer version of the object) does not DELETE again.
   */
  deletedRemote?: string;
  /** Told (by an Event) that the API is unavailable, until it gets past it. */
  unavailableNoted?: boolean;
}

/**
 * A memo with every field in place from the start: one added later moves an object's fields
 * out of line (a separate array per memo, at thousands of objects a tenth of their memory).
 */
const newMemo = (running?: PriorityCell): Memo => ({
  last: undefined,
  lastRemoteWrite: undefined,
  resets: 0,
  idToRecord: undefined,
  waitingSince: undefined,
  running,
  deletedRemote: undefined,
  unavailableNoted: undefined,
});

/** One memo per object, by key. */
export class Memos {
  private readonly byKey = new Map<string, Memo>();
  /**
   * The memos with an id waiting for its annotation, oldest first: the idle loop looks every
   * second, and a scan of every memo at 10,000 objects cost that much each time for none.
   */
  private readonly toRecord = new Map<string, Memo>();

  /**
   * The last create that failed, by object: when it failed, whether the API's own answer (or a
   * connection never made) says it was not done, and when it is looked for next. Kept until the
   * create succeeds, its resource is found, or the object goes.
   */
  readonly failedCreates = new Map<string, { at: number; answered?: boolean; nextLook?: number }>();

  /** The object's memo, made when first needed. */
  of(key: string): Memo {
    let m = this.byKey.get(key);
    if (!m) {
      m = newMemo();
      this.byKey.set(key, m);
    }
    return m;
  }

  peek(key: string): Memo | undefined {
    return this.byKey.get(key);
  }

  /** A new id waits for its annotation behind those waiting already (a changed one keeps its place). */
  recordLater(key: string, id: string, now: number): void {
    const m = this.of(key);
    if (m.idToRecord?.id === id) return;
    if (!m.idToRecord) this.toRecord.set(key, m);
    m.idToRecord = { id, since: now };
  }

  /** The id annotation is written (`id`'s, if given), or no longer wanted. */
  recorded(key: string, id?: string): void {
    const m = this.byKey.get(key);
    if (id !== undefined && m?.idToRecord && m.idToRecord.id !== id) return;
    if (m) m.idToRecord = undefined;
    this.toRecord.delete(key);
  }

  /** The ids waiting for their annotation, oldest first. */
  idsToRecord(): [string, { id: string; since: number }][] {
    return [...this.toRecord].flatMap(([k, m]) => (m.idToRecord ? [[k, m.idToRecord] as const] : [])) as [
      string,
      { id: string; since: number },
    ][];
  }

  /** The cache may have missed this process's work: the next reconcile reads afresh. */
  readAfresh(key: string): void {
    const m = this.of(key);
    m.last = undefined;
    m.resets++;
  }

  /** Drops what is kept for an object that is gone (but for a reconcile still in flight). */
  drop(key: string): void {
    this.failedCreates.delete(key);
    const m = this.byKey.get(key);
    if (!m) return;
    this.toRecord.delete(key);
    if (m.running) this.byKey.set(key, newMemo(m.running));
    else this.byKey.delete(key);
  }
}
