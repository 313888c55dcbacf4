// Safe by default, against a real API server: restarts never flap a Ready condition, a status
// someone else wrote is put right at once, installs are partitioned by an instance label,
// only referenced Secrets are read and their digests are keyed by the operator's own key,
// and reference cycles or repeats are reported instead of waited on.
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import {
  legacySecretDigest,
  unscopedSecretDigest,
} from '../../src/operator/runtime/bindings/module-compare.ts';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/manager/manager.ts';
import { metrics, sumMetric } from '../support/operator.ts';
import {
  condition,
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

const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const ROUTES = res('httpsedgeroutes');
const ROUTE = BINDINGS.find((b) => b.kind === 'HTTPSEdgeRoute')!;

async function everything(w: World): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const b of BINDINGS) out.push(...(await w.kube.list(res(b.plural), w.ns)).items);
  return out;
}
const readyTimes = (objs: KubeObject[]) =>
  Object.fromEntries(
    objs.map((o) => [
      `${o.kind}/${o.metadata.name}`,
      (condition(o, 'Ready') as { lastTransitionTime?: string } | undefined)?.lastTransitionTime,
    ]),
  );

/** Reconciles the operator has finished, of every kind. */
const reconciles = (op: OperatorProcess) => metric(op.metricsUrl, 'controller_runtime_reconcile_total');

describe.skipIf(!!skipReason)('safe by default', () => {
  let w: World;
  let op: OperatorProcess;
  let count = 0;

  beforeAll(async () => {
    w = await world('safety');
    op = await startOperator(w.emu, w.ns);
    const objs = readManifests(join(REPO_ROOT, 'deploy/examples'))
      .filter((o) => o.kind !== 'Namespace')
      .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: w.ns } }));
    count = objs.filter((o) => o.kind !== 'Secret').length;
    await apply(w.kube, objs, w.ns);
    await waitFor(
      'every example Ready',
      async () => {
        const all = await everything(w);
        return all.length === count && all.every((o) => ready(o));
      },
      60_000,
    );
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('restarting the operator 10 times changes no Ready condition of any object', async () => {
    const before = readyTimes(await everything(w));
    const flaps: string[] = [];
    const watchers = BINDINGS.map((b) => {
      const inf = new Informer({
        kube: w.kube,
        resource: res(b.plural),
        namespace: w.ns,
        log: pino({ level: 'silent' }),
      });
      inf.on((_t, o) => {
        const c = condition(o, 'Ready');
        if (c?.status !== 'True') flaps.push(`${b.kind}/${o.metadata.name}: ${c?.reason} ${c?.message}`);
      });
      inf.start();
      return inf;
    });
    try {
      await Promise.all(watchers.map((i) => i.synced));
      for (let i = 0; i < 10; i++) {
        await op.kill();
        op = await startOperator(w.emu, w.ns);
        // every object looked at again by the new process (its memo is empty)
        await waitFor(
          `restart ${i + 1}: every object reconciled`,
          async () => (await reconciles(op)) >= count,
        );
      }
      await new Promise((r) => setTimeout(r, 1000));
      expect(flaps).toEqual([]);
      expect(readyTimes(await everything(w))).toEqual(before);
    } finally {
      for (const i of watchers) i.stop();
    }
  });

  it('a status written by someone else (a second install) is put right at once, not at the next resync', async () => {
    // the operator runs with the default 10-minute resync
    const t0 = Date.now();
    await w.kube.patch(
      res('ippolicies'),
      w.ns,
      'corp',
      {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'False',
              reason: 'OwnedElsewhere',
              message: 'belongs to another installation',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
            {
              type: 'Stalled',
              status: 'True',
              reason: 'OwnedElsewhere',
              message: 'belongs to another installation',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
      'merge',
      'status',
    );
    await waitFor('status repaired', async () => {
      const o = await w.kube.get(res('ippolicies'), w.ns, 'corp');
      return ready(o) && !condition(o, 'Stalled');
    });
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it('only referenced Secrets have their data read; unrelated ones cost nothing', async () => {
    const big = Buffer.alloc(200_000, 'x').toString('base64');
    for (let i = 0; i < 5; i++)
      await w.kube.create(SECRETS, w.ns, { metadata: { name: `unrelated-${i}` }, data: { blob: big } });
    // the examples reference one Secret (edge-auth)
    await new Promise((r) => setTimeout(r, 1500));
    expect(await metric(op.metricsUrl, 'edge_operator_secret_data_cached')).toBe(1);
  });

  it("keys the secret digests in status by the operator's own key and the namespace, and migrates earlier ones without re-applying modules", async () => {
    const key = await w.kube.get(SECRETS, w.ns, 'edge-operator-digest-key');
    const digestKey = Buffer.from((key.data as { key: string }).key, 'base64').toString('utf8');
    expect(Buffer.from(digestKey).length).toBeGreaterThanOrEqual(32);
    const route = await w.kube.get(ROUTES, w.ns, 'app-root');
    const digests = route.status!.secretDigests as Record<string, string>;
    expect(Object.keys(digests)).toContain('oidc');
    for (const d of Object.values(digests)) expect(d).toMatch(/^k2:[0-9a-f]{32}$/);

    // what the route's modules hold, to compute the digests older operators wrote
    const spec = route.spec as Record<string, unknown>;
    const ids = new Map<string, string>();
    for (const r of ROUTE.references!(spec)) {
      const target = await w.kube.get(res(BINDINGS.find((b) => b.kind === r.kind)!.plural), w.ns, r.name);
      ids.set(`${r.kind}/${r.name}`, target.status!.id as string);
    }
    const secret = await w.kube.get(SECRETS, w.ns, 'edge-auth');
    const value = (name: string, k: string) =>
      name === 'edge-auth'
        ? Buffer.from((secret.data as Record<string, string>)[k]!, 'base64').toString()
        : '';
    const earlier = (digest: (body: Record<string, unknown>, paths?: string[]) => string | undefined) => {
      const out: Record<string, string> = {};
      for (const m of ROUTE.modules ?? []) {
        const body = m.desired(spec, (k, n) => ids.get(`${k}/${n}`)!, value);
        const d = body && digest(body, m.secretPaths);
        if (d) out[m.name] = d;
      }
      expect(Object.keys(out).sort()).toEqual(Object.keys(digests).sort());
      return out;
    };
    const forms = {
      // the oldest operators keyed the digests by the object's uid
      'keyed by the uid': earlier((b, p) => legacySecretDigest(b, p, route.metadata.uid)),
      // then by the operator's key alone: equal secrets had equal digests in every namespace
      'keyed without the namespace': earlier((b, p) => unscopedSecretDigest(b, p, digestKey)),
    };
    let puts = 0;
    for (const [form, old] of Object.entries(forms)) {
      await op.kill();
      await w.kube.patch(ROUTES, w.ns, 'app-root', { status: { secretDigests: old } }, 'merge', 'status');
      op = await startOperator(w.emu, w.ns);
      const now = await waitFor(`digests ${form} migrated`, async () => {
        const d = (await w.kube.get(ROUTES, w.ns, 'app-root')).status!.secretDigests as Record<
          string,
          string
        >;
        return Object.values(d).every((v) => v.startsWith('k2:')) && d;
      });
      expect(now).toEqual(digests);
      // the new process applied no module again: the old digests proved the values
      puts += sumMetric(await metrics(op.metricsUrl), 'edge_api_requests_total', (l) =>
        /operation="httpsEdgeRouteModules\.\w+\.put"/.test(l),
      );
    }
    expect(puts).toBe(0);
  });

  it('objects labelled for another instance are left alone; an operator of that instance manages them', async () => {
    await w.kube.create(res('ippolicies'), w.ns, {
      ...obj('IPPolicy', w.ns, 'blue-policy', { description: 'for the blue install' }),
      metadata: { name: 'blue-policy', namespace: w.ns, labels: { [INSTANCE_LABEL]: 'blue' } },
    });
    await new Promise((r) => setTimeout(r, 3000));
    const untouched = await w.kube.get(res('ippolicies'), w.ns, 'blue-policy');
    expect(untouched.status).toBeUndefined();
    expect(untouched.metadata.finalizers ?? []).toEqual([]);

    const blue = await startOperator(w.emu, w.ns, ['--instance', 'blue']);
    try {
      await waitFor('blue policy Ready', async () =>
        ready(await w.kube.get(res('ippolicies'), w.ns, 'blue-policy')),
      );
      // the blue operator sees only its own object
      expect(await metric(blue.metricsUrl, 'edge_operator_managed_objects', { kind: 'IPPolicy' })).toBe(1);
    } finally {
      await blue.kill();
    }
  });

  it('reference cycles and self-references stall with the cycle named', async () => {
    const wb = (name: string, to: string[]) =>
      obj('WeightedBackend', w.ns, name, {
        backends: to.map((n) => ({ backendRef: { kind: 'WeightedBackend', name: n }, weight: 1 })),
      });
    await apply(w.kube, [wb('loop-a', ['loop-b']), wb('loop-b', ['loop-a']), wb('self', ['self'])], w.ns);
    const stalled = (name: string) =>
      waitFor(`${name} stalled`, async () => {
        const c = condition(await w.kube.get(res('weightedbackends'), w.ns, name), 'Stalled');
        return c?.status === 'True' && c.reason === 'ReferenceCycle' ? c : undefined;
      });
    expect((await stalled('loop-a')).message).toContain(
      'WeightedBackend loop-a -> WeightedBackend loop-b -> WeightedBackend loop-a',
    );
    expect((await stalled('self')).message).toContain('WeightedBackend self -> WeightedBackend self');
  });

  it('a reference listed twice is refused: at admission where the schema can say it, else as Stalled', async () => {
    // admission cannot afford the CEL for nested keys here: the engine refuses, naming both entries
    await apply(
      w.kube,
      [
        obj('WeightedBackend', w.ns, 'twice', {
          backends: [
            { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 1 },
            { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 2 },
          ],
        }),
      ],
      w.ns,
    );
    const c = await waitFor('duplicate stalled', async () => {
      const s = condition(await w.kube.get(res('weightedbackends'), w.ns, 'twice'), 'Stalled');
      return s?.reason === 'DuplicateReference' ? s : undefined;
    });
    expect(c.message).toContain(
      'spec.backends[1].backendRef and spec.backends[0].backendRef both reference TunnelGroupBackend web',
    );
    const err2 = await w.kube
      .create(
        res('iprestrictions'),
        w.ns,
        obj('IPRestriction', w.ns, 'twice', {
          type: 'api',
          ipPolicyRefs: [{ name: 'corp' }, { name: 'corp' }],
        }),
      )
      .catch((e: Error) => e);
    expect(String(err2)).toMatch(/spec.ipPolicyRefs\[1\]: Duplicate value/);
  });
});
