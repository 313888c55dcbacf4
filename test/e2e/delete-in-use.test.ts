// Deleting what other objects still use must not silently open or break their traffic:
// the object waits (Ready=False, reason InUse, naming the referrers, with an Event) until
// they are gone or stop referencing it. Deleting everything at once still finishes clean.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from '../../src/api/client.ts';
import { isNotFound } from '../../src/api/errors.ts';
import { apply } from '../../src/operator/apply.ts';
import { FORCE_DELETE_ANNOTATION } from '../../src/operator/kinds/crd-schema.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { KubeError } from '../../src/operator/runtime/kube/kube.ts';
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

const EVENTS = { group: '', version: 'v1', plural: 'events' };
const gone = (plural: string, w: World, name: string) =>
  w.kube.get(res(plural), w.ns, name).then(
    () => false,
    (e: KubeError) => e.status === 404,
  );

function app(w: World, prefix: string) {
  return [
    obj('IPPolicy', w.ns, `${prefix}-corp`, { description: 'corp' }),
    obj('IPPolicyRule', w.ns, `${prefix}-office`, {
      ipPolicyRef: { name: `${prefix}-corp` },
      cidr: '203.0.113.0/24',
      action: 'allow',
    }),
    obj('TunnelGroupBackend', w.ns, `${prefix}-web`, { labels: { app: prefix } }),
    obj('HTTPSEdge', w.ns, `${prefix}-edge`, { hostports: [`${prefix}.example.com:443`] }),
    obj('HTTPSEdgeRoute', w.ns, `${prefix}-root`, {
      edgeRef: { name: `${prefix}-edge` },
      matchType: 'path_prefix',
      match: '/',
      backend: { backendRef: { kind: 'TunnelGroupBackend', name: `${prefix}-web` } },
      ipRestriction: { ipPolicyRefs: [{ name: `${prefix}-corp` }] },
    }),
  ];
}

describe.skipIf(!!skipReason)('reference-aware deletion', () => {
  let w: World;
  let op: OperatorProcess;
  beforeAll(async () => {
    w = await world('inuse');
    op = await startOperator(w.emu, w.ns);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  const allReady = (objs: { kind?: string; metadata: { name: string } }[]) =>
    waitFor(
      'every object Ready',
      async () => {
        for (const o of objs) {
          const plural = BINDINGS.find((b) => b.kind === o.kind)!.plural;
          if (!ready(await w.kube.get(res(plural), w.ns, o.metadata.name))) return false;
        }
        return true;
      },
      60_000,
    );

  it('a policy in use waits as InUse naming its referrers, then goes once they let go', async () => {
    const objs = app(w, 'a');
    await apply(w.kube, objs, w.ns);
    await allReady(objs);
    const policy = await w.kube.get(res('ippolicies'), w.ns, 'a-corp');
    const policyId = policy.status!.id as string;

    await w.kube.delete(res('ippolicies'), w.ns, 'a-corp');
    const c = await waitFor('InUse', async () => {
      const o = await w.kube.get(res('ippolicies'), w.ns, 'a-corp');
      const r = condition(o, 'Ready');
      return r?.reason === 'InUse' ? r : undefined;
    });
    expect(c.status).toBe('False');
    expect(c.message).toContain('HTTPSEdgeRoute a-root');
    expect(c.message).toContain('IPPolicyRule a-office');
    // the remote policy and the route that uses it are untouched, and the route stays Ready
    expect((await w.api.ipPolicies.get(policyId)).id).toBe(policyId);
    expect(ready(await w.kube.get(res('httpsedgeroutes'), w.ns, 'a-root'))).toBe(true);
    const events = await w.kube.list(EVENTS, w.ns);
    expect(
      events.items.some(
        (e) =>
          (e as unknown as { reason: string; involvedObject: { name: string } }).reason === 'InUse' &&
          (e as unknown as { involvedObject: { name: string } }).involvedObject.name === 'a-corp',
      ),
    ).toBe(true);

    // the route stops using it, the rule goes: the policy is deleted
    await w.kube.patch(res('httpsedgeroutes'), w.ns, 'a-root', { spec: { ipRestriction: null } });
    await w.kube.delete(res('ippolicyrules'), w.ns, 'a-office');
    await waitFor('policy gone', () => gone('ippolicies', w, 'a-corp'), 30_000);
    expect(isNotFound(await w.api.ipPolicies.get(policyId).catch((e) => e))).toBe(true);
  });

  it(`${FORCE_DELETE_ANNOTATION}=true deletes at once`, async () => {
    await apply(
      w.kube,
      [
        obj('IPPolicy', w.ns, 'forced', {}),
        obj('IPRestriction', w.ns, 'forced-x', { type: 'api', ipPolicyRefs: [{ name: 'forced' }] }),
      ],
      w.ns,
    );
    await allReady([{ kind: 'IPRestriction', metadata: { name: 'forced-x' } }]);
    await w.kube.delete(res('iprestrictions'), w.ns, 'forced-x');
    await w.kube.patch(res('ippolicies'), w.ns, 'forced', {
      metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } },
    });
    await w.kube.delete(res('ippolicies'), w.ns, 'forced');
    await waitFor('forced policy gone', () => gone('ippolicies', w, 'forced'), 30_000);
  });

  it("what the API refuses to delete is reported with the Kubernetes objects behind the API's ids", async () => {
    await apply(w.kube, [obj('IPPolicy', w.ns, 'raw', {})], w.ns);
    await allReady([{ kind: 'IPPolicy', metadata: { name: 'raw' } }]);
    const id = (await w.kube.get(res('ippolicies'), w.ns, 'raw')).status!.id as string;
    // referenced by id, not by name: only the API knows the policy is in use
    await apply(w.kube, [obj('IPRestriction', w.ns, 'raw-x', { type: 'api', ipPolicyIDs: [id] })], w.ns);
    await allReady([{ kind: 'IPRestriction', metadata: { name: 'raw-x' } }]);
    const x = (await w.kube.get(res('iprestrictions'), w.ns, 'raw-x')).status!.id as string;
    await w.kube.delete(res('ippolicies'), w.ns, 'raw');
    const failed = await waitFor('DeleteFailed', async () => {
      const o = await w.kube.get(res('ippolicies'), w.ns, 'raw');
      return condition(o, 'Reconciling')?.reason === 'DeleteFailed' ? condition(o, 'Reconciling') : undefined;
    });
    expect(failed!.message).toContain(`${x} (IPRestriction ${w.ns}/raw-x)`);
    await w.kube.delete(res('iprestrictions'), w.ns, 'raw-x');
    await waitFor('the policy goes once the restriction has', () => gone('ippolicies', w, 'raw'), 60_000);
  });

  it('deleting referrers and referenced together, in any order, finishes with nothing left', async () => {
    const objs = app(w, 'b');
    await apply(w.kube, objs, w.ns);
    await allReady(objs);
    const ids = await Promise.all(
      objs.map(async (o) => {
        const plural = BINDINGS.find((b) => b.kind === o.kind)!.plural;
        return (await w.kube.get(res(plural), w.ns, o.metadata.name)).status!.id as string;
      }),
    );
    // referenced first: the worst order
    for (const o of objs) {
      const plural = BINDINGS.find((b) => b.kind === o.kind)!.plural;
      await w.kube.delete(res(plural), w.ns, o.metadata.name);
    }
    await waitFor(
      'every object gone',
      async () => {
        for (const o of objs) {
          const plural = BINDINGS.find((b) => b.kind === o.kind)!.plural;
          if (!(await gone(plural, w, o.metadata.name))) return false;
        }
        return true;
      },
      60_000,
    );
    const left = [
      ...(await collect(w.api.ipPolicies.list())),
      ...(await collect(w.api.ipPolicyRules.list())),
      ...(await collect(w.api.tunnelGroupBackends.list())),
      ...(await collect(w.api.httpsEdges.list())),
    ].map((r) => r.id);
    for (const id of ids) expect(left).not.toContain(id);
  });
});
