import { describe, expect, it } from 'vitest';
import { Budget, withPriority } from '../../src/operator/runtime/scheduler/budget.ts';
import { FairQueue } from '../../src/operator/runtime/scheduler/fair-queue.ts';
import type { Priority } from '../../src/operator/runtime/scheduler/priority.ts';
import { WorkQueue } from '../../src/operator/runtime/scheduler/workqueue.ts';

// An item is `flow/name@priority` (priority `high` when left out); the queue hands them out in `order`.
type Row = { name: string; pushed: string[]; removed?: string[]; order: string[] };
const parse = (s: string) => {
  const [key, priority = 'high'] = s.split('@');
  return { key: key!, priority: priority as Priority, flow: key!.split('/')[0]! };
};

const rows: Row[] = [
  { name: 'one flow: in order of arrival', pushed: ['a/1', 'a/2', 'a/3'], order: ['a/1', 'a/2', 'a/3'] },
  {
    name: 'a flow with one item waits one turn, not for the backlog',
    pushed: ['bulk/1', 'bulk/2', 'bulk/3', 'bulk/4', 'small/1'],
    order: ['bulk/1', 'small/1', 'bulk/2', 'bulk/3', 'bulk/4'],
  },
  {
    name: 'three flows take turns, each in its own order',
    pushed: ['a/1', 'a/2', 'a/3', 'b/1', 'b/2', 'c/1'],
    order: ['a/1', 'b/1', 'c/1', 'a/2', 'b/2', 'a/3'],
  },
  {
    name: 'a flow that joins goes to the back of the turns',
    pushed: ['a/1', 'a/2', 'b/1', 'b/2', 'c/1'],
    order: ['a/1', 'b/1', 'c/1', 'a/2', 'b/2'],
  },
  {
    name: 'priorities keep their meaning: an edit before a create, both before observation',
    pushed: ['bulk/1@low', 'bulk/2', 'bulk/3', 'small/1@low', 'other/1@urgent', 'small/2'],
    order: ['other/1', 'bulk/2', 'small/2', 'bulk/3', 'bulk/1', 'small/1'],
  },
  {
    name: 'flows take turns within each priority apart',
    pushed: ['a/1@urgent', 'a/2@urgent', 'b/1@urgent', 'a/3', 'b/2', 'b/3'],
    order: ['a/1', 'b/1', 'a/2', 'a/3', 'b/2', 'b/3'],
  },
  {
    name: 'urgent work does not hold creates for ever: after three urgent turns, one create',
    pushed: ['a/1@urgent', 'a/2@urgent', 'a/3@urgent', 'a/4@urgent', 'a/5@urgent', 'b/1', 'b/2'],
    order: ['a/1', 'a/2', 'a/3', 'b/1', 'a/4', 'a/5', 'b/2'],
  },
  {
    name: 'urgent work before creates while creates have had their turn; observation after both',
    pushed: ['c/1@low', 'a/1@urgent', 'b/1', 'a/2@urgent', 'a/3@urgent', 'a/4@urgent', 'a/5@urgent', 'b/2'],
    order: ['a/1', 'a/2', 'a/3', 'b/1', 'a/4', 'a/5', 'b/2', 'c/1'],
  },
  {
    name: 'an item taken out (moved up elsewhere) is not handed out, its flow keeps its turn',
    pushed: ['a/1', 'a/2', 'b/1', 'c/1'],
    removed: ['a/1'],
    order: ['a/2', 'b/1', 'c/1'],
  },
  {
    name: 'a flow whose last item is taken out leaves the turns',
    pushed: ['a/1', 'b/1', 'c/1', 'c/2'],
    removed: ['b/1'],
    order: ['a/1', 'c/1', 'c/2'],
  },
  {
    name: 'cluster-scoped work is one flow of its own',
    pushed: ['x', 'y', 'a/1', 'a/2'],
    order: ['x', 'a/1', 'y', 'a/2'],
  },
];

describe('fair queue: the order of service', () => {
  for (const row of rows)
    it(row.name, () => {
      const q = new FairQueue<string>();
      for (const s of row.pushed) {
        const { key, priority, flow } = parse(s);
        q.push(key, priority, key.includes('/') ? flow : '');
      }
      for (const r of row.removed ?? []) expect(q.remove(r)).toBe(true);
      const out: string[] = [];
      for (let k = q.shift(); k !== undefined; k = q.shift()) out.push(k);
      expect(out).toEqual(row.order);
      expect(q.size).toBe(0);
    });

  it('only urgent items when asked for only those', () => {
    const q = new FairQueue<string>();
    q.push('a/1', 'high', 'a');
    q.push('b/1', 'urgent', 'b');
    expect(q.shift(true)).toBe('b/1');
    expect(q.shift(true)).toBeUndefined();
    expect(q.shift()).toBe('a/1');
  });

  it('urgent items handed out while no create waited do not use up a create’s turn', () => {
    const q = new FairQueue<string>();
    for (const k of ['a/1', 'a/2', 'a/3', 'a/4']) q.push(k, 'urgent', 'a');
    expect([q.shift(), q.shift(), q.shift()]).toEqual(['a/1', 'a/2', 'a/3']);
    q.push('b/1', 'high', 'b');
    q.push('a/5', 'urgent', 'a');
    expect([q.shift(), q.shift(), q.shift()]).toEqual(['a/4', 'a/5', 'b/1']);
  });

  it('the urgent-only worker takes no create even when a create’s turn is due', () => {
    const q = new FairQueue<string>();
    for (const k of ['a/1', 'a/2', 'a/3', 'a/4']) q.push(k, 'urgent', 'a');
    q.push('b/1', 'high', 'b');
    expect([q.shift(true), q.shift(true), q.shift(true), q.shift(true)]).toEqual([
      'a/1',
      'a/2',
      'a/3',
      'a/4',
    ]);
    expect(q.shift(true)).toBeUndefined();
    expect(q.shift()).toBe('b/1');
  });
});

function fakeClock() {
  let now = 0;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

describe('fair share of the API budget', () => {
  it("a namespace's one call goes next, not after another namespace's waiting calls", async () => {
    const budget = new Budget({ perMinute: 60, burst: 1, ...fakeClock() });
    const order: string[] = [];
    await budget.take('high');
    const call = (flow: string, n: number) =>
      withPriority({ priority: 'high', flow }, () => budget.take()).then(() => order.push(`${flow}${n}`));
    const bulk = Array.from({ length: 6 }, (_, i) => call('bulk', i));
    const small = call('small', 0);
    await Promise.all([...bulk, small]);
    expect(order.slice(0, 3)).toEqual(['bulk0', 'small0', 'bulk1']);
  });

  it('an explicit priority keeps the caller namespace', async () => {
    const budget = new Budget({ perMinute: 60, burst: 1, ...fakeClock() });
    const order: string[] = [];
    await budget.take('high');
    const call = (flow: string, n: number) =>
      withPriority({ priority: 'high', flow }, () => budget.take('low')).then(() =>
        order.push(`${flow}${n}`),
      );
    await Promise.all([call('a', 0), call('a', 1), call('a', 2), call('b', 0)]);
    expect(order).toEqual(['a0', 'b0', 'a1', 'a2']);
  });

  it('a raised caller is served by its new priority, in its own namespace', async () => {
    const budget = new Budget({ perMinute: 60, burst: 1, ...fakeClock() });
    const order: string[] = [];
    await budget.take('high');
    const cells = [0, 1, 2].map((n) => ({ priority: 'high' as Priority, flow: 'bulk', n }));
    const edit = { priority: 'high' as Priority, flow: 'team', n: 0 };
    const done = [...cells, edit].map((c) =>
      withPriority(c, () => budget.take()).then(() => order.push(`${c.flow}${c.n}`)),
    );
    edit.priority = 'urgent';
    budget.reprioritized();
    expect(budget.queued).toEqual({ urgent: 1, high: 3, low: 0 });
    await Promise.all(done);
    expect(order[0]).toBe('team0');
  });

  it("in a shared account, one namespace's endless urgent calls leave another namespace's creates a share", async () => {
    const budget = new Budget({ perMinute: 60, burst: 1, ...fakeClock() });
    const order: string[] = [];
    await budget.take('high');
    // a tenant that keeps edits, deletes or requested reconciles coming: as soon as one of its
    // calls is served, another one waits (as many as the workers)
    let stop = false;
    let served = 0;
    const stream = async (): Promise<void> => {
      // (bounded, so that a budget that starves the creates ends the test instead of hanging it)
      while (!stop && served < 200) {
        await withPriority({ priority: 'urgent', flow: 'loud' }, () => budget.take());
        order.push('loud');
        served++;
      }
    };
    const loud = [stream(), stream(), stream(), stream()];
    const creates = [0, 1, 2, 3].map((n) =>
      withPriority({ priority: 'high', flow: 'quiet' }, () => budget.take()).then(() =>
        order.push(`quiet${n}`),
      ),
    );
    await Promise.all(creates);
    stop = true;
    await Promise.all(loud);
    // each create after at most three urgent calls: the quiet namespace has a quarter of the budget
    const at = order.map((o, i) => (o.startsWith('quiet') ? i : -1)).filter((i) => i >= 0);
    expect(at).toEqual([3, 7, 11, 15]);
    expect(served).toBeGreaterThanOrEqual(12);
  });

  it('tells each call served and how long it waited', async () => {
    const served: [Priority, number][] = [];
    const budget = new Budget({
      perMinute: 60,
      burst: 1,
      ...fakeClock(),
      onServed: (p, ms) => served.push([p, ms]),
    });
    await Promise.all([budget.take('high'), budget.take('low')]);
    expect(served.map(([p]) => p)).toEqual(['high', 'low']);
    expect(served[0]![1]).toBe(0);
    // one interval at 60 a minute with a burst of one (a little over a second)
    expect(served[1]![1]).toBeGreaterThanOrEqual(1000);
    expect(served[1]![1]).toBeLessThan(1100);
  });
});

describe('fair share of the workers', () => {
  it("a namespace's one object is handed out next, before another namespace's backlog", async () => {
    const q = new WorkQueue({ name: 'test' });
    for (let i = 0; i < 100; i++) q.add(`bulk/p${i}`);
    q.add('small/p0');
    expect(q.flows).toBe(2);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['bulk/p0', 'small/p0', 'bulk/p1']);
  });

  it("among a thousand namespaces' backlogs kept back for their budget, one more namespace's item goes next", async () => {
    // the budget's seats are taken: only a newcomer namespace's first item may begin
    let backedUp = false;
    const q = new WorkQueue({
      name: 'test',
      accountOf: () => 'a',
      deferred: (_lane, _priority, newcomer) => (backedUp && !newcomer ? 'budget' : false),
    });
    for (let i = 0; i < 1000; i++) for (let j = 0; j < 3; j++) q.add(`ns${i}/p${j}`);
    // without pressure, the plain turns in the order the namespaces came
    expect([await q.get(), await q.get()]).toEqual(['ns0/p0', 'ns1/p0']);
    backedUp = true;
    q.add('late/p0');
    expect(await q.get()).toBe('late/p0');
    // the namespaces' first items are newcomers too: the newest first, one per namespace
    expect([await q.get(), await q.get()]).toEqual(['ns999/p0', 'ns998/p0']);
    // no pressure: the turns again, where they were
    backedUp = false;
    expect(await q.get()).toBe('ns2/p0');
  });

  it("another namespace's bulk delete (urgent) leaves the workers to a create one turn in four", async () => {
    const q = new WorkQueue({ name: 'test' });
    for (let i = 0; i < 100; i++) q.add(`bulk/p${i}`, 'urgent');
    q.add('small/p0');
    const got: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) got.push(await q.get());
    expect(got).toEqual(['bulk/p0', 'bulk/p1', 'bulk/p2', 'small/p0', 'bulk/p3']);
  });

  it('an edit moved up goes to the urgent turn of its namespace', async () => {
    const q = new WorkQueue({ name: 'test' });
    for (let i = 0; i < 5; i++) q.add(`bulk/p${i}`, 'urgent');
    q.add('team/p0', 'low');
    q.add('team/p0', 'urgent');
    expect([await q.get(), await q.get()]).toEqual(['bulk/p0', 'team/p0']);
  });

  it("a namespace with nothing in progress gets the newcomer worker at once, while the others' work is in progress", async () => {
    const q = new WorkQueue({ name: 'test' });
    for (let i = 0; i < 10; i++) q.add(`bulk/p${i}`);
    // every regular worker busy with the bulk namespace (waiting for budget, say)
    const inProgress = [await q.get(), await q.get(), await q.get(), await q.get()];
    expect(inProgress).toEqual(['bulk/p0', 'bulk/p1', 'bulk/p2', 'bulk/p3']);
    // the newcomer worker takes nothing of a namespace already in progress
    let taken: string | undefined;
    void q.getNewcomer().then((k) => {
      taken = k;
    });
    await new Promise((r) => setTimeout(r, 0));
    expect(taken).toBeUndefined();
    q.add('small/one');
    await new Promise((r) => setTimeout(r, 0));
    expect(taken).toBe('small/one');
    // queued work of a new namespace goes to it as soon as it asks; its second item is not a newcomer's
    q.add('other/a');
    q.add('other/b');
    expect(await q.getNewcomer()).toBe('other/a');
    const waiting = q.getNewcomer();
    q.done('other/a');
    await new Promise((r) => setTimeout(r, 0));
    expect(taken).toBe('small/one');
    // a namespace whose work is all done is a newcomer again with its next item
    expect(await q.get()).toBe('bulk/p4');
    q.done('small/one');
    q.add('small/two');
    expect(await waiting).toBe('small/two');
  });
});
