// A hostile tenant inside a shared account, on a real API server, acting through the rights the
// chart gives tenants (the edge kinds in its own namespace; a second user also holds the
// status subresource, as GitOps and CI service accounts often do). The platform's resources,
// made through the API, and another account's are neither changed nor deleted; no condition or
// Event tells the tenant an id it does not hold; accounts a tenant makes are bounded.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { collect, createClient } from '../../src/api/client.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import type { Kube, KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  condition,
  impersonating,
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
const X = res('iprestrictions');
const EA = accountResource('EdgeAccount');
const CEA = accountResource('ClusterEdgeAccount');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const EVENTS = { group: '', version: 'v1', plural: 'events' };
const RBAC = (plural: string) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', plural });
const KEY_B = 'key-of-the-b-only-account';

/** The chart's tenant role as it ships: every namespaced kind of the group (files/crds), no status. */
function tenantRules(): object[] {
  const dir = join(import.meta.dirname, '../../helm/edge-operator/files/crds');
  const plurals = readdirSync(dir)
    .map(
      (f) =>
        parse(readFileSync(join(dir, f), 'utf8')) as { spec: { scope: string; names: { plural: string } } },
    )
    .filter((c) => c.spec.scope === 'Namespaced')
    .map((c) => c.spec.names.plural);
  return [
    {
      apiGroups: ['edge.tunnel.dev'],
      resources: plurals,
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'],
    },
    // what the built-in `edit` role gives besides: the namespace's Secrets (an account's key)
    {
      apiGroups: [''],
      resources: ['secrets', 'events'],
      verbs: ['get', 'list', 'watch', 'create', 'update'],
    },
  ];
}

describe.skipIf(!!skipReason)('red team: a tenant inside a shared account', () => {
  let w: World;
  let op: OperatorProcess;
  const stamp = Date.now().toString(36);
  const [teamA, teamB] = [`${stamp}-rt-a`, `${stamp}-rt-b`];
  const bOnly = `${stamp}-b-only`;
  const tenant = `${stamp}-alice`;
  const statusWriter = `${stamp}-ci-bot`;
  const platform: Record<string, string> = {};
  let alice: Kube;
  let bot: Kube;

  const get = (r: typeof P, ns: string | undefined, name: string) =>
    w.kube.get(r, ns, name).catch(() => undefined);
  const until = (
    what: string,
    r: typeof P,
    ns: string | undefined,
    name: string,
    ok: (o: KubeObject) => boolean,
  ) =>
    waitFor(what, async () => {
      const o = await get(r, ns, name);
      return o && ok(o) ? o : undefined;
    });
  const stalledWith = (r: typeof P, ns: string | undefined, name: string, reason: string) =>
    until(`${ns}/${name} Stalled/${reason}`, r, ns, name, (o) => condition(o, 'Stalled')?.reason === reason);
  const gone = (r: typeof P, ns: string, name: string) =>
    waitFor(`${ns}/${name} deleted`, async () => !(await get(r, ns, name)) || undefined);
  /** Every condition message and Event message a tenant of `ns` can read. */
  const tenantReads = async (ns: string): Promise<string> => {
    const texts: string[] = [];
    for (const r of [P, R, X, EA]) {
      const list = (await alice.list(r, ns).catch(() => ({ items: [] }))) as { items: KubeObject[] };
      for (const o of list.items) texts.push(JSON.stringify(o.status ?? {}));
    }
    const events = (await w.kube.list(EVENTS, ns)) as { items: { message?: string }[] };
    for (const e of events.items) texts.push(e.message ?? '');
    return texts.join('\n');
  };
  /** The platform's resources as the API holds them. */
  const platformState = async () => ({
    restriction: await w.api.ipRestrictions.get(platform.restriction!),
    policy: await w.api.ipPolicies.get(platform.policy!),
    rules: (await collect(w.api.ipPolicyRules.list())).filter((r) => r.ip_policy.id === platform.policy),
  });

  beforeAll(async () => {
    w = await world('redteam', { accounts: { b: KEY_B } });
    for (const name of [teamA, teamB]) await w.kube.create(NAMESPACES, undefined, { metadata: { name } });
    // the platform's own resources, made through the API: an IP policy and a dashboard restriction
    const policy = await w.api.ipPolicies.create({ description: 'platform offices' });
    await w.api.ipPolicyRules.create({ ip_policy_id: policy.id, cidr: '198.51.100.0/24', action: 'allow' });
    const restriction = await w.api.ipRestrictions.create({
      type: 'dashboard',
      enforced: true,
      ip_policy_ids: [policy.id],
    });
    platform.policy = policy.id;
    platform.restriction = restriction.id;
    // tenants: alice edits team-a as the chart's role allows; the CI bot may write status too
    await w.kube.create(RBAC('clusterroles'), undefined, {
      metadata: { name: `${stamp}-tenant` },
      rules: tenantRules(),
    });
    await w.kube.create(RBAC('clusterroles'), undefined, {
      metadata: { name: `${stamp}-status-writer` },
      rules: [{ apiGroups: ['edge.tunnel.dev'], resources: ['*/status'], verbs: ['get', 'patch', 'update'] }],
    });
    for (const [user, role] of [
      [tenant, 'tenant'],
      [statusWriter, 'tenant'],
      [statusWriter, 'status-writer'],
    ] as const)
      await w.kube.create(RBAC('rolebindings'), teamA, {
        metadata: { name: `${user}-${role}`, namespace: teamA },
        subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
        roleRef: { kind: 'ClusterRole', name: `${stamp}-${role}`, apiGroup: 'rbac.authorization.k8s.io' },
      });
    alice = impersonating(tenant);
    bot = impersonating(statusWriter);
    // a platform account that admits team-b only, on a key of its own
    await w.kube.create(SECRETS, w.ns, { metadata: { name: 'b-key' }, stringData: { 'api-key': KEY_B } });
    await w.kube.create(CEA, undefined, {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'ClusterEdgeAccount',
      metadata: { name: bOnly },
      spec: { apiKeySecretRef: { name: 'b-key', key: 'api-key' }, namespaces: [teamB] },
    });
    op = await startOperator(w.emu, w.ns, [
      '--namespaces',
      `${w.ns},${teamA},${teamB}`,
      '--max-accounts-per-namespace',
      '3',
    ]);
  }, 60_000);
  afterAll(async () => {
    await op?.kill();
    for (const ns of [teamA, teamB]) await w?.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
    const left = await get(CEA, undefined, bOnly);
    if (left) {
      await w.kube.patch(CEA, undefined, bOnly, { metadata: { finalizers: null } }).catch(() => {});
      await w.kube.delete(CEA, undefined, bOnly).catch(() => {});
    }
    for (const n of ['tenant', 'status-writer'])
      await w?.kube.delete(RBAC('clusterroles'), undefined, `${stamp}-${n}`).catch(() => {});
    await w?.close();
  });

  it('the precondition: the tenant role cannot write status, the CI bot can', async () => {
    await alice.create(P, teamA, obj('IPPolicy', teamA, 'probe', {}));
    const denied = await alice.patch(P, teamA, 'probe', { status: { id: 'ipp_x' } }, 'merge', 'status').then(
      () => 'written',
      (e: Error) => e.message,
    );
    expect(denied).toMatch(/forbidden/i);
    await until('probe Ready', P, teamA, 'probe', ready);
  });

  it("a tenant's own restriction of the platform's type learns no id of the platform's", async () => {
    const before = await platformState();
    await alice.create(
      X,
      teamA,
      obj('IPRestriction', teamA, 'mine', { type: 'dashboard', ipPolicyRefs: [{ name: 'probe' }] }),
    );
    const o = await until(
      'mine refused',
      X,
      teamA,
      'mine',
      (x) => condition(x, 'Stalled')?.status === 'True',
    );
    expect(condition(o, 'Stalled')!.message).toContain('another resource of the account');
    const seen = await tenantReads(teamA);
    expect(seen).not.toContain(platform.restriction);
    expect(seen).not.toContain(platform.policy);
    expect(await platformState()).toEqual(before);
    await alice.delete(X, teamA, 'mine');
    await gone(X, teamA, 'mine');
  });

  it("adopting the platform's restriction and policy by id is refused, and the tenant's delete leaves them", async () => {
    const before = await platformState();
    await alice.create(
      X,
      teamA,
      obj(
        'IPRestriction',
        teamA,
        'takeover',
        { type: 'dashboard', enforced: false, ipPolicyRefs: [{ name: 'probe' }] },
        { [ID_ANNOTATION]: platform.restriction! },
      ),
    );
    await alice.create(
      P,
      teamA,
      obj('IPPolicy', teamA, 'takeover', { description: 'mine now' }, { [ID_ANNOTATION]: platform.policy! }),
    );
    // observing it (managementPolicy Observe) would read it into status: refused the same way
    await alice.create(
      P,
      teamA,
      obj('IPPolicy', teamA, 'peek', { managementPolicy: 'Observe' }, { [ID_ANNOTATION]: platform.policy! }),
    );
    for (const [r, n] of [
      [X, 'takeover'],
      [P, 'takeover'],
      [P, 'peek'],
    ] as const) {
      const o = await stalledWith(r, teamA, n, 'AdoptionNotAllowed');
      expect(condition(o, 'Stalled')!.message).toContain('spec.adoptFrom');
      expect((o.status as { id?: string; description?: string }).id).toBeUndefined();
    }
    expect(await platformState()).toEqual(before);
    for (const [r, n] of [
      [X, 'takeover'],
      [P, 'takeover'],
      [P, 'peek'],
    ] as const)
      await alice.delete(r, teamA, n);
    for (const [r, n] of [
      [X, 'takeover'],
      [P, 'takeover'],
      [P, 'peek'],
    ] as const)
      await gone(r, teamA, n);
    const after = await platformState();
    expect(after).toEqual(before);
    expect(decodeMetadata(after.policy.metadata).owner).toBeUndefined();
  });

  it("a raw id into the platform's policy adds no rule to it", async () => {
    const before = await platformState();
    await alice.create(
      R,
      teamA,
      obj('IPPolicyRule', teamA, 'sneak', {
        ipPolicyID: platform.policy,
        cidr: '0.0.0.0/0',
        action: 'allow',
      }),
    );
    await stalledWith(R, teamA, 'sneak', 'AdoptionNotAllowed');
    expect(await platformState()).toEqual(before);
  });

  it("a status writer's forged status.id lends no reference or raw id the platform's policy", async () => {
    const before = await platformState();
    await bot.create(P, teamA, obj('IPPolicy', teamA, 'decoy', {}));
    // the decoy's own sync makes it a policy of its own; then its status is pointed at the platform's
    await until('decoy Ready', P, teamA, 'decoy', ready);
    await bot.patch(
      P,
      teamA,
      'decoy',
      { status: { id: platform.policy, account: 'installation' } },
      'merge',
      'status',
    );
    await bot.create(
      R,
      teamA,
      obj('IPPolicyRule', teamA, 'via-ref', {
        ipPolicyRef: { name: 'decoy' },
        cidr: '0.0.0.0/0',
        action: 'allow',
      }),
    );
    await bot.create(
      R,
      teamA,
      obj('IPPolicyRule', teamA, 'via-id', {
        ipPolicyID: platform.policy,
        cidr: '0.0.0.0/0',
        action: 'allow',
      }),
    );
    // the decoy's next sync refuses the platform's policy as its own; the rules never use it
    await stalledWith(P, teamA, 'decoy', 'AdoptionNotAllowed');
    await new Promise((r) => setTimeout(r, 5000));
    for (const n of ['via-ref', 'via-id']) {
      const o = await get(R, teamA, n);
      expect(ready(o), n).toBe(false);
      expect((o?.status as { id?: string } | undefined)?.id, n).toBeUndefined();
    }
    expect(await platformState()).toEqual(before);
  });

  it('the platform namespace (the default of adoptFrom) may adopt what it made through the API', async () => {
    const made = await w.api.ipPolicies.create({ description: 'made through the API' });
    await w.kube.create(
      P,
      w.ns,
      obj('IPPolicy', w.ns, 'adopted', { description: 'made through the API' }, { [ID_ANNOTATION]: made.id }),
    );
    const o = await until('adopted Ready', P, w.ns, 'adopted', ready);
    expect((o.status as { id: string }).id).toBe(made.id);
  });

  it("a forged status.account reaches no other account, and the object's own resource is not orphaned", async () => {
    // team-b's policy in the b-only account, and team-a's in the installation's
    await w.kube.create(
      P,
      teamB,
      obj('IPPolicy', teamB, 'b', { accountRef: { kind: 'ClusterEdgeAccount', name: bOnly } }),
    );
    const b = await until('team-b policy Ready', P, teamB, 'b', ready);
    const bId = (b.status as { id: string }).id;
    await alice.create(P, teamA, obj('IPPolicy', teamA, 'victim-of-forgery', {}));
    const a = await until('team-a policy Ready', P, teamA, 'victim-of-forgery', ready);
    const aId = (a.status as { id: string }).id;
    const accountB = createClient({ baseUrl: w.emu.url, apiKey: KEY_B, rateLimitPerMinute: Infinity });
    try {
      await bot.patch(
        P,
        teamA,
        'victim-of-forgery',
        { status: { account: `ClusterEdgeAccount/${bOnly}`, id: bId } },
        'merge',
        'status',
      );
      // put right: the installation's account and the object's own id, with a Warning naming the field
      const fixed = await until(
        'status put right',
        P,
        teamA,
        'victim-of-forgery',
        (o) => (o.status as { account?: string }).account === 'installation',
      );
      expect((fixed.status as { id: string }).id).toBe(aId);
      const events = (await w.kube.list(EVENTS, teamA)) as { items: { reason?: string; message?: string }[] };
      expect(events.items.find((e) => e.reason === 'StatusCorrected')?.message).toContain('status.account');
      // forged again, then deleted at once: the delete goes to the account the object resolves to
      await bot.patch(
        P,
        teamA,
        'victim-of-forgery',
        { status: { account: `ClusterEdgeAccount/${bOnly}`, id: bId } },
        'merge',
        'status',
      );
      await alice.delete(P, teamA, 'victim-of-forgery');
      await gone(P, teamA, 'victim-of-forgery');
      expect((await accountB.ipPolicies.get(bId)).id).toBe(bId);
      expect(
        await w.api.ipPolicies.get(aId).then(
          () => 'still there',
          () => 'deleted',
        ),
      ).toBe('deleted');
      expect(ready(await get(P, teamB, 'b'))).toBe(true);
    } finally {
      await accountB.close();
    }
  });

  it('a tenant cannot make accounts without limit, nor give one a budget above the installation', async () => {
    await alice.create(SECRETS, teamA, { metadata: { name: 'k' }, stringData: { 'api-key': w.emu.apiKey } });
    const account = (name: string, spec: Record<string, unknown> = {}) => ({
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'EdgeAccount',
      metadata: { name, namespace: teamA },
      spec: { apiKeySecretRef: { name: 'k', key: 'api-key' }, ...spec },
    });
    for (const n of ['a1', 'a2', 'a3', 'a4', 'a5']) {
      await alice.create(EA, teamA, account(n));
      // creation times are whole seconds: the order the limit keeps is the order they came
      await new Promise((r) => setTimeout(r, 1100));
    }
    await alice.create(EA, teamA, account('greedy', { rateLimitPerMinute: 1_000_000 }));
    for (const n of ['a1', 'a2', 'a3']) await until(`${n} Ready`, EA, teamA, n, ready);
    for (const n of ['a4', 'a5']) {
      const o = await stalledWith(EA, teamA, n, 'AccountLimit');
      expect(condition(o, 'Stalled')!.message).toContain('--max-accounts-per-namespace');
    }
    const greedy = await stalledWith(EA, teamA, 'greedy', 'RateLimitNotAllowed');
    expect(condition(greedy, 'Stalled')!.message).toContain('spec.rateLimitPerMinute 1000000');
    // accounts beyond the limit hold nothing: no metric series of theirs
    const metrics = await (await fetch(op.metricsUrl)).text();
    expect(metrics).toContain(`EdgeAccount/${teamA}/a1`);
    for (const n of ['a4', 'a5', 'greedy']) expect(metrics).not.toContain(`EdgeAccount/${teamA}/${n}"`);
    // one goes: the oldest waiting takes its place
    await alice.delete(EA, teamA, 'a1');
    await until('a4 Ready once a1 is gone', EA, teamA, 'a4', ready);
    expect(condition(await get(EA, teamA, 'a5'), 'Stalled')?.reason).toBe('AccountLimit');
  });

  it('accounts on one key share one budget: their requests count under one account, no 429 of their own', async () => {
    await w.kube.create(SECRETS, teamB, { metadata: { name: 'same-key' }, stringData: { 'api-key': KEY_B } });
    for (const n of ['k1', 'k2'])
      await w.kube.create(EA, teamB, {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'EdgeAccount',
        metadata: { name: n, namespace: teamB },
        spec: { apiKeySecretRef: { name: 'same-key', key: 'api-key' } },
      });
    for (const n of ['k1', 'k2']) await until(`${n} Ready`, EA, teamB, n, ready);
    for (const [i, n] of ['k1', 'k2', 'k1', 'k2'].entries())
      await w.kube.create(
        P,
        teamB,
        obj('IPPolicy', teamB, `on-${n}-${i}`, { accountRef: { kind: 'EdgeAccount', name: n } }),
      );
    for (const [i, n] of ['k1', 'k2', 'k1', 'k2'].entries())
      await until(`on-${n}-${i} Ready`, P, teamB, `on-${n}-${i}`, ready);
    const metrics = await (await fetch(op.metricsUrl)).text();
    const series = (account: string) =>
      metrics
        .split('\n')
        .filter((l) => l.startsWith('edge_api_requests_total') && l.includes(`account="${account}"`));
    // the first account on the key (the platform's b-only) holds the one client and budget
    expect(series(`ClusterEdgeAccount/${bOnly}`).length).toBeGreaterThan(0);
    expect(series(`EdgeAccount/${teamB}/k1`)).toEqual([]);
    expect(series(`EdgeAccount/${teamB}/k2`)).toEqual([]);
    expect(w.emu.counters.of('b').snapshot()['ipPolicies.create 201']).toBeGreaterThanOrEqual(5);
  });

  it('admission refuses an empty namespaceSelector and an apiURL with whitespace, naming the field', async () => {
    const refused = (spec: Record<string, unknown>) =>
      w.kube
        .create(CEA, undefined, {
          apiVersion: 'edge.tunnel.dev/v1alpha1',
          kind: 'ClusterEdgeAccount',
          metadata: { name: `${stamp}-bad-${Math.random().toString(36).slice(2, 7)}` },
          spec: { apiKeySecretRef: { name: 'b-key', key: 'api-key' }, ...spec },
        })
        .then(
          () => 'accepted',
          (e: Error) => e.message,
        );
    expect(await refused({ namespaceSelector: {} })).toContain('namespaceSelector');
    expect(await refused({ namespaces: [teamB], apiURL: `${w.emu.url} ` })).toContain('apiURL');
    const teamAccount = await alice
      .create(EA, teamA, {
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'EdgeAccount',
        metadata: { name: 'spaced', namespace: teamA },
        spec: { apiKeySecretRef: { name: 'k', key: 'api-key' }, apiURL: `${w.emu.url} ` },
      })
      .then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(teamAccount).toContain('apiURL');
  });
});
