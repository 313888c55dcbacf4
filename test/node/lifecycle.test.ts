// Two replicas on a node: the leader's pod deleted, the standby takes over; `helm upgrade` to a
// new image tag rolls the pods; the leader's process killed outright. None moves any object's
// Ready condition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { watchLease } from '../support/lease-watch.ts';
import { obj } from '../support/operator.ts';
import {
  allReady,
  applyExamples,
  CHART,
  cleanUp,
  containerStatus,
  figure,
  helm,
  helmInstall,
  hostPid,
  LEASES,
  leaseHolder,
  type NodeWorld,
  namespace,
  nodeWorld,
  operatorNamespace,
  operatorPods,
  PODS,
  ready,
  readyMarks,
  res,
  skipReason,
  waitFor,
} from './harness.ts';

describe.skipIf(!!skipReason)('two replicas on a node', () => {
  let w: NodeWorld;
  const system = 'edge-system-ha';
  let apps: string;
  let count = 0;
  /** A new object that only a working leader makes Ready: seconds until it is. */
  const probe = async (name: string, ms = 120_000) => {
    const t = Date.now();
    await apply(w.kube, [obj('IPPolicy', apps, name, { description: name })], apps);
    count++;
    await waitFor(
      `${name} Ready`,
      async () => ready(await w.kube.get(res('ippolicies'), apps, name)),
      ms,
      200,
    );
    return (Date.now() - t) / 1000;
  };
  const withoutProbes = (m: Record<string, string>) =>
    Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('IPPolicy/probe-')));

  beforeAll(async () => {
    w = await nodeWorld();
    await operatorNamespace(w, system);
    await helmInstall(w, 'eo-ha', system, ['replicaCount=2']);
    apps = await namespace(w, 'demo-ha');
    count = (await applyExamples(w, apps)).length;
    await allReady(w, apps, count);
  });
  afterAll(async () => {
    await cleanUp(w, { apps: [apps], releases: [['eo-ha', system]], namespaces: [system] });
    await w?.close();
  });

  it('deleting the leader pod: the standby takes over, and no Ready condition moves', async () => {
    const marks = await readyMarks(w, apps);
    const pods = await operatorPods(w, system, 'eo-ha');
    expect(pods).toHaveLength(2);
    const holder = (await leaseHolder(w, system)) ?? '';
    const leader = pods.find((p) => holder.startsWith(`${p.metadata.name}-`));
    expect(leader, `lease holder ${holder}`).toBeDefined();
    const lease = await watchLease(w.kube, system, 'edge-operator');
    const t0 = Date.now();
    await w.kube.delete(PODS, system, leader!.metadata.name);
    const standby = pods.find((p) => p !== leader)!;
    const taken = await waitFor(
      'another pod holds the lease',
      async () =>
        lease.seen.find((s) => s.holder && !s.holder.startsWith(`${leader!.metadata.name}-`)) ?? false,
      120_000,
      50,
    );
    await lease.stop();
    const released = lease.seen.find((s) => s.holder === '');
    const takeover = (taken.at - t0) / 1000;
    figure('failover: leader pod deleted -> lease taken', takeover);
    // the stopped leader gives the lease up (SIGTERM from the kubelet: how soon depends on the
    // node) and the standby, already running and watching the Lease, takes it before the
    // replacement pod has even started (rolling upgrades and drains hand over the same way)
    expect(released, 'the stopped leader released the lease').toBeDefined();
    expect(taken.holder, `lease holder ${taken.holder}`).toMatch(
      new RegExp(`^${standby.metadata.name}-\\d+$`),
    );
    const handoff = (taken.at - released!.at) / 1000;
    figure('failover: lease released -> taken by the standby', handoff);
    expect(handoff).toBeLessThan(1);
    // not waited out: a lease left to expire would hold the standby back 15 s
    expect(takeover).toBeLessThan(10);
    const firstWork = await probe('probe-failover');
    figure('failover: leader pod deleted -> a new object Ready', takeover + firstWork);
    expect(withoutProbes(await readyMarks(w, apps))).toEqual(marks);
    await allReady(w, apps, count);
  });

  it('helm upgrade to a new image tag rolls the pods, and no Ready condition moves', async () => {
    const marks = withoutProbes(await readyMarks(w, apps));
    const before = (await operatorPods(w, system, 'eo-ha')).map((p) => p.metadata.name);
    const t0 = Date.now();
    await helm(
      'upgrade',
      'eo-ha',
      CHART,
      '-n',
      system,
      '--reuse-values',
      '--set',
      'image.tag=dev-next',
      '--wait',
    );
    const pods = await waitFor(
      'only new pods, all Ready',
      async () => {
        const ps = await operatorPods(w, system, 'eo-ha');
        return ps.length === 2 &&
          ps.every((p) => !before.includes(p.metadata.name) && containerStatus(p)?.ready)
          ? ps
          : false;
      },
      180_000,
      500,
    );
    for (const p of pods)
      expect((p.spec as { containers: { image: string }[] }).containers[0]!.image).toBe(
        'edge-operator:dev-next',
      );
    const work = await probe('probe-upgrade');
    figure('upgrade: helm upgrade -> new pods Ready', (Date.now() - t0) / 1000 - work);
    expect(withoutProbes(await readyMarks(w, apps))).toEqual(marks);
  });

  it('the leader killed (SIGKILL, no release): replaced within the lease duration', async () => {
    const marks = withoutProbes(await readyMarks(w, apps));
    const pods = await operatorPods(w, system, 'eo-ha');
    const holder = (await leaseHolder(w, system)) ?? '';
    const leader = pods.find((p) => holder.startsWith(`${p.metadata.name}-`));
    expect(leader, `lease holder ${holder}`).toBeDefined();
    const t0 = Date.now();
    process.kill(hostPid(leader!), 'SIGKILL');
    // a process that dies without releasing leaves the lease to expire (15 s from its last
    // renewal); a renewal after the kill is a live process's: the standby's, or the killed
    // container's restart (same pod, same pid 1: the same identity, so the holder may not change)
    const renewed = await waitFor(
      'the lease renewed after the kill',
      async () => {
        const lease = await w.kube.get(LEASES, system, 'edge-operator').catch(() => undefined);
        const spec = lease?.spec as { holderIdentity?: string; renewTime?: string } | undefined;
        return spec?.holderIdentity && Date.parse(spec.renewTime ?? '') > t0 ? spec.holderIdentity : false;
      },
      60_000,
      100,
    );
    const takeover = (Date.now() - t0) / 1000;
    figure('failover: leader SIGKILLed -> lease taken', takeover);
    expect(renewed).toBeTruthy();
    expect(takeover).toBeLessThan(15 + 1);
    const firstWork = await probe('probe-sigkill');
    figure('failover: leader SIGKILLed -> a new object Ready', takeover + firstWork);
    expect(withoutProbes(await readyMarks(w, apps))).toEqual(marks);
  });
});
