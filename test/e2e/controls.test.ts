// The controls teams know from Crossplane and Flux: pause one object during an incident (no
// API call, no Kubernetes write, deletes wait), and ask for a reconcile now (one GET, urgent,
// the value recorded in status).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequests, metrics, requestsSince as since } from '../support/operator.ts';
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

const P = res('ippolicies');
const EVENTS = { group: '', version: 'v1', plural: 'events' };

/** The operator's API requests by `operation status`, and its Kubernetes writes. */
async function counts(url: string) {
  let writes = 0;
  for (const [k, v] of await metrics(url))
    if (/^rest_client_requests_total\{.*method="(PATCH|DELETE)"/.test(k)) writes += v;
  return { api: await apiRequests(url), writes };
}

describe.skipIf(!!skipReason)('pause and reconcile now', () => {
  let w: World;
  let op: OperatorProcess;
  const get = (name: string) => w.kube.get(P, w.ns, name).catch(() => undefined);
  const readyObj = (name: string) =>
    waitFor(`${name} Ready`, async () => {
      const o = await get(name);
      return ready(o) && o?.status?.observedGeneration === o?.metadata.generation ? o : undefined;
    });
  const eventReasons = async (name: string) =>
    (await w.kube.list(EVENTS, w.ns)).items
      .map((e) => e as unknown as { reason: string; involvedObject: { name: string } })
      .filter((e) => e.involvedObject.name === name)
      .map((e) => e.reason);

  beforeAll(async () => {
    w = await world('controls');
    // no agent-metrics polling: every API call counted here is the objects'
    op = await startOperator(w.emu, w.ns, ['--agent-metrics-interval', '0']);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('paused: an edit and a delete make no API call and no write; unpaused, both go through', async () => {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'held', { description: 'before' }));
    const id = (await readyObj('held')).status!.id as string;
    await w.kube.patch(P, w.ns, 'held', { metadata: { annotations: { 'edge.tunnel.dev/paused': 'true' } } });
    const paused = await waitFor('Paused condition', async () => {
      const o = await get('held');
      return condition(o, 'Paused')?.status === 'True' ? o : undefined;
    });
    expect(condition(paused, 'Paused')?.reason).toBe('ReconcilePaused');
    expect(ready(paused)).toBe(true);
    await waitFor('ReconcilePaused Event', async () =>
      (await eventReasons('held')).includes('ReconcilePaused'),
    );
    const before = await counts(op.metricsUrl);
    await w.kube.patch(P, w.ns, 'held', { spec: { description: 'after' } });
    await w.kube.delete(P, w.ns, 'held');
    await new Promise((r) => setTimeout(r, 3000));
    const during = await counts(op.metricsUrl);
    expect(since(during.api, before.api)).toEqual({});
    expect(during.writes - before.writes).toBe(0);
    expect((await w.api.ipPolicies.get(id)).description).toBe('before');
    expect((await get('held'))?.metadata.deletionTimestamp).toBeTruthy();
    expect((await eventReasons('held')).filter((r) => r === 'ReconcilePaused')).toHaveLength(1);
    // resumed: the pending delete goes through
    await w.kube.patch(P, w.ns, 'held', { metadata: { annotations: { 'edge.tunnel.dev/paused': null } } });
    await waitFor('held gone', async () => !(await get('held')));
    await expect(w.api.ipPolicies.get(id)).rejects.toMatchObject({ status: 404 });
  });

  it('unpausing applies an edit made while paused, after one observation', async () => {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'edit', { description: 'v1' }));
    const id = (await readyObj('edit')).status!.id as string;
    await w.kube.patch(P, w.ns, 'edit', { metadata: { annotations: { 'edge.tunnel.dev/paused': 'true' } } });
    await waitFor('Paused', async () => condition(await get('edit'), 'Paused')?.status === 'True');
    await w.kube.patch(P, w.ns, 'edit', { spec: { description: 'v2' } });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await w.api.ipPolicies.get(id)).description).toBe('v1');
    const before = await counts(op.metricsUrl);
    await w.kube.patch(P, w.ns, 'edit', { metadata: { annotations: { 'edge.tunnel.dev/paused': null } } });
    const o = await readyObj('edit');
    expect(condition(o, 'Paused')).toBeUndefined();
    expect((await w.api.ipPolicies.get(id)).description).toBe('v2');
    const after = await counts(op.metricsUrl);
    expect(since(after.api, before.api)).toEqual({ 'ipPolicies.get 200': 1, 'ipPolicies.update 200': 1 });
  });

  it('reconcile-requested-at: one GET at once, drift put back, the value recorded in status', async () => {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'now', { description: 'spec' }));
    const id = (await readyObj('now')).status!.id as string;
    await new Promise((r) => setTimeout(r, 1500));
    await w.api.ipPolicies.update(id, { description: 'changed by hand' });
    const before = await counts(op.metricsUrl);
    const t0 = Date.now();
    await w.kube.patch(P, w.ns, 'now', {
      metadata: { annotations: { 'edge.tunnel.dev/reconcile-requested-at': '2026-11-24T02:00:00Z' } },
    });
    const o = await waitFor(
      'lastHandledReconcileAt',
      async () => {
        const x = await get('now');
        return x?.status?.lastHandledReconcileAt === '2026-11-24T02:00:00Z' ? x : undefined;
      },
      10_000,
      100,
    );
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(ready(o)).toBe(true);
    expect((await w.api.ipPolicies.get(id)).description).toBe('spec');
    const after = await counts(op.metricsUrl);
    expect(since(after.api, before.api)).toEqual({ 'ipPolicies.get 200': 1, 'ipPolicies.update 200': 1 });
    // the same value again is not a new request
    const again = await counts(op.metricsUrl);
    await w.kube.patch(P, w.ns, 'now', { metadata: { labels: { touched: 'yes' } } });
    await new Promise((r) => setTimeout(r, 1500));
    expect(since((await counts(op.metricsUrl)).api, again.api)).toEqual({});
  });
});
