// Under the account's limit (the emulator enforces it): a user's edit reaches the API
// within seconds while a burst of creates waits for budget, nothing that was Ready flaps,
// and the operator's own budget keeps the API from answering 429.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import {
  condition,
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

describe.skipIf(!!skipReason)('the account budget', () => {
  let w: World;
  let op: OperatorProcess;
  beforeAll(async () => {
    w = await world('budget', { rateLimitPerMinute: RATE });
    op = await startOperator(w.emu, w.ns, [
      '--api-rate-limit',
      String(RATE),
      '--agent-metrics-interval',
      '0',
    ]);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('an edit jumps the queue of creates waiting for budget; Ready objects do not flap; no 429', async () => {
    const first = Array.from({ length: 4 }, (_, i) =>
      obj('IPPolicy', w.ns, `early${i}`, { description: 'v1' }),
    );
    await apply(w.kube, first, w.ns);
    await waitFor('first policies Ready', async () => {
      const items = (await w.kube.list(P, w.ns)).items;
      return items.length === 4 && items.every(ready);
    });
    const flaps: string[] = [];
    const watch = new Informer({
      kube: w.kube,
      resource: P,
      namespace: w.ns,
      log: pino({ level: 'silent' }),
    });
    watch.on((_t, o) => {
      if (
        o.metadata.name.startsWith('early') &&
        !ready(o) &&
        o.metadata.generation === o.status?.observedGeneration
      )
        flaps.push(`${o.metadata.name}: ${condition(o, 'Ready')?.reason}`);
    });
    watch.start();
    await watch.synced;
    try {
      // a burst of creates: about 30 s of budget at 60 a minute
      const burst = Array.from({ length: 30 }, (_, i) => obj('IPPolicy', w.ns, `burst${i}`, {}));
      await apply(w.kube, burst, w.ns);
      await new Promise((r) => setTimeout(r, 3000));
      const id = (await w.kube.get(P, w.ns, 'early0')).status!.id as string;
      const t0 = Date.now();
      await w.kube.patch(P, w.ns, 'early0', { spec: { description: 'edited under load' } });
      await waitFor(
        'edit reaches the API',
        () => w.emu.store.get('ipPolicies', id)?.description === 'edited under load',
        20_000,
        25,
      );
      const latency = Date.now() - t0;
      // creates were still waiting when the edit went through
      const pending = (await w.kube.list(P, w.ns)).items.filter((o) => !o.status?.id).length;
      expect(pending).toBeGreaterThan(5);
      expect(latency).toBeLessThan(5000);
      await waitFor(
        'every policy Ready',
        async () => (await w.kube.list(P, w.ns)).items.every(ready),
        90_000,
      );
      expect(flaps).toEqual([]);
      expect(w.emu.counters.byStatus(429)).toBe(0);
    } finally {
      watch.stop();
    }
  }, 150_000);
});
