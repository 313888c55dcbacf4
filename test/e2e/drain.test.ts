// edgectl drain, the uninstall step: every policy leaves no object hanging on a finalizer,
// and touches remote resources exactly as it says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { drain } from '../../src/operator/drain.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { KubeObject } from '../../src/operator/runtime/kube.ts';
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
    await waitFor(
      'Ready',
      async () => (await objects()).length === 2 && (await objects()).every(ready),
      60_000,
    );
    return (await objects()).map((o) => o.status!.id as string);
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
});
