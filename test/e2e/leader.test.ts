// Two replicas: one leads and reconciles, the other waits; killing the leader hands over.
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  metric,
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

let w: World;
const ops: OperatorProcess[] = [];
beforeAll(async () => {
  if (!skipReason) w = await world('leader');
});
afterAll(async () => {
  for (const o of ops) await o.kill('SIGKILL');
  await w?.close();
});

it.skipIf(!!skipReason)(
  'runs one leader, and a standby takes over when the leader dies',
  async () => {
    const P = res('ippolicies');
    const flags = ['--leader-elect', 'true', '--leader-election-namespace', w.ns];
    const a = await startOperator(w.emu, w.ns, flags);
    ops.push(a);
    await waitFor('a leads', async () => (await metric(a.metricsUrl, 'leader_election_master_status')) === 1);
    const b = await startOperator(w.emu, w.ns, flags);
    ops.push(b);

    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'one', {}));
    await waitFor('one Ready', async () => ready(await w.kube.get(P, w.ns, 'one')));
    expect(await metric(b.metricsUrl, 'leader_election_master_status')).toBe(0);
    expect(await metric(b.metricsUrl, 'controller_runtime_reconcile_total')).toBe(0);
    const lease = await w.kube.get<{ spec: { holderIdentity: string } }>(
      { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' },
      w.ns,
      'edge-operator',
    );
    expect(lease.spec.holderIdentity).toContain(String(a.proc.pid));

    await a.kill('SIGKILL');
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'two', {}));
    await waitFor(
      'two Ready under the new leader',
      async () => ready(await w.kube.get(P, w.ns, 'two')),
      45_000,
    );
    expect(await metric(b.metricsUrl, 'leader_election_master_status')).toBe(1);
  },
  90_000,
);

it.skipIf(!!skipReason)(
  'a leader stopped gracefully releases the lease at once',
  async () => {
    const P = res('ippolicies');
    const ns = w.ns;
    const flags = [
      '--leader-elect',
      'true',
      '--leader-election-namespace',
      ns,
      '--leader-election-id',
      'graceful',
    ];
    const a = await startOperator(w.emu, ns, flags);
    ops.push(a);
    await waitFor('a leads', async () => (await metric(a.metricsUrl, 'leader_election_master_status')) === 1);
    const b = await startOperator(w.emu, ns, flags);
    ops.push(b);
    const t0 = Date.now();
    await a.kill('SIGTERM');
    await waitFor(
      'b leads',
      async () => (await metric(b.metricsUrl, 'leader_election_master_status')) === 1,
      20_000,
    );
    // well inside the 15 s lease: the lease was released, not left to expire
    expect(Date.now() - t0).toBeLessThan(10_000);
    await w.kube.create(P, ns, obj('IPPolicy', ns, 'three', {}));
    await waitFor('three Ready', async () => ready(await w.kube.get(P, ns, 'three')));
  },
  60_000,
);
