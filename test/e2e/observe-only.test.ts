// managementPolicy: Observe: watch a resource made elsewhere without ever writing to it (as
// Crossplane's Observe policy): status reports it, drift from the spec is a condition naming
// the fields, deleting the object leaves it in place; switching to Full takes it over.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequests, apiWrites } from '../support/operator.ts';
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
const TGB = res('tunnelgroupbackends');

const accountWrites = async (url: string) => apiWrites(await apiRequests(url));

describe.skipIf(!!skipReason)('managementPolicy: Observe', () => {
  let w: World;
  let op: OperatorProcess;
  const get = (r: typeof P, name: string) => w.kube.get(r, w.ns, name).catch(() => undefined);

  beforeAll(async () => {
    w = await world('observe-only');
    op = await startOperator(w.emu, w.ns, ['--agent-metrics-interval', '0']);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('reports the resource, names the fields that differ, and writes nothing to the account', async () => {
    const made = await w.api.tunnelGroupBackends.create({
      description: 'made by hand',
      labels: { app: 'web' },
    });
    const before = await accountWrites(op.metricsUrl);
    await w.kube.create(
      TGB,
      w.ns,
      obj(
        'TunnelGroupBackend',
        w.ns,
        'watched',
        { managementPolicy: 'Observe', description: 'made by hand', labels: { app: 'api' } },
        { 'edge.tunnel.dev/id': made.id },
      ),
    );
    const o = await waitFor('observed', async () => {
      const x = await get(TGB, 'watched');
      return condition(x, 'Ready')?.reason === 'ObservedWithDrift' ? x : undefined;
    });
    expect(ready(o)).toBe(true);
    expect(o.status?.id).toBe(made.id);
    expect(condition(o, 'Ready')?.message).toBe(
      `${made.id} differs from the spec in labels (managementPolicy Observe: left as it is)`,
    );
    expect(o.metadata.finalizers ?? []).toEqual([]);
    // the spec now equal to the resource: no drift, still no write
    await w.kube.patch(TGB, w.ns, 'watched', { spec: { labels: { app: 'web' } } });
    await waitFor(
      'no drift',
      async () => condition(await get(TGB, 'watched'), 'Ready')?.reason === 'Observed',
    );
    const remote = await w.api.tunnelGroupBackends.get(made.id);
    expect(remote.labels).toEqual({ app: 'web' });
    expect(remote.metadata ?? '').toBe('');
    // deleting the object leaves the resource in place
    await w.kube.delete(TGB, w.ns, 'watched');
    await waitFor('gone', async () => !(await get(TGB, 'watched')));
    expect((await w.api.tunnelGroupBackends.get(made.id)).id).toBe(made.id);
    expect(await accountWrites(op.metricsUrl)).toBe(before);
  });

  it('without an id it stalls, naming the annotation; a missing resource stalls, nothing is created', async () => {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'noid', { managementPolicy: 'Observe' }));
    await w.kube.create(
      P,
      w.ns,
      obj(
        'IPPolicy',
        w.ns,
        'ghost',
        { managementPolicy: 'Observe' },
        { 'edge.tunnel.dev/id': 'ipp_doesnotexist123' },
      ),
    );
    for (const [name, reason] of [
      ['noid', 'ObserveWithoutID'],
      ['ghost', 'NotFound'],
    ] as const)
      await waitFor(
        `${name} ${reason}`,
        async () => condition(await get(P, name), 'Stalled')?.reason === reason,
      );
    expect(w.emu.store.all('ipPolicies')).toEqual([]);
  });

  it('switching to Full takes the resource over: the spec is applied to it', async () => {
    const made = await w.api.ipPolicies.create({ description: 'old' });
    await w.kube.create(
      P,
      w.ns,
      obj(
        'IPPolicy',
        w.ns,
        'takeover',
        { managementPolicy: 'Observe', description: 'new' },
        { 'edge.tunnel.dev/id': made.id },
      ),
    );
    await waitFor(
      'observed',
      async () => condition(await get(P, 'takeover'), 'Ready')?.reason === 'ObservedWithDrift',
    );
    expect((await w.api.ipPolicies.get(made.id)).description).toBe('old');
    await w.kube.patch(P, w.ns, 'takeover', { spec: { managementPolicy: 'Full' } });
    await waitFor('synced', async () => condition(await get(P, 'takeover'), 'Ready')?.reason === 'Synced');
    expect((await w.api.ipPolicies.get(made.id)).description).toBe('new');
    expect((await get(P, 'takeover'))?.metadata.finalizers).toContain('edge.tunnel.dev/finalizer');
  });
});
