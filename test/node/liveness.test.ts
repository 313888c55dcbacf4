// Liveness acted on: the operator's connection to the API server frozen (packets dropped, the
// watch hangs without an error), the container is restarted, and the restarted operator catches
// up with what changed meanwhile. Two things notice the freeze: the lease renewal, which gives
// up at the renew deadline (10 s) and exits, and /healthz, which fails once no watch has made
// progress for twice the idle watchdog; whichever comes first restarts it.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { obj } from '../support/operator.ts';
import {
  apiPort,
  cleanUp,
  containerStatus,
  figure,
  helmInstall,
  type NodeWorld,
  namespace,
  nodeWorld,
  operatorNamespace,
  operatorPods,
  ready,
  res,
  skipReason,
  waitFor,
} from './harness.ts';

describe.skipIf(!!skipReason)('liveness on a node', () => {
  let w: NodeWorld;
  const system = 'edge-system-live';
  let apps: string;
  let rule: string[] = [];
  const iptables = (op: '-I' | '-D') => execFileSync('iptables', [op, 'INPUT', ...rule], { stdio: 'pipe' });

  beforeAll(async () => {
    w = await nodeWorld();
    await operatorNamespace(w, system);
    // a short watchdog so the test waits seconds, not minutes, for /healthz to fail
    await helmInstall(w, 'eo-live', system, [
      'extraEnv[0].name=EDGE_WATCH_IDLE_TIMEOUT',
      'extraEnv[0].value=5s',
    ]);
    apps = await namespace(w, 'demo-live');
    await apply(w.kube, [obj('IPPolicy', apps, 'before', {})], apps);
    await waitFor(
      'before Ready',
      async () => ready(await w.kube.get(res('ippolicies'), apps, 'before')),
      60_000,
    );
  });
  afterAll(async () => {
    if (rule.length) {
      try {
        iptables('-D');
      } catch {}
    }
    await cleanUp(w, { apps: [apps], releases: [['eo-live', system]], namespaces: [system] });
    await w?.close();
  });

  it('a frozen connection to the API server restarts the container (lease lost, or /healthz failing), which catches up', async () => {
    const [pod] = await operatorPods(w, system, 'eo-live');
    const restarts = containerStatus(pod!)!.restartCount;
    const ip = (pod!.status as { podIP: string }).podIP;
    // the pod's packets to the API server (10.0.0.1:443, DNAT to loopback) vanish
    rule = ['-s', ip, '-d', '127.0.0.1', '-p', 'tcp', '--dport', String(apiPort), '-j', 'DROP'];
    iptables('-I');
    const t0 = Date.now();
    await apply(w.kube, [obj('IPPolicy', apps, 'during', {})], apps);
    await waitFor(
      'the kubelet restarts the container',
      async () => {
        const [p] = await operatorPods(w, system, 'eo-live');
        return (containerStatus(p!)?.restartCount ?? 0) > restarts;
      },
      240_000,
      200,
    );
    const restarted = Date.now();
    const [after] = await operatorPods(w, system, 'eo-live');
    const exitCode = containerStatus(after!)?.lastState?.terminated?.exitCode;
    iptables('-D');
    rule = [];
    await waitFor(
      'during Ready',
      async () => ready(await w.kube.get(res('ippolicies'), apps, 'during')),
      120_000,
      200,
    );
    const caughtUp = Date.now();
    // why it restarted: the operator left on a lost lease (exit 1), or the kubelet says /healthz failed
    const events = await w.kube.list({ group: '', version: 'v1', plural: 'events' }, system);
    const why = events.items
      .map((e) => `${(e as { reason?: string }).reason}: ${(e as { message?: string }).message}`)
      .filter((m) => m.includes('iveness'));
    expect(
      exitCode === 1 || /Liveness probe failed/.test(why.join('\n')),
      `exit ${exitCode}; ${why.join('; ')}`,
    ).toBe(true);
    figure('liveness: watch frozen -> container restarted', (restarted - t0) / 1000);
    figure(
      'liveness: restart -> caught up (object made during the freeze Ready)',
      (caughtUp - restarted) / 1000,
    );
  });
});
