// Accounts on a real API server with the emulator serving two accounts: team A brings its own
// (an EdgeAccount named default), teams B and C share the platform's (a ClusterEdgeAccount),
// and the installation's own account is off. Each account holds exactly its namespaces'
// resources; refusals cost no API request; a rotated key is used without re-creating
// anything; one account answering 429 does not hold the other back; an account in use is held
// by its finalizer; a team's account, key Secret and objects deleted at once leave nothing behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, createClient } from '../../src/api/client.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/constants.ts';
import { KEY_FINALIZER } from '../../src/operator/runtime/kube/holds.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  condition,
  NAMESPACES,
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
const R = res('ippolicyrules');
const EA = accountResource('EdgeAccount');
const CEA = accountResource('ClusterEdgeAccount');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const KEY_A1 = 'key-of-account-a-1';
const KEY_A2 = 'key-of-account-a-2';
const KEY_B = 'key-of-account-b';

describe.skipIf(!!skipReason)('accounts: each team its own account, on its own budget', () => {
  let w: World;
  let op: OperatorProcess;
  const stamp = Date.now().toString(36);
  const inst = `acct-${stamp}`;
  const [nsA, nsB, nsC] = ['a', 'b', 'c'].map((t) => `${stamp}-team-${t}`) as [string, string, string];
  const shared = `${inst}-shared`;
  const labels = { [INSTANCE_LABEL]: inst };
  const mine = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, labels } });
  const sharedRef = { accountRef: { kind: 'ClusterEdgeAccount', name: shared } };

  const get = (r: typeof P, ns: string | undefined, name: string) =>
    w.kube.get(r, ns, name).catch(() => undefined);
  const until = (
    what: string,
    r: typeof P,
    ns: string | undefined,
    name: string,
    ok: (o: KubeObject) => boolean,
    ms = 30_000,
  ) =>
    waitFor(
      what,
      async () => {
        const o = await get(r, ns, name);
        return o && ok(o) ? o : undefined;
      },
      ms,
    );
  const readyObj = (r: typeof P, ns: string | undefined, name: string, ms?: number) =>
    until(`${ns ?? ''}/${name} Ready`, r, ns, name, ready, ms);
  const stalledWith = (r: typeof P, ns: string | undefined, name: string, reason: string) =>
    until(
      `${ns ?? ''}/${name} Stalled/${reason}`,
      r,
      ns,
      name,
      (o) => condition(o, 'Stalled')?.reason === reason,
    );
  const idOf = (o: KubeObject) => (o.status as { id: string }).id;
  const policyIds = async (key: string) => {
    const c = createClient({ baseUrl: w.emu.url, apiKey: key, rateLimitPerMinute: Infinity });
    try {
      return (await collect(c.ipPolicies.list())).map((p) => p.id).sort();
    } finally {
      await c.close();
    }
  };
  const secret = (ns: string, name: string, value: string) => ({
    metadata: { name, namespace: ns },
    stringData: { 'api-key': value },
  });

  beforeAll(async () => {
    w = await world('accounts', {
      apiKeys: [KEY_A1, KEY_A2],
      accounts: { b: KEY_B },
    });
    await w.kube.create(NAMESPACES, undefined, { metadata: { name: nsA } });
    // team B and C are admitted to the shared account, one by name, one by label
    await w.kube.create(NAMESPACES, undefined, { metadata: { name: nsB } });
    await w.kube.create(NAMESPACES, undefined, {
      metadata: { name: nsC, labels: { 'edge-account': shared } },
    });
    op = await startOperator(w.emu, w.ns, [
      '--namespaces',
      `${nsA},${nsB},${nsC}`,
      '--instance',
      inst,
      '--default-account=false',
    ]);
    await w.kube.create(SECRETS, nsA, secret(nsA, 'edge-key', KEY_A1));
    await w.kube.create(
      EA,
      nsA,
      mine({
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'EdgeAccount',
        metadata: { name: 'default', namespace: nsA },
        spec: { apiKeySecretRef: { name: 'edge-key', key: 'api-key' } },
      }),
    );
    // the shared account's key lives in the operator's own namespace (the default)
    await w.kube.create(SECRETS, w.ns, secret(w.ns, 'shared-key', KEY_B));
    await w.kube.create(
      CEA,
      undefined,
      mine({
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'ClusterEdgeAccount',
        metadata: { name: shared },
        spec: {
          apiKeySecretRef: { name: 'shared-key', key: 'api-key' },
          namespaces: [nsB],
          namespaceSelector: { matchLabels: { 'edge-account': shared } },
        },
      }),
    );
    await w.kube.create(P, nsA, mine(obj('IPPolicy', nsA, 'office', {})));
    await w.kube.create(P, nsB, mine(obj('IPPolicy', nsB, 'office', sharedRef)));
    await w.kube.create(P, nsC, mine(obj('IPPolicy', nsC, 'office', sharedRef)));
  }, 60_000);
  afterAll(async () => {
    await op?.kill();
    for (const ns of [nsA, nsB, nsC]) await w?.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
    // finalizers this run left: nothing holds a cluster-scoped account after the run
    const left = await get(CEA, undefined, shared);
    if (left) {
      await w.kube.patch(CEA, undefined, shared, { metadata: { finalizers: null } }).catch(() => {});
      await w.kube.delete(CEA, undefined, shared).catch(() => {});
    }
    await w?.close();
  });

  it('each account holds exactly its namespaces’ resources; the accounts say Ready, their URL and users', async () => {
    const a = await readyObj(P, nsA, 'office');
    const b = await readyObj(P, nsB, 'office');
    const c = await readyObj(P, nsC, 'office');
    expect((a.status as { account: string }).account).toBe(`EdgeAccount/${nsA}/default`);
    expect((b.status as { account: string }).account).toBe(`ClusterEdgeAccount/${shared}`);
    expect(await policyIds(KEY_A1)).toEqual([idOf(a)]);
    expect(await policyIds(KEY_B)).toEqual([idOf(b), idOf(c)].sort());
    const account = await until(
      'shared account lists its users',
      CEA,
      undefined,
      shared,
      (o) => ready(o) && (o.status as { objects?: { count: number } }).objects?.count === 2,
    );
    expect(account.status).toMatchObject({
      url: w.emu.url,
      objects: { count: 2, names: [`IPPolicy ${nsB}/office`, `IPPolicy ${nsC}/office`] },
    });
    expect(account.metadata.finalizers).toContain('edge.tunnel.dev/finalizer');
  });

  it('admission keeps accountRef as it was set: no change, no removal', async () => {
    const refused = (patch: unknown) =>
      w.kube.patch(P, nsB, 'office', patch).then(
        () => '',
        (e: Error) => e.message,
      );
    expect(await refused({ spec: { accountRef: { kind: 'ClusterEdgeAccount', name: 'other' } } })).toContain(
      'accountRef is immutable',
    );
    expect(await refused({ spec: { accountRef: null } })).toContain(
      'accountRef is immutable: it cannot be removed once set',
    );
  });

  it('AccountNotAllowed, NoAccount and AccountMismatch, each without an API request', async () => {
    const creates = () =>
      w.emu.counters.total('ipPolicies.create') + w.emu.counters.total('ipPolicyRules.create');
    const before = creates();
    // team A may not use the account shared with B and C
    await w.kube.create(P, nsA, mine(obj('IPPolicy', nsA, 'borrowed', sharedRef)));
    // team B has no account of its own, and the installation's is off
    await w.kube.create(P, nsB, mine(obj('IPPolicy', nsB, 'no-account', {})));
    // a rule of the shared account referencing, by name, a policy of another account of team B
    await w.kube.create(
      EA,
      nsB,
      mine({
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'EdgeAccount',
        metadata: { name: 'own', namespace: nsB },
        spec: { apiKeySecretRef: { name: 'no-such-secret', key: 'api-key' } },
      }),
    );
    await w.kube.create(
      P,
      nsB,
      mine(obj('IPPolicy', nsB, 'own', { accountRef: { kind: 'EdgeAccount', name: 'own' } })),
    );
    await w.kube.create(
      R,
      nsB,
      mine(
        obj('IPPolicyRule', nsB, 'cross', {
          ...sharedRef,
          ipPolicyRef: { name: 'own' },
          cidr: '10.0.0.0/8',
          action: 'allow',
        }),
      ),
    );
    const notAllowed = await stalledWith(P, nsA, 'borrowed', 'AccountNotAllowed');
    expect(condition(notAllowed, 'Stalled')?.message).toContain(`does not admit namespace ${nsA}`);
    await stalledWith(P, nsB, 'no-account', 'NoAccount');
    const mismatch = await stalledWith(R, nsB, 'cross', 'AccountMismatch');
    expect(condition(mismatch, 'Stalled')?.message).toBe(
      `spec.ipPolicyRef: IPPolicy own is in EdgeAccount ${nsB}/own, this object in ClusterEdgeAccount ${shared}: a reference never crosses accounts`,
    );
    // the account without its Secret says so, and its object waits without a request
    const own = await stalledWith(EA, nsB, 'own', 'KeySecretNotFound');
    expect(condition(own, 'Stalled')?.message).toBe(
      `Secret ${nsB}/no-such-secret, key api-key: Secret not found`,
    );
    expect(condition(await get(P, nsB, 'own'), 'Reconciling')?.reason ?? 'WaitingForAccount').toBe(
      'WaitingForAccount',
    );
    expect(creates()).toBe(before);
    for (const [r, ns, n] of [
      [P, nsA, 'borrowed'],
      [P, nsB, 'no-account'],
      [R, nsB, 'cross'],
      [P, nsB, 'own'],
    ] as const)
      await w.kube.delete(r, ns, n);
    await w.kube.delete(EA, nsB, 'own');
  });

  it("a namespace labelled into a ClusterEdgeAccount's selector: its waiting object goes on at once, not at the next resync", async () => {
    await w.kube.create(P, nsA, mine(obj('IPPolicy', nsA, 'relabelled', sharedRef)));
    await stalledWith(P, nsA, 'relabelled', 'AccountNotAllowed');
    await w.kube.patch(NAMESPACES, undefined, nsA, { metadata: { labels: { 'edge-account': shared } } });
    try {
      // the resync is 10 minutes away
      const o = await readyObj(P, nsA, 'relabelled', 15_000);
      expect((o.status as { account: string }).account).toBe(`ClusterEdgeAccount/${shared}`);
    } finally {
      await w.kube.delete(P, nsA, 'relabelled');
      await waitFor('relabelled gone', async () => !(await get(P, nsA, 'relabelled')), 30_000);
      await w.kube.patch(NAMESPACES, undefined, nsA, { metadata: { labels: { 'edge-account': null } } });
    }
  });

  it('a rotated key is used from the next request: no restart, nothing re-created; a refused key names the Secret, never the value', async () => {
    const before = await readyObj(P, nsA, 'office');
    await w.kube.patch(SECRETS, nsA, 'edge-key', { stringData: { 'api-key': 'wrong-key-value' } });
    const refused = await stalledWith(EA, nsA, 'default', 'KeyRefused');
    // the public API (and the emulator) answer an unknown key 401 or 403
    expect(condition(refused, 'Stalled')?.message).toMatch(
      new RegExp(`^the API refused the key in Secret ${nsA}/edge-key, key api-key \\(HTTP 40[13]\\)$`),
    );
    expect(JSON.stringify(refused)).not.toContain('wrong-key');
    await w.kube.patch(SECRETS, nsA, 'edge-key', { stringData: { 'api-key': KEY_A2 } });
    await until('account A Ready again', EA, nsA, 'default', ready);
    await w.kube.patch(P, nsA, 'office', { spec: { description: 'after rotation' } });
    const after = await until(
      'the change applied',
      P,
      nsA,
      'office',
      (o) =>
        ready(o) && (o.status as { observedGeneration: number }).observedGeneration === o.metadata.generation,
    );
    expect(idOf(after)).toBe(idOf(before));
    const c = createClient({ baseUrl: w.emu.url, apiKey: KEY_A2, rateLimitPerMinute: Infinity });
    expect((await c.ipPolicies.get(idOf(after))).description).toBe('after rotation');
    await c.close();
    expect(await policyIds(KEY_A2)).toEqual([idOf(before)]);
    expect(op.logs.join('\n')).not.toContain('wrong-key-value');
    expect(op.proc.exitCode).toBeNull();
  });

  it('one account answering 429 does not hold the other back', async () => {
    w.emu.faults.set({ rateLimitRate: 1, retryAfterSeconds: 2, accounts: ['b'] });
    try {
      const names = Array.from({ length: 8 }, (_, i) => `fast-${i}`);
      await w.kube.create(P, nsB, mine(obj('IPPolicy', nsB, 'slow', sharedRef)));
      const started = Date.now();
      for (const n of names) await w.kube.create(P, nsA, mine(obj('IPPolicy', nsA, n, {})));
      for (const n of names) await readyObj(P, nsA, n, 15_000);
      const took = Date.now() - started;
      // the shared account is throttled all along: its object is still waiting
      const slow = await get(P, nsB, 'slow');
      expect(ready(slow)).toBe(false);
      expect(took).toBeLessThan(15_000);
    } finally {
      w.emu.faults.set({});
    }
    await readyObj(P, nsB, 'slow', 60_000);
  });

  it('an account in use is held by its finalizer, says who uses it, and goes once they are gone', async () => {
    await w.kube.delete(CEA, undefined, shared);
    const held = await until(
      'shared account held',
      CEA,
      undefined,
      shared,
      (o) => condition(o, 'Reconciling')?.reason === 'InUse',
    );
    expect(condition(held, 'Reconciling')?.message).toContain(`IPPolicy ${nsB}/office`);
    // its objects still delete their remote resources through it
    for (const [ns, n] of [
      [nsB, 'office'],
      [nsB, 'slow'],
      [nsC, 'office'],
    ] as const)
      await w.kube.delete(P, ns, n);
    await waitFor('shared account gone', async () => !(await get(CEA, undefined, shared)), 30_000);
    expect(await policyIds(KEY_B)).toEqual([]);
  });

  it('a team’s account, key Secret and objects deleted in one sweep (as the namespace controller does) leave nothing behind', async () => {
    // this suite has no controller-manager: the sweep is done here, Secret first, in one go
    const objects = (await w.kube.list(P, nsA)).items.map((o) => o.metadata.name);
    expect(objects.length).toBeGreaterThan(1);
    expect((await policyIds(KEY_A2)).length).toBe(objects.length);
    // while they hold remote resources the key Secret is held, for an operator restarted meanwhile
    await waitFor('the key Secret held', async () =>
      ((await get(SECRETS, nsA, 'edge-key'))?.metadata.finalizers ?? []).includes(KEY_FINALIZER),
    );
    await Promise.all([
      w.kube.delete(SECRETS, nsA, 'edge-key'),
      w.kube.delete(EA, nsA, 'default'),
      ...objects.map((n) => w.kube.delete(P, nsA, n)),
    ]);
    await waitFor(
      'team A emptied',
      async () => !(await w.kube.list(P, nsA)).items.length && !(await get(EA, nsA, 'default')),
      60_000,
    );
    expect(await policyIds(KEY_A2)).toEqual([]);
    // and let go once they are gone: the Secret's delete finished
    await waitFor('the key Secret gone', async () => !(await get(SECRETS, nsA, 'edge-key')), 30_000);
  });
});
