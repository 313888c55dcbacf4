// edgectl drain, the uninstall step: every policy leaves no object hanging on a finalizer,
// and touches remote resources exactly as it says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { drain, stopDeployment } from '../../src/operator/drain.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { FINALIZER } from '../../src/operator/runtime/constants.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
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

describe.skipIf(!!skipReason)('edgectl drain', () => {
  let w: World;
  let op: OperatorProcess;
  const objects = async () => {
    const out: KubeObject[] = [];
    for (const b of BINDINGS) out.push(...(await w.kube.list(res(b.plural), w.ns)).items);
    return out;
  };
  const policies = async () => {
    const ids: string[] = [];
    for await (const p of w.api.ipPolicies.list()) ids.push(p.id);
    return ids;
  };
  const create = async (prefix: string) => {
    await apply(
      w.kube,
      [
        obj('IPPolicy', w.ns, `${prefix}-corp`, {}),
        obj('IPPolicyRule', w.ns, `${prefix}-office`, {
          ipPolicyRef: { name: `${prefix}-corp` },
          cidr: '203.0.113.0/24',
          action: 'allow',
        }),
      ],
      w.ns,
    );
    const mine = async () => (await objects()).filter((o) => o.metadata.name.startsWith(`${prefix}-`));
    await waitFor('Ready', async () => (await mine()).length === 2 && (await mine()).every(ready), 60_000);
    return (await mine()).map((o) => o.status!.id as string);
  };

  beforeAll(async () => {
    w = await world('drain');
    op = await startOperator(w.emu, w.ns);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('Retain deletes the objects and keeps their remote resources, with the operator running', async () => {
    const ids = await create('r');
    const r = await drain(w.kube, { policy: 'Retain', namespaces: [w.ns] });
    expect(r.handled).toEqual({ IPPolicy: 1, IPPolicyRule: 1 });
    await waitFor('objects gone', async () => (await objects()).length === 0, 30_000);
    expect(await policies()).toContain(ids.find((i) => i.startsWith('ipp_')));
    const rule = await w.api.ipPolicyRules.get(ids.find((i) => i.startsWith('ipr_'))!);
    expect(rule.id).toBeTruthy();
  });

  it('Delete deletes the objects and, through the operator, their remote resources', async () => {
    const ids = await create('d');
    const r = await drain(w.kube, { policy: 'Delete', namespaces: [w.ns], timeoutMs: 60_000 });
    expect(r.left).toEqual([]);
    expect(await policies()).not.toContain(ids.find((i) => i.startsWith('ipp_')));
  });

  it('Orphan, with the operator stopped, keeps objects and remote resources and frees the finalizers', async () => {
    const ids = await create('o');
    await op.kill();
    await drain(w.kube, { policy: 'Orphan', namespaces: [w.ns] });
    const left = await objects();
    expect(left).toHaveLength(2);
    expect(left.every((o) => !o.metadata.finalizers?.length)).toBe(true);
    // deleting one now is instant, and leaves its remote resource
    await w.kube.delete(res('ippolicyrules'), w.ns, 'o-office');
    await waitFor('rule object gone', async () => (await objects()).length === 1, 10_000);
    expect((await w.api.ipPolicyRules.get(ids.find((i) => i.startsWith('ipr_'))!)).id).toBeTruthy();
  });

  it('Orphan with the operator still running: it puts the finalizers back, and drain names those objects', async () => {
    op = await startOperator(w.emu, w.ns);
    await create('x');
    // a removed finalizer is back at once (FinalizerRestored): drain looks again after pollMs
    const r = await drain(w.kube, { policy: 'Orphan', namespaces: [w.ns], pollMs: 5000 });
    expect(r.left).toEqual(
      expect.arrayContaining([`IPPolicy ${w.ns}/x-corp`, `IPPolicyRule ${w.ns}/x-office`]),
    );
  });

  it('Orphan with stopDeployment scales the operator to 0, waits until its pods are gone, then frees the finalizers for good', async () => {
    // the operator from the previous test still runs and the x- objects have their finalizers.
    // This control plane has no kubelet: the operator is a process, and a Deployment with a
    // never-scheduled Pod of its labels stands for it (test/node runs the real one)
    const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
    const PODS = { group: '', version: 'v1', plural: 'pods' };
    const labels = { app: 'edge-operator-e2e' };
    await w.kube.create(DEPLOYMENTS, w.ns, {
      metadata: { name: 'operator' },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'operator', image: 'operator' }] } },
      },
    });
    await w.kube.create(PODS, w.ns, {
      metadata: { name: 'operator-pod', labels },
      spec: {
        schedulingGates: [{ name: 'edge.tunnel.dev/test' }],
        containers: [{ name: 'operator', image: 'operator' }],
      },
    });
    // an account the running operator has put its finalizer on (no object uses it)
    const EA = accountResource('EdgeAccount');
    await w.kube.create(EA, w.ns, {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'EdgeAccount',
      metadata: { name: 'spare' },
      spec: { apiKeySecretRef: { name: 'no-such-secret', key: 'key' } },
    });
    await waitFor('the account finalized by the operator', async () =>
      (await w.kube.get(EA, w.ns, 'spare')).metadata.finalizers?.includes(FINALIZER),
    );
    const lines: string[] = [];
    const running = drain(w.kube, {
      policy: 'Orphan',
      namespaces: [w.ns],
      stopDeployment: { namespace: w.ns, name: 'operator' },
      timeoutMs: 60_000,
      pollMs: 200,
      progress: (l) => lines.push(l),
    });
    const replicas = async () =>
      ((await w.kube.get(DEPLOYMENTS, w.ns, 'operator')).spec as { replicas: number }).replicas;
    await waitFor('scaled to 0', async () => (await replicas()) === 0, 10_000);
    // nothing is touched while an operator pod is left
    await new Promise((r) => setTimeout(r, 1000));
    const x = async () => (await objects()).filter((o) => o.metadata.name.startsWith('x-'));
    expect((await x()).every((o) => o.metadata.finalizers?.includes(FINALIZER))).toBe(true);
    expect(lines).toContain('scaled deployment ' + `${w.ns}/operator to 0 (was 2)`);
    expect(lines.some((l) => l.startsWith('waiting for 1 operator pods to be gone: operator-pod'))).toBe(
      true,
    );
    // the operator goes with its pod
    await op.kill();
    await w.kube.delete(PODS, w.ns, 'operator-pod');
    const r = await running;
    expect(r.left).toEqual([]);
    expect(r.handled).toMatchObject({ IPPolicy: expect.any(Number), IPPolicyRule: expect.any(Number) });
    expect((await x()).map((o) => o.metadata.finalizers ?? [])).toEqual([[], []]);
    // with no operator left, the account's finalizer goes too: deleting it (or its namespace) is immediate
    expect(r.accounts).toEqual([`EdgeAccount ${w.ns}/spare`]);
    expect((await w.kube.get(EA, w.ns, 'spare')).metadata.finalizers ?? []).toEqual([]);
    const ids = (await x()).map((o) => o.status!.id as string);
    expect(await policies()).toContain(ids.find((i) => i.startsWith('ipp_')));
    // again: already at 0 and no pod, it goes straight on; a Deployment not there has nothing to stop
    await expect(
      stopDeployment(w.kube, { namespace: w.ns, name: 'operator' }, { timeoutMs: 1000, pollMs: 100 }),
    ).resolves.toBeUndefined();
    const absent: string[] = [];
    await stopDeployment(
      w.kube,
      { namespace: w.ns, name: 'absent' },
      { timeoutMs: 1000, pollMs: 100, progress: (l) => absent.push(l) },
    );
    expect(absent).toEqual([`deployment ${w.ns}/absent not found: no operator to stop`]);
  });
});
