// Fair share of one account's budget (the emulator enforces a low limit): one namespace's burst
// of creates, or of deletes, does not hold another namespace's single object, which goes at its turn.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { metrics, sumMetric } from '../support/operator.ts';
import {
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const RATE = 60;
const P = res('ippolicies');

describe.skipIf(!!skipReason)('fair share between namespaces', () => {
  let w: World;
  let small: string;
  let op: OperatorProcess;
  beforeAll(async () => {
    w = await world('fair', { rateLimitPerMinute: RATE });
    small = `${w.ns}-small`;
    await w.kube.create(NAMESPACES, undefined, { metadata: { name: small } });
    op = await startOperator(w.emu, w.ns, [
      '--api-rate-limit',
      String(RATE),
      '--agent-metrics-interval',
      '0',
      '--namespaces',
      `${w.ns},${small}`,
    ]);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.kube.delete(NAMESPACES, undefined, small).catch(() => {});
    await w?.close();
  });

  it("a namespace's one object is Ready within seconds while another namespace's burst waits for budget", async () => {
    // about 40 s of budget at 60 a minute
    const burst = Array.from({ length: 40 }, (_, i) => obj('IPPolicy', w.ns, `bulk${i}`, {}));
    await apply(w.kube, burst, w.ns);
    await new Promise((r) => setTimeout(r, 3000));
    const t0 = Date.now();
    await apply(w.kube, [obj('IPPolicy', small, 'one', { description: 'small team' })], small);
    await waitFor(
      'the small namespace object Ready',
      async () => ready(await w.kube.get(P, small, 'one')),
      30_000,
      50,
    );
    const latency = Date.now() - t0;
    const pending = (await w.kube.list(P, w.ns)).items.filter((o) => !o.status?.id).length;
    // first come, first served would have put it behind every pending create (over 30 s)
    expect(pending).toBeGreaterThan(20);
    expect(latency).toBeLessThan(5000);
    // the wait for budget is measured per priority: creates waited their turns
    const m = await metrics(op.metricsUrl);
    expect(
      sumMetric(m, 'edge_api_budget_wait_duration_seconds_count', (l) => l.includes('"high"')),
    ).toBeGreaterThan(0);
    await waitFor('every policy Ready', async () => (await w.kube.list(P, w.ns)).items.every(ready), 90_000);
    expect(w.emu.counters.byStatus(429)).toBe(0);
  }, 150_000);

  it("another namespace's bulk delete (urgent work) does not hold a namespace's new object until it ends", async () => {
    // 40 deletes (urgent, one request each) is about 40 s of budget at 60 a minute
    const names = (await w.kube.list(P, w.ns)).items.map((o) => o.metadata.name);
    expect(names.length).toBe(40);
    await Promise.all(names.map((n) => w.kube.delete(P, w.ns, n)));
    await new Promise((r) => setTimeout(r, 3000));
    await apply(w.kube, [obj('IPPolicy', small, 'two', { description: 'small team, again' })], small);
    await waitFor(
      'the small namespace new object Ready',
      async () => ready(await w.kube.get(P, small, 'two')),
      30_000,
      50,
    );
    // strict priority would have served every delete first; a create takes a turn after three
    // (a deleted object stays, held by its finalizer, until its remote resource is deleted)
    const left = (await w.kube.list(P, w.ns)).items.length;
    expect(left).toBeGreaterThan(20);
    await waitFor(
      'the bulk namespace emptied',
      async () => (await w.kube.list(P, w.ns)).items.length === 0,
      90_000,
    );
  }, 150_000);
});
