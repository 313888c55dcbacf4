// Two replicas: one leads and reconciles, the other waits; killing the leader hands over (after
// the lease expires), stopping it hands over at once (the lease released, the standby watching).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { watchLease } from '../support/lease-watch.ts';
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

    const killed = Date.now();
    await a.kill('SIGKILL');
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'two', {}));
    await waitFor(
      'two Ready under the new leader',
      async () => ready(await w.kube.get(P, w.ns, 'two')),
      45_000,
    );
    expect(await metric(b.metricsUrl, 'leader_election_master_status')).toBe(1);
    // the standby watches the renewals and tries again as the lease (15 s) expires on its own
    // clock: within the lease duration of the last renewal before the kill, not at a later poll
    const failover = Date.now() - killed;
    process.stdout.write(`leader SIGKILLed: the standby led ${(failover / 1000).toFixed(1)} s later\n`);
    expect(failover).toBeLessThan(15_000 + 1_500);
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

it.skipIf(!!skipReason)(
  'a released lease goes to the standby already running, in under 1 s, not to the new replica',
  async () => {
    const ns = w.ns;
    const name = 'handoff';
    const flags = ['--leader-elect', 'true', '--leader-election-namespace', ns, '--leader-election-id', name];
    const leads = async (o: OperatorProcess) =>
      (await metric(o.metricsUrl, 'leader_election_master_status')) === 1;
    const standingBy = (o: OperatorProcess) =>
      waitFor('the standby watches the lease', async () =>
        o.logs.some((l) => l.includes('standing by: watching the lease')),
      );
    const lease = await watchLease(w.kube, ns, name, () => performance.now());
    const seen = lease.seen;

    let leader = await startOperator(w.emu, ns, flags);
    ops.push(leader);
    await waitFor('the first leads', () => leads(leader));
    let standby = await startOperator(w.emu, ns, flags);
    ops.push(standby);
    await standingBy(standby);
    const handoffs: number[] = [];
    // a rolling upgrade, three times: the leader is stopped as its replacement starts
    for (let round = 0; round < 3; round++) {
      const from = seen.length;
      const [, next] = await Promise.all([leader.kill('SIGTERM'), startOperator(w.emu, ns, flags)]);
      ops.push(next);
      await waitFor('the standby leads', () => leads(standby), 10_000);
      const released = seen.slice(from).find((s) => s.holder === '');
      const taken = seen.slice(from).find((s) => s.holder.endsWith(`-${standby.proc.pid}`));
      expect(released, 'the stopped leader released the lease').toBeDefined();
      expect(taken, 'the standby took it').toBeDefined();
      handoffs.push(taken!.at - released!.at);
      expect(await leads(next)).toBe(false);
      [leader, standby] = [standby, next];
      await standingBy(standby);
    }
    await lease.stop();
    process.stdout.write(
      `lease released on SIGTERM, taken by the standby after: ${handoffs.map((ms) => `${Math.round(ms)} ms`).join(', ')}\n`,
    );
    expect(Math.max(...handoffs)).toBeLessThan(1_000);
  },
  90_000,
);
