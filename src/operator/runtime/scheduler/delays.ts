// The work queue's delayed adds: one timer per item, the earlier due time winning; a run that
// begins spends the item's pending delay (it decides the next one), and a run that found
// nothing to do may keep the delay it spent (a stalled object's slow retry).
export class Delays<T> {
  private readonly pending = new Map<T, { at: number; timer: NodeJS.Timeout }>();
  /** When an item in progress was due by a delay that its run's start cleared. */
  private readonly spent = new Map<T, number>();

  private readonly due: (item: T) => void;

  constructor(due: (item: T) => void) {
    this.due = due;
  }

  /** `due(item)` after `ms` (> 0); an earlier pending delay for the item wins. */
  after(item: T, ms: number): void {
    // setTimeout takes at most 2^31 - 1 ms (24.8 days) and fires at once past it
    ms = Math.min(ms, 2 ** 31 - 1);
    const at = Date.now() + ms;
    const w = this.pending.get(item);
    if (w && w.at <= at) return;
    if (w) clearTimeout(w.timer);
    const timer = setTimeout(() => {
      this.pending.delete(item);
      this.due(item);
    }, ms);
    timer.unref();
    this.pending.set(item, { at, timer });
  }

  /**
   * The item's run begins: it decides again when the item is next due (its outcome's delay, a
   * failure's backoff), so a pending delay is spent. At a bulk apply most objects waiting for a
   * reference leave one, a minute long, that would hold a timer and then reconcile an object
   * already in sync.
   */
  spend(item: T): void {
    const w = this.pending.get(item);
    if (!w) return;
    clearTimeout(w.timer);
    this.pending.delete(item);
    this.spent.set(item, w.at);
  }

  /** How long until the delay the item's run spent was due, if it is still ahead. */
  left(item: T): number | undefined {
    const at = this.spent.get(item);
    return at !== undefined && at > Date.now() ? at - Date.now() : undefined;
  }

  /** The item's run is done. */
  ended(item: T): void {
    this.spent.delete(item);
  }

  clear(): void {
    for (const w of this.pending.values()) clearTimeout(w.timer);
    this.pending.clear();
  }
}
