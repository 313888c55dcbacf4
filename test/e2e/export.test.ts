// edgectl export, end to end: an account made by hand, exported, applied to a cluster where
// the operator runs. Everything is adopted and Ready without a single API write; objects whose
// Secrets are not there yet wait for them and leave the remote secrets alone; a second export
// equals the first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { exportAccount, toYaml } from '../../src/operator/export.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { decodeMetadata, encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { populateAccount } from '../support/account.ts';
import {
  condition,
  type OperatorProcess,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

/** API calls that change something, by operation (reads and the emulator's admin calls left out). */
const writes = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([k]) => !/\.(get|list) /.test(k))
    .reduce((n, [, v]) => n + v, 0);

describe.skipIf(!!skipReason)('edgectl export, applied', () => {
  let w: World;
  let op: OperatorProcess;
  let first: Awaited<ReturnType<typeof exportAccount>>;
  let before: number;
  const all = async () => {
    const out = [];
    for (const b of BINDINGS) out.push(...(await w.kube.list(res(b.plural), w.ns)).items);
    return out;
  };

  beforeAll(async () => {
    w = await world('export');
    const account = await populateAccount(w.api);
    first = await exportAccount(w.api, { namespace: w.ns, includeSecrets: true });
    expect(first.objects).toHaveLength(account.resources);
    before = writes(w.emu.counters.snapshot());
    op = await startOperator(w.emu, w.ns, ['--resync-period', '10s']);
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('adopts everything without a write; objects missing their Secret wait and keep the remote secret', async () => {
    await apply(w.kube, first.objects, w.ns);
    const needSecrets = new Set(first.secretNames);
    const waitingOnSecret = first.objects.filter((o) =>
      JSON.stringify(o.spec).match(/"clientSecretRef"|"secretRef"/),
    );
    expect(waitingOnSecret.length).toBeGreaterThan(0);
    await waitFor(
      'everything else Ready, the rest WaitingForSecret',
      async () => {
        for (const o of await all()) {
          const needs = waitingOnSecret.some((x) => x.kind === o.kind && x.metadata.name === o.metadata.name);
          if (needs ? condition(o, 'Ready')?.reason !== 'WaitingForSecret' : !ready(o)) return false;
        }
        return true;
      },
      90_000,
    );
    expect(needSecrets.size).toBeGreaterThan(0);
    expect(writes(w.emu.counters.snapshot()) - before).toBe(0);

    await apply(w.kube, first.secrets, w.ns);
    await waitFor('every object Ready', async () => (await all()).every(ready), 60_000);
    // and through a resync period of drift checks
    await new Promise((r) => setTimeout(r, 12_000));
    expect((await all()).every(ready)).toBe(true);
    expect(writes(w.emu.counters.snapshot()) - before).toBe(0);
  });

  it("--owned-by brings back an installation's own objects (an uninstall that kept the resources): adopted, not made again", async () => {
    // what an earlier installation with this cluster id left: a policy and its rule, under
    // object names that no longer exist here
    const clusterId = `e2e-${w.ns}`;
    const marker = (object: string) =>
      encodeMetadata({ cluster: clusterId, uid: `gone-${object}`, object }, '');
    const policy = await w.api.ipPolicies.create({
      description: 'kept on uninstall',
      metadata: marker(`IPPolicy/${w.ns}/kept`),
    });
    await w.api.ipPolicyRules.create({
      ip_policy_id: policy.id,
      cidr: '172.16.0.0/12',
      action: 'deny',
      metadata: marker(`IPPolicyRule/${w.ns}/kept-rule`),
    });
    const owned = await exportAccount(w.api, { ownedBy: clusterId });
    expect(owned.objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      `IPPolicy/${w.ns}/kept`,
      `IPPolicyRule/${w.ns}/kept-rule`,
    ]);
    const marks = w.emu.counters.snapshot();
    const mark = writes(marks);
    await apply(w.kube, owned.objects, w.ns);
    await waitFor(
      'both adopted and Ready',
      async () => {
        const got = await Promise.all([
          w.kube.get(res('ippolicies'), w.ns, 'kept'),
          w.kube.get(res('ippolicyrules'), w.ns, 'kept-rule'),
        ]);
        return got.every(ready) && got;
      },
      60_000,
    );
    expect((await w.kube.get(res('ippolicies'), w.ns, 'kept')).status).toMatchObject({ id: policy.id });
    // nothing made again: one update each, the owner marker taking the new object's uid
    const counts = w.emu.counters.snapshot();
    expect(Object.keys(counts).filter((k) => /\.create /.test(k) && counts[k]! > (marks[k] ?? 0))).toEqual(
      [],
    );
    expect(writes(counts) - mark).toBe(2);
    const uid = (await w.kube.get(res('ippolicies'), w.ns, 'kept')).metadata.uid!;
    expect(decodeMetadata((await w.api.ipPolicies.get(policy.id)).metadata).owner).toEqual({
      cluster: clusterId,
      uid,
      object: `IPPolicy/${w.ns}/kept`,
    });
    for (const o of owned.objects)
      await w.kube.delete(res(o.kind === 'IPPolicy' ? 'ippolicies' : 'ippolicyrules'), w.ns, o.metadata.name);
  });

  it('exports the same again once adopted', async () => {
    const again = await exportAccount(w.api, { namespace: w.ns, includeSecrets: true });
    expect(toYaml([...again.secrets, ...again.objects])).toBe(toYaml([...first.secrets, ...first.objects]));
  });
});
