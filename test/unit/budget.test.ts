import { describe, expect, it } from 'vitest';
import { Budget, type Priority, withPriority } from '../../src/operator/runtime/scheduler/budget.ts';

function fakeClock() {
  let now = 0;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

describe('budget', () => {
  it('keeps any 60-second window within the account limit of 120 requests', async () => {
    const clock = fakeClock();
    const bucket = new Budget({ perMinute: 120, ...clock });
    const times: number[] = [];
    for (let i = 0; i < 400; i++) {
      await bucket.take();
      times.push(clock.now());
    }
    for (let i = 0; i < times.length; i++) {
      const inWindow = times.filter((t) => t >= times[i]! && t < times[i]! + 60_000).length;
      expect(inWindow).toBeLessThanOrEqual(120);
    }
    // and it goes at (nearly) the full rate: 400 requests in under 205 s, not 222 s
    expect(clock.now()).toBeLessThan(205_000);
    // evenly: under load no caller waits more than one interval for the next slot
    const gaps = times.slice(3).map((t, i) => t - times[i + 2]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(510);
  });

  it('a wall clock stepped back does not hold the callers', async () => {
    let now = 1_000_000;
    const bucket = new Budget({
      perMinute: 120,
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    await bucket.take();
    await bucket.take();
    now -= 3_600_000; // an hour back
    const before = now;
    await bucket.take();
    expect(now - before).toBeLessThan(1000);
  });

  it('at the smallest limits (1, 2, 3 a minute) keeps going, within the limit in any window', async () => {
    for (const perMinute of [1, 2, 3]) {
      const clock = fakeClock();
      const bucket = new Budget({ perMinute, ...clock });
      const times: number[] = [];
      for (let i = 0; i < 10; i++) {
        await bucket.take();
        times.push(clock.now());
      }
      for (const t of times)
        expect(times.filter((u) => u >= t && u < t + 60_000).length, `${perMinute}`).toBeLessThanOrEqual(
          perMinute,
        );
      expect(clock.now(), `${perMinute}`).toBeLessThan((10 / perMinute) * 62_000);
    }
  });

  it('serves a waiting caller whose work became urgent before earlier high ones', async () => {
    const clock = fakeClock();
    const budget = new Budget({ perMinute: 60, burst: 1, ...clock });
    const order: string[] = [];
    await budget.take('high'); // the one request the window has
    const cells = [1, 2, 3].map((n) => ({ priority: 'high' as Priority, n }));
    const done = cells.map((c) => withPriority(c, () => budget.take()).then(() => order.push(`high${c.n}`)));
    cells[2]!.priority = 'urgent';
    budget.reprioritized();
    await Promise.all(done);
    expect(order).toEqual(['high3', 'high1', 'high2']);
  });

  it('serves waiting callers in order', async () => {
    const clock = fakeClock();
    const bucket = new Budget({ perMinute: 60, burst: 1, ...clock });
    const order: number[] = [];
    await Promise.all([1, 2, 3, 4].map((n) => bucket.take().then(() => order.push(n))));
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('serves high-priority callers before low-priority ones that waited longer', async () => {
    const clock = fakeClock();
    const bucket = new Budget({ perMinute: 60, burst: 1, ...clock });
    const order: string[] = [];
    const low = [1, 2, 3].map((n) => bucket.take('low').then(() => order.push(`low${n}`)));
    const high = [1, 2].map((n) => bucket.take('high').then(() => order.push(`high${n}`)));
    await Promise.all([...low, ...high]);
    // the first low caller got the one token there was; then every high caller, then the rest
    expect(order).toEqual(['low1', 'high1', 'high2', 'low2', 'low3']);
    expect(bucket.waitedByPriority.low).toBeGreaterThan(bucket.waitedByPriority.high);
  });

  // a steady stream of creates, or urgent work that never ends (two controllers fighting over an
  // object's spec: an edit war), one a second, each taking the next token
  it.each([
    { stream: 'high' as const, what: 'creates' },
    { stream: 'urgent' as const, what: 'urgent work' },
  ])(
    'does not starve observation: a low caller goes after waiting the maximum, behind $what',
    async ({ stream }) => {
      const clock = fakeClock();
      const bucket = new Budget({ perMinute: 60, burst: 1, maxLowWaitMs: 5000, ...clock });
      const order: string[] = [];
      await bucket.take(stream); // the one token there was
      const low = bucket.take('low').then(() => order.push('low'));
      const others = Array.from({ length: 20 }, (_, i) =>
        bucket.take(stream).then(() => order.push(`${stream}${i}`)),
      );
      await Promise.all([low, ...others]);
      const at = order.indexOf('low');
      expect(at).toBeGreaterThan(0);
      expect(at).toBeLessThanOrEqual(7);
    },
  );

  it('lets observation jump the creates once per maxLowWaitMs in all, however many kinds list', async () => {
    const clock = fakeClock();
    const budget = new Budget({ perMinute: 60, burst: 1, maxLowWaitMs: 10_000, ...clock });
    const order: string[] = [];
    await budget.take('high');
    // nine kinds' lists waiting, and a long run of creates
    const lows = Array.from({ length: 9 }, (_, i) => budget.take('low').then(() => order.push(`low${i}`)));
    const highs = Array.from({ length: 60 }, (_, i) =>
      budget.take('high').then(() => order.push(`high${i}`)),
    );
    await Promise.all(highs);
    // about a minute of creates: six lists went ahead of them, not nine every ten seconds
    const lowsDuringCreates = order.slice(0, order.indexOf('high59')).filter((x) => x.startsWith('low'));
    expect(lowsDuringCreates.length).toBeLessThanOrEqual(7);
    expect(lowsDuringCreates.length).toBeGreaterThanOrEqual(5);
    await Promise.all(lows);
  });

  it('counts as backed up, by priority, once runs hold as many seats as it serves in two seconds', async () => {
    const clock = { now: () => 0, sleep: () => new Promise<void>(() => {}) }; // time stands still
    expect(new Budget({ perMinute: 1, ...clock }).room).toBe(1);
    expect(new Budget({ perMinute: 120, ...clock }).room).toBe(4);
    const budget = new Budget({ perMinute: 60, ...clock });
    expect(budget.room).toBe(2);
    budget.seat('low', 1);
    budget.seat('low', 1);
    // two lists in progress: more observation is kept back, a create or an edit is not
    expect([budget.backedUp('low'), budget.backedUp('high'), budget.backedUp('urgent')]).toEqual([
      true,
      false,
      false,
    ]);
    budget.seat('high', 1);
    budget.seat('high', 1);
    expect([budget.backedUp('high'), budget.backedUp('urgent')]).toEqual([true, false]);
    // a run ends: its seat is room, and whoever kept work back hears it
    let told = 0;
    budget.onRoom = () => told++;
    budget.seat('high', -1);
    expect([budget.backedUp('high'), told]).toEqual([false, 1]);
    expect(new Budget({ perMinute: Infinity }).backedUp('low')).toBe(false);
  });

  it('tells the work a caller belongs to when it has to wait, and whoever asks when one is served', async () => {
    const clock = fakeClock();
    const budget = new Budget({ perMinute: 60, burst: 1, ...clock });
    let rooms = 0;
    budget.onRoom = () => rooms++;
    const waits: string[] = [];
    const cell = (name: string) => ({ priority: 'high' as Priority, onWait: () => waits.push(name) });
    await withPriority(cell('first'), () => budget.take()); // the token there was
    expect(waits).toEqual([]);
    await Promise.all([
      withPriority(cell('second'), () => budget.take()),
      withPriority(cell('third'), () => budget.take()),
    ]);
    expect(waits).toEqual(['second', 'third']);
    expect(rooms).toBe(3);
  });

  it('does nothing when disabled', async () => {
    const bucket = new Budget({ perMinute: Infinity });
    for (let i = 0; i < 1000; i++) await bucket.take();
    expect(bucket.waitedMs).toBe(0);
  });
});
