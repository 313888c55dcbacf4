// Is any agent serving this right now? A tunnel-group backend, the weighted backend over it and
// a route using it show the online tunnels within an interval of an agent coming or going,
// with a TunnelsOnline condition and an Event, while Ready stays as it is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../support/operator.ts';
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

const TGB = res('tunnelgroupbackends');
const WB = res('weightedbackends');
const EVENTS = { group: '', version: 'v1', plural: 'events' };

describe.skipIf(!!skipReason)('live tunnels', () => {
  let w: World;
  let op: OperatorProcess;
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${w.emu.url}/_emulator${path}`, {
      method,
      headers: { authorization: `Bearer ${w.emu.adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const online = (r: typeof TGB, name: string, count: number) =>
    waitFor(
      `${name}: ${count} tunnels online`,
      async () => {
        const o = await w.kube.get(r, w.ns, name);
        return (o.status?.tunnelsOnline as { count?: number } | undefined)?.count === count ? o : undefined;
      },
      15_000,
      200,
    );

  beforeAll(async () => {
    w = await world('tunnels');
    op = await startOperator(w.emu, w.ns, ['--agent-metrics-interval', '1s']);
    await w.kube.create(TGB, w.ns, obj('TunnelGroupBackend', w.ns, 'web', { labels: { app: 'web' } }));
    await w.kube.create(
      WB,
      w.ns,
      obj('WeightedBackend', w.ns, 'split', {
        backends: [{ backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 1 }],
      }),
    );
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('no agent: zero, TunnelsOnline False with a Warning, Ready still True', async () => {
    const o = await online(TGB, 'web', 0);
    expect(ready(o)).toBe(true);
    expect(condition(o, 'TunnelsOnline')).toMatchObject({ status: 'False', reason: 'NoTunnelsOnline' });
    expect(condition(await online(WB, 'split', 0), 'TunnelsOnline')?.status).toBe('False');
  });

  it('an agent comes: the backend and the weighted backend show it within seconds, and go back to zero when it leaves', async () => {
    const t0 = Date.now();
    expect(
      (
        await admin('POST', '/agents', {
          name: 'web-1',
          region: 'eu',
          tunnels: [{ labels: { app: 'web' }, forwards_to: 'localhost:8080' }],
        })
      ).status,
    ).toBe(201);
    const o = await online(TGB, 'web', 1);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(condition(o, 'TunnelsOnline')).toMatchObject({ status: 'True', reason: 'TunnelsOnline' });
    expect((o.status!.tunnelsOnline as { tunnels: { region: string }[] }).tunnels[0]!.region).toBe('eu');
    expect(ready(o)).toBe(true);
    await online(WB, 'split', 1);
    const m = await metrics(op.metricsUrl);
    expect(
      m.get(`edge_operator_tunnels_online{kind="TunnelGroupBackend",namespace="${w.ns}",name="web"}`),
    ).toBe(1);

    expect((await admin('DELETE', '/agents/web-1')).status).toBe(204);
    const gone = await online(TGB, 'web', 0);
    expect(condition(gone, 'TunnelsOnline')?.status).toBe('False');
    expect(ready(gone)).toBe(true);
    await waitFor('TunnelsOnline and NoTunnelsOnline Events', async () => {
      const reasons = (await w.kube.list(EVENTS, w.ns)).items
        .map((e) => e as unknown as { reason: string; involvedObject: { name: string } })
        .filter((e) => e.involvedObject.name === 'web')
        .map((e) => e.reason);
      return reasons.includes('TunnelsOnline') && reasons.includes('NoTunnelsOnline');
    });
  });

  it('a reconcile keeps what the tunnels loop wrote (no flapping)', async () => {
    await w.kube.patch(TGB, w.ns, 'web', { spec: { description: 'edited' } });
    const o = await waitFor('edit synced', async () => {
      const x = await w.kube.get(TGB, w.ns, 'web');
      return ready(x) && x.status?.observedGeneration === x.metadata.generation ? x : undefined;
    });
    expect(condition(o, 'TunnelsOnline')?.status).toBe('False');
    expect(o.status?.tunnelsOnline).toEqual({ count: 0 });
  });
});
