import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../src/operator/runtime/scheduler/workqueue.ts';

describe('work queue', () => {
  it('de-duplicates queued items', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands an item to two workers: re-added while processing, it comes back after done()', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.add('a');
    const first = await q.get();
    q.add('a');
    expect(q.length).toBe(0);
    let second: string | undefined;
    void q.get().then((x) => {
      second = x;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(second).toBeUndefined();
    q.done(first!);
    await new Promise((r) => setTimeout(r, 0));
    expect(second).toBe('a');
  });

  it('an edit arriving while the item is processing, after another event, comes back urgent, to the urgent worker', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.add('x');
    const x = await q.get();
    for (const c of ['c1', 'c2', 'c3']) q.add(c, 'high'); // creates waiting for workers
    q.add('x', 'high'); // a watch event of the object being processed
    q.add('x', 'urgent'); // then the user's edit
    const urgentWorker = q.get(true);
    q.done(x!);
    expect(await urgentWorker).toBe('x');
  });

  it('a queued item a user changes goes to the idle urgent worker at once', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    for (const c of ['c1', 'c2', 'o']) q.add(c, 'high');
    const urgentWorker = q.get(true);
    q.add('o', 'urgent');
    expect(await urgentWorker).toBe('o');
    expect(q.length).toBe(2);
  });

  it("an item re-queued without a priority (a retry, a dependent gone) takes its object's: a delete stays urgent", async () => {
    const deleting = new Set(['team/backend']);
    const q = new WorkQueue<string>({
      name: 't',
      priorityOf: (k) => (deleting.has(k) ? 'urgent' : undefined),
    });
    for (let i = 0; i < 500; i++) q.add(`team/create-${i}`);
    const urgentWorker = q.get(true);
    // the route that held the backend is gone: the backend's delete may go on
    q.add('team/backend');
    expect(await urgentWorker).toBe('team/backend');
    // a retry after a failure comes back urgent too, ahead of the creates
    q.addAfter('team/backend', 1);
    q.done('team/backend');
    expect(await q.get(true)).toBe('team/backend');
    expect(q.length).toBe(500);
  });

  it("a run that found nothing to do keeps the delay pending when it began (a stalled object's slow retry)", async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.addAfter('x', 150); // the slow retry of a stall
    q.add('x'); // the watch event of the stall's own status write
    expect(await q.get()).toBe('x');
    q.keepDelay('x'); // that run found the object as its last sync left it
    q.done('x');
    const started = Date.now();
    expect(await q.get()).toBe('x');
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });

  it("an account's backlog of thousands is not walked at every turn while the account is at its cap", async () => {
    let calls = 0;
    const q = new WorkQueue<string>({
      name: 't',
      accountOf: (k) => {
        calls++;
        return k.split('/')[0];
      },
      maxPerAccount: () => 2,
    });
    for (let i = 0; i < 5000; i++) q.add(`t1/x${i}`);
    const held = [await q.get(), await q.get()];
    expect(held).toEqual(['t1/x0', 't1/x1']);
    calls = 0;
    // t1 at its cap: each hand-out to another namespace looks past a few of t1's items only
    for (let i = 0; i < 100; i++) q.add(`u/create-${i}`);
    for (let i = 0; i < 100; i++) q.done((await q.get())!);
    expect(calls).toBeLessThan(100 * 40);
  });

  it('the cap lifted (the last other account gone): a worker waiting takes the items it skipped', async () => {
    let cap = 1;
    const q = new WorkQueue<string>({
      name: 't',
      accountOf: (k) => k.split('/')[0],
      maxPerAccount: () => cap,
    });
    for (const k of ['t/a1', 't/a2', 't/a3']) q.add(k);
    expect(await q.get()).toBe('t/a1');
    const waiting = q.get(); // a2 and a3 skipped: t holds its one
    cap = Number.POSITIVE_INFINITY;
    q.done('t/a1');
    expect(await waiting).toBe('t/a2');
  });

  it('backs off per item exponentially and forgets on success', () => {
    const q = new WorkQueue<string>({ name: 't', baseDelayMs: 5, maxDelayMs: 1000, qps: 1e9, burst: 1e9 });
    expect([1, 2, 3, 4].map(() => q.whenRateLimited('a'))).toEqual([5, 10, 20, 40]);
    expect(q.whenRateLimited('b')).toBe(5);
    for (let i = 0; i < 20; i++) q.whenRateLimited('a');
    expect(q.whenRateLimited('a')).toBe(1000);
    q.forget('a');
    expect(q.whenRateLimited('a')).toBe(5);
  });

  it('keeps the earliest of two delayed adds', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.addAfter('a', 10_000);
    q.addAfter('a', 20);
    await new Promise((r) => setTimeout(r, 60));
    expect(q.length).toBe(1);
  });

  it('drops a delayed add once the item is taken: the run that starts decides when it is next due', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.addAfter('a', 40);
    q.add('a');
    q.done((await q.get())!);
    q.addAfter('b', 40);
    await new Promise((r) => setTimeout(r, 80));
    // a's delay was spent by the run that took it; b was never taken, so its delay stands
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('b');
  });

  it('drains in-flight work on shutdown and then hands out nothing', async () => {
    const q = new WorkQueue<string>({ name: 't' });
    q.add('a');
    const item = await q.get();
    const stopped = q.shutdown(1000);
    setTimeout(() => q.done(item!), 20);
    expect(await stopped).toBe(true);
    expect(await q.get()).toBeUndefined();
  });

  it("hands out users' changes before observation, and promotes an observed item a user then changes", async () => {
    const q = new WorkQueue<string>({ name: 't' });
    for (const k of ['o1', 'o2', 'o3']) q.add(k, 'low');
    q.add('user');
    q.add('o3');
    const order = [];
    for (let i = 0; i < 4; i++) order.push(await q.get());
    expect(order).toEqual(['user', 'o3', 'o1', 'o2']);
    expect(q.length).toBe(0);
  });
  it("a resync's re-checks, queued or in progress, are no pressing work; a change, an event or a create is", async () => {
    const q = new WorkQueue<string>({ name: 't' });
    for (const k of ['a', 'b', 'c']) q.add(k, 'low');
    expect(q.pressing).toBe(0);
    const a = await q.get();
    expect([q.inFlight, q.pressing]).toEqual([1, 0]);
    // the watch event of a status write, queued behind the re-checks
    q.add('d');
    expect(q.pressing).toBe(1);
    const d = await q.get();
    expect([d, q.pressing]).toEqual(['d', 1]);
    q.done(d!);
    expect(q.pressing).toBe(0);
    // a user's edit of the object being re-checked: pressing until processed again
    q.add(a!, 'urgent');
    q.done(a!);
    expect(q.pressing).toBe(1);
    const again = await q.get();
    q.done(again!);
    expect([again, q.pressing, q.length]).toEqual(['a', 0, 2]);
  });

  describe('an account whose budget is backed up: its items not begun stay queued, holding no worker', () => {
    // keys `ns/name`; the account is the name's first letter (s: its budget backed up, for a
    // namespace's first item too while `full`, else with room for it; c: its first check under way)
    const backed = new Set<string>(['s']);
    let full = true;
    const deferring = () =>
      new WorkQueue<string>({
        name: 't',
        accountOf: (k) => k.split('/')[1]![0],
        // the lane of an item is its account
        deferred: (a, _priority, newcomer) => {
          if (a === 'c') return 'start';
          return backed.has(a) && (full || !newcomer) ? 'budget' : false;
        },
      });
    const pending = (p: Promise<string | undefined>) =>
      Promise.race([p, new Promise<string>((r) => setTimeout(() => r('(waiting)'), 10))]);

    it('skips them, keeps their place, and hands them out once woken with room', async () => {
      backed.add('s');
      const q = deferring();
      for (const k of ['t/s1', 't/s2', 't/f1', 'u/f2']) q.add(k);
      expect([await q.get(), await q.get()]).toEqual(['t/f1', 'u/f2']);
      const worker = q.get();
      expect(await pending(worker)).toBe('(waiting)');
      q.wake(); // served, but still backed up
      expect(await pending(worker)).toBe('(waiting)');
      backed.delete('s');
      q.wake();
      expect(await worker).toBe('t/s1');
      expect(q.length).toBe(1);
    });

    it("a namespace's first item still starts while the budget has a newcomer's room (its turn among those waiting)", async () => {
      backed.add('s');
      full = false;
      const q = deferring();
      const worker = q.get();
      const newcomer = q.getNewcomer();
      q.add('t/s1');
      expect(await worker).toBe('t/s1');
      // t has one in progress: its next item waits for room like any other
      q.add('t/s2');
      expect(await pending(newcomer)).toBe('(waiting)');
      expect(q.length).toBe(1);
      // another namespace's first item goes to the newcomer worker
      q.add('u/s3');
      expect(await newcomer).toBe('u/s3');
      full = true;
    });

    it('an item kept back for its start (its account not checked yet) goes to no worker, the newcomer neither', async () => {
      const q = deferring();
      const newcomer = q.getNewcomer();
      q.add('t/c1');
      expect(await pending(newcomer)).toBe('(waiting)');
      expect(await pending(q.get())).toBe('(waiting)');
      expect(q.length).toBe(1);
    });
  });

  describe('items in progress per account: an account whose API hangs holds a few workers at most', () => {
    // keys `ns/name`; the account is the name's first letter (a: hung, b: healthy)
    const capped = (cap: number) =>
      new WorkQueue<string>({ name: 't', accountOf: (k) => k.split('/')[1]![0], maxPerAccount: () => cap });
    const pending = (p: Promise<string | undefined>) =>
      Promise.race([p, new Promise<string>((r) => setTimeout(() => r('(waiting)'), 10))]);

    it('skips the items of an account at its cap, in the same namespace too, and keeps their place', async () => {
      const q = capped(2);
      for (const k of ['t/a1', 't/a2', 't/a3', 't/a4', 't/b1', 't/b2']) q.add(k);
      const taken = [await q.get(), await q.get(), await q.get(), await q.get()];
      // the accounts take turns (each its own lane)
      expect(taken).toEqual(['t/a1', 't/b1', 't/a2', 't/b2']);
      // nothing but account a's items left, and a holds its two: the next worker waits
      const next = q.get();
      expect(await pending(next)).toBe('(waiting)');
      q.done('t/b1');
      expect(await pending(next)).toBe('(waiting)');
      // one of a's items finishes: a's next one goes to the waiting worker, in its order
      q.done('t/a1');
      expect(await next).toBe('t/a3');
    });

    it('an item added for a waiting worker goes to it unless its account is at the cap', async () => {
      const q = capped(1);
      q.add('t/a1');
      expect(await q.get()).toBe('t/a1');
      const worker = q.get();
      q.add('t/a2');
      expect(await pending(worker)).toBe('(waiting)');
      q.add('u/b1');
      expect(await worker).toBe('u/b1');
      expect(q.length).toBe(1);
    });

    it('the urgent and newcomer workers respect the cap as well', async () => {
      const q = capped(1);
      q.add('t/a1');
      expect(await q.get()).toBe('t/a1');
      q.add('t/a2', 'urgent');
      q.add('u/a3');
      const urgent = q.get(true);
      const newcomer = q.getNewcomer();
      expect(await pending(urgent)).toBe('(waiting)');
      expect(await pending(newcomer)).toBe('(waiting)');
      // u has an item queued: not a newcomer; v is
      q.add('u/b1');
      expect(await pending(newcomer)).toBe('(waiting)');
      q.add('v/b2');
      expect(await newcomer).toBe('v/b2');
      expect(q.length).toBe(3);
      q.done('t/a1');
      expect(await urgent).toBe('t/a2');
    });

    it('without a cap (one account), every worker may take the same account’s items', async () => {
      const q = capped(Number.POSITIVE_INFINITY);
      for (const k of ['t/a1', 't/a2', 't/a3']) q.add(k);
      expect([await q.get(), await q.get(), await q.get()]).toEqual(['t/a1', 't/a2', 't/a3']);
    });
  });
});
