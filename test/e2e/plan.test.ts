// edgectl plan against a real API server and the emulator, run as a user runs it (a child
// process): an IP policy the operator made and left Ready, then files that keep it, change its
// description, add rules (one to a policy the same files create), adopt a policy made by hand
// (one GET), adopt by id annotation a policy another namespace manages (refused, and a rule of
// it waits), plan an object being deleted, use an EdgeAccount's and a ClusterEdgeAccount's key
// from its Secret, and plan as a user who may read one account's key Secret and not another's
// (impersonated through the kubeconfig). Exit codes 0, 2 and 1, the text and the JSON; and not
// one write: the emulator counts no request but GETs, the API server no POST, PUT, PATCH or
// DELETE, and no object of the test's namespaces changes while edgectl plans.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createClient } from '../../src/api/client.ts';
import { flattenOperations } from '../../src/api/operations.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import {
  edgeAccount,
  kubeconfig,
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
const CEA = accountResource('ClusterEdgeAccount');
const RBAC = (plural: string) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', plural });
/** The key of a second account of the emulator: an EdgeAccount's, in a Secret. */
const TEAM_KEY = 'key-of-the-team-account';

/** The CLI as a user runs it: this cluster, the emulator's URL and key in the environment. */
function edgectl(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('EDGE_')) delete base[k];
  const p = spawn(process.execPath, [join(REPO_ROOT, 'src/cli/edgectl.ts'), ...args], {
    cwd: REPO_ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => {
    stdout += d;
  });
  p.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The HTTP method of each API operation, by the name the emulator counts it under. */
const METHOD = new Map(flattenOperations().map(([name, op]) => [name, op.method]));

/** What the emulator answered between two snapshots of its counters ("operation status" -> calls). */
const answered = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  );
/** Of those, the calls that are not a GET (an unknown path counts as one). */
const notGets = (calls: Record<string, number>) =>
  Object.keys(calls).filter((k) => METHOD.get(k.split(' ')[0]!) !== 'GET');

describe.skipIf(!!skipReason)('edgectl plan', () => {
  let w: World;
  let op: OperatorProcess | undefined;
  let other: string;
  let dir: string;
  /** A kubeconfig of the same cluster and credentials, impersonating a user of few rights. */
  let reader: string;
  /** A ClusterEdgeAccount on the team's key (the Secret the reader may not read), admitting the namespace. */
  let cluster: string;
  const ids: Record<string, string> = {};

  /**
   * The API server's writes, by series (GET /metrics, admin credentials): every write verb of
   * every resource but the leases the API server renews itself.
   */
  async function kubeWrites(): Promise<Map<string, number>> {
    const auth = await w.kube.target.auth();
    const r = await request(`${w.kube.server}/metrics`, {
      headers: { ...auth.headers, accept: 'text/plain' },
      dispatcher: auth.dispatcher,
    });
    const text = await r.body.text();
    expect(r.statusCode).toBe(200);
    const out = new Map<string, number>();
    for (const line of text.split('\n'))
      if (
        line.startsWith('apiserver_request_total{') &&
        !line.includes('resource="leases"') &&
        /verb="(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY|CREATE|UPDATE)"/.test(line)
      )
        out.set(line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1)));
    return out;
  }
  /**
   * Every object of the test's namespaces a plan could touch, and the test's cluster-scoped ones,
   * by resourceVersion: what changes between two readings was written, whoever else shares the
   * API server (its counters have no namespace).
   */
  async function objectVersions(): Promise<Map<string, string>> {
    const core = (plural: string) => ({ group: '', version: 'v1', plural });
    const kinds = [
      ...BINDINGS.map((b) => res(b.plural)),
      accountResource('EdgeAccount'),
      ...['secrets', 'configmaps', 'events'].map(core),
    ];
    const out = new Map<string, string>();
    const add = (
      plural: string,
      o: { metadata: { namespace?: string; name: string; resourceVersion?: string } },
    ) =>
      out.set(`${plural} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.resourceVersion ?? '');
    for (const ns of [w.ns, other])
      for (const r of kinds) for (const o of (await w.kube.list(r, ns)).items) add(r.plural, o);
    for (const o of (await w.kube.list(CEA)).items) if (o.metadata.name === cluster) add(CEA.plural, o);
    for (const o of (await w.kube.list(NAMESPACES)).items)
      if ([w.ns, other].includes(o.metadata.name)) add('namespaces', o);
    return out;
  }
  /** The objects made, changed or gone between two readings. */
  const changed = (before: Map<string, string>, after: Map<string, string>) =>
    [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k)).sort();

  /** The series that grew between two readings. */
  const grew = (before: Map<string, number>, after: Map<string, number>) =>
    [...after]
      .filter(([k, v]) => v > (before.get(k) ?? 0))
      .map(([k, v]) => `${k} +${v - (before.get(k) ?? 0)}`);

  const file = (name: string, docs: object[]) => {
    const path = join(dir, name);
    writeFileSync(path, docs.map((d) => JSON.stringify(d)).join('\n---\n'));
    return path;
  };

  /** What the emulator answered while the last plan ran, every account's calls and the team account's. */
  const calls = { all: {} as Record<string, number>, team: {} as Record<string, number> };

  /**
   * edgectl plan of these files (the installation's key in the environment, or with `flags` as
   * --api-url and --api-key; `as` another kubeconfig); asserts the emulator answered nothing but
   * GETs and the API server counted no write while it ran.
   */
  async function plan(files: string[], o: { more?: string[]; flags?: boolean; as?: string } = {}) {
    const snap = () => ({ all: w.emu.counters.snapshot(), team: w.emu.counters.of('team').snapshot() });
    const [emuBefore, kubeBefore, objectsBefore] = [snap(), await kubeWrites(), await objectVersions()];
    const api = ['--api-url', w.emu.url, '--api-key', w.emu.apiKey];
    const args = ['plan', ...files.flatMap((f) => ['-f', f]), '-n', w.ns, '--kubeconfig', o.as ?? kubeconfig];
    const r = await edgectl(
      [...args, '--cluster-id', `e2e-${w.ns}`, ...(o.flags ? api : []), ...(o.more ?? [])],
      o.flags ? {} : { EDGE_API_URL: w.emu.url, EDGE_API_KEY: w.emu.apiKey },
    );
    const emuAfter = snap();
    calls.all = answered(emuBefore.all, emuAfter.all);
    calls.team = answered(emuBefore.team, emuAfter.team);
    expect(notGets(calls.all)).toEqual([]);
    expect(changed(objectsBefore, await objectVersions())).toEqual([]);
    expect(grew(kubeBefore, await kubeWrites())).toEqual([]);
    return r;
  }

  const corp = (description: string) => obj('IPPolicy', w.ns, 'corp', { description });
  const rule = (name: string, policy: string, cidr: string) =>
    obj('IPPolicyRule', w.ns, name, { ipPolicyRef: { name: policy }, cidr, action: 'allow' });
  /** A policy of the files taking the remote one of this id (the operator's id annotation). */
  const adopting = (name: string, id: string, spec: Record<string, unknown>) =>
    obj('IPPolicy', w.ns, name, spec, { [ID_ANNOTATION]: id });

  beforeAll(async () => {
    w = await world('plan', { accounts: { team: TEAM_KEY } });
    other = `${w.ns}-b`;
    await w.kube.create(NAMESPACES, undefined, { metadata: { name: other } });
    op = await startOperator(w.emu, w.ns, ['--namespaces', `${w.ns},${other}`]);
    await w.kube.create(P, w.ns, corp('a'));
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, 'doomed', { description: 'to go' }));
    await w.kube.create(P, other, obj('IPPolicy', other, 'theirs', { description: 'theirs' }));
    for (const [ns, name] of [
      [w.ns, 'corp'],
      [w.ns, 'doomed'],
      [other, 'theirs'],
    ] as const) {
      const o = await waitFor(`${name} Ready`, async () => {
        const x = await w.kube.get(P, ns, name);
        return ready(x) ? x : undefined;
      });
      ids[name] = (o.status as { id: string }).id;
    }
    // the API server's counter sees the operator's writes: its standing still below means something
    expect([...(await kubeWrites()).values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    await op.kill();
    op = undefined;
    // deleted while the operator is away: its finalizer keeps it, being deleted, for the plan;
    // and both the API server's counter and the objects' versions see that one write (what the
    // plans are checked with)
    const [kubeBefore, objectsBefore] = [await kubeWrites(), await objectVersions()];
    await w.kube.delete(P, w.ns, 'doomed');
    expect(grew(kubeBefore, await kubeWrites())).toEqual([expect.stringMatching(/verb="DELETE".*\+1$/)]);
    expect(changed(objectsBefore, await objectVersions())).toEqual([`ippolicies ${w.ns}/doomed`]);

    // made outside the cluster: a policy of the installation's account, one of the team's; the
    // emulator's counters see both creates
    const emuBefore = w.emu.counters.snapshot();
    ids.loose = (await w.api.ipPolicies.create({ description: 'made by hand' })).id;
    const team = createClient({ baseUrl: w.emu.url, apiKey: TEAM_KEY, rateLimitPerMinute: Infinity });
    ids.team = (await team.ipPolicies.create({ description: 'made by the team' })).id;
    await team.close();
    const made = answered(emuBefore, w.emu.counters.snapshot());
    expect(made).toEqual({ 'ipPolicies.create 201': 2 });
    expect(notGets(made)).toEqual(['ipPolicies.create 201']);
    // two EdgeAccounts on the team's key: the reader may read the Secret of one only
    await edgeAccount(w.kube, w.ns, { name: 'open', secret: 'open-key', key: TEAM_KEY, apiURL: w.emu.url });
    await edgeAccount(w.kube, w.ns, {
      name: 'closed',
      secret: 'closed-key',
      key: TEAM_KEY,
      apiURL: w.emu.url,
    });
    cluster = `plan-${w.ns}`;
    await w.kube.create(CEA, undefined, {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'ClusterEdgeAccount',
      metadata: { name: cluster },
      spec: {
        apiKeySecretRef: { name: 'closed-key', key: 'key', namespace: w.ns },
        apiURL: w.emu.url,
        namespaces: [w.ns],
        adoptFrom: [w.ns],
      },
    });
    const user = `plan-reader-${w.ns}`;
    await w.kube.create(RBAC('roles'), w.ns, {
      metadata: { name: 'plan-reader' },
      rules: [
        { apiGroups: ['edge.tunnel.dev'], resources: ['*'], verbs: ['get', 'list'] },
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['open-key'], verbs: ['get'] },
      ],
    });
    await w.kube.create(RBAC('rolebindings'), w.ns, {
      metadata: { name: 'plan-reader' },
      subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      roleRef: { kind: 'Role', name: 'plan-reader', apiGroup: 'rbac.authorization.k8s.io' },
    });
    await w.kube.create(RBAC('clusterroles'), undefined, {
      metadata: { name: user },
      rules: [{ apiGroups: ['edge.tunnel.dev'], resources: ['clusteredgeaccounts'], verbs: ['get', 'list'] }],
    });
    await w.kube.create(RBAC('clusterrolebindings'), undefined, {
      metadata: { name: user },
      subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      roleRef: { kind: 'ClusterRole', name: user, apiGroup: 'rbac.authorization.k8s.io' },
    });
    const kc = parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: Record<string, unknown> }[] };
    for (const u of kc.users) u.user.as = user;
    // beside the original: the certificate files it names may be relative to it
    reader = join(dirname(kubeconfig), `plan-${w.ns}.kubeconfig`);
    writeFileSync(reader, stringify(kc));
    dir = mkdtempSync(join(tmpdir(), 'edgectl-plan-'));
  }, 90_000);
  afterAll(async () => {
    await op?.kill();
    await w?.kube.patch(P, w.ns, 'doomed', { metadata: { finalizers: null } }).catch(() => {});
    if (cluster) await w.kube.delete(CEA, undefined, cluster).catch(() => {});
    for (const r of ['clusterrolebindings', 'clusterroles'])
      await w?.kube.delete(RBAC(r), undefined, `plan-reader-${w.ns}`).catch(() => {});
    await w?.kube.delete(NAMESPACES, undefined, other).catch(() => {});
    await w?.close();
  });

  it('the policy as it is: nothing to do, exit 0', async () => {
    const r = await plan([file('a.yaml', [corp('a')])]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`= IPPolicy ${w.ns}/corp: no changes ${ids.corp}`);
    expect(r.code).toBe(0);
    // one GET of the policy, with the installation's key
    expect(calls.all).toEqual({ 'ipPolicies.get 200': 1 });
  });

  it('a changed description and new rules: update field by field, creates with their bodies, exit 2', async () => {
    const r = await plan([
      file('b.yaml', [corp('b')]),
      file('c.yaml', [
        rule('office', 'corp', '192.0.2.0/24'),
        obj('IPPolicy', w.ns, 'fresh', { description: 'made with its rule' }),
        rule('fresh-office', 'fresh', '198.51.100.0/24'),
      ]),
    ]);
    expect(r.stderr).toBe('');
    const out = r.stdout.split('\n');
    expect(out).toContain(`~ IPPolicy ${w.ns}/corp: update ${ids.corp}`);
    expect(out).toContain('    description: "a" -> "b"');
    expect(out).toContain(`+ IPPolicyRule ${w.ns}/office: create`);
    expect(out).toContain(`    ip_policy_id: "${ids.corp}"`);
    expect(out).toContain('    cidr: "192.0.2.0/24"');
    expect(out).toContain(`+ IPPolicy ${w.ns}/fresh: create`);
    // a reference to a policy the same files create: the id it will have
    expect(out).toContain('    ip_policy_id: "<id of IPPolicy/fresh>"');
    expect(out).toContain(
      'Plan: 3 to create, 1 to update, 0 to adopt, 0 to delete, 0 unchanged; 0 refused, 0 waiting, 0 unknown.',
    );
    expect(r.code).toBe(2);
  });

  it('adopting a policy made by hand (a namespace of --adopt-from): one GET, and a rule of the files gets its id; exit 2', async () => {
    const r = await plan(
      [
        file('adopt.yaml', [
          adopting('outside', ids.loose!, { description: 'made by hand' }),
          rule('outside-office', 'outside', '203.0.113.0/24'),
        ]),
      ],
      { more: ['--adopt-from', w.ns] },
    );
    expect(r.stderr).toBe('');
    const out = r.stdout.split('\n');
    expect(out).toContain(`~ IPPolicy ${w.ns}/outside: adopt ${ids.loose}`);
    expect(out).toContain('    (equal to the spec: no API write)');
    expect(out).toContain(`+ IPPolicyRule ${w.ns}/outside-office: create`);
    expect(out).toContain(`    ip_policy_id: "${ids.loose}"`);
    expect(r.code).toBe(2);
    // one GET for the id, whatever the passes over references
    expect(calls.all).toEqual({ 'ipPolicies.get 200': 1 });
  });

  it('an object being deleted: delete, exit 2 (the key as --api-url and --api-key)', async () => {
    const r = await plan([file('doomed.yaml', [obj('IPPolicy', w.ns, 'doomed', { description: 'to go' })])], {
      flags: true,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(
      `- IPPolicy ${w.ns}/doomed: delete ${ids.doomed} (being deleted: its remote resource goes with it)`,
    );
    expect(r.stdout).toContain('0 to create, 0 to update, 0 to adopt, 1 to delete');
    expect(r.code).toBe(2);
    // still there, its remote resource too
    expect((await w.kube.get(P, w.ns, 'doomed')).metadata.deletionTimestamp).toBeTruthy();
    expect((await w.api.ipPolicies.get(ids.doomed!)).id).toBe(ids.doomed);
  });

  it("adopting another namespace's policy by id annotation: refused OwnedElsewhere, and the refusal wins, exit 1; -o json", async () => {
    const steal = adopting('steal', ids.theirs!, { description: 'mine now' });
    const files = [file('a.yaml', [corp('a')]), file('c1.yaml', [rule('office', 'corp', '192.0.2.0/24')])];
    const text = await plan([...files, file('d.yaml', [steal])]);
    expect(text.stdout).toContain(
      `! IPPolicy ${w.ns}/steal: refused: OwnedElsewhere: ${ids.theirs} is managed by an object in another namespace; not taking it over`,
    );
    expect(text.code).toBe(1);

    const r = await plan([...files, join(dir, 'd.yaml')], { more: ['-o', 'json'] });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({
      kind: 'EdgePlan',
      version: 1,
      exitCode: 1,
      summary: { create: 1, update: 0, nothing: 1, refuse: 1 },
      notes: [],
    });
    expect(doc.objects).toEqual([
      {
        kind: 'IPPolicy',
        namespace: w.ns,
        name: 'corp',
        action: 'nothing',
        id: ids.corp,
        account: 'installation',
      },
      {
        kind: 'IPPolicyRule',
        namespace: w.ns,
        name: 'office',
        action: 'create',
        account: 'installation',
        body: expect.objectContaining({ cidr: '192.0.2.0/24', action: 'allow', ip_policy_id: ids.corp }),
      },
      {
        kind: 'IPPolicy',
        namespace: w.ns,
        name: 'steal',
        action: 'refuse',
        account: 'installation',
        reason: 'OwnedElsewhere',
        message: `${ids.theirs} is managed by an object in another namespace; not taking it over`,
      },
    ]);
    // nothing of the plans was made
    expect((await w.kube.list(P, w.ns)).items.map((o) => o.metadata.name).sort()).toEqual(['corp', 'doomed']);
  });

  it('a rule of a policy that would be refused waits for it; one of a policy the files create gets its placeholder; exit 1', async () => {
    const r = await plan([
      file('wait.yaml', [
        adopting('bad', ids.theirs!, { description: 'mine now' }),
        rule('bad-office', 'bad', '192.0.2.0/24'),
        obj('IPPolicy', w.ns, 'good', {}),
        rule('good-office', 'good', '192.0.2.0/24'),
      ]),
    ]);
    expect(r.stderr).toBe('');
    const out = r.stdout.split('\n');
    expect(out).toContain(
      `! IPPolicy ${w.ns}/bad: refused: OwnedElsewhere: ${ids.theirs} is managed by an object in another namespace; not taking it over`,
    );
    expect(out.find((l) => l.includes(`IPPolicyRule ${w.ns}/bad-office:`))).toMatch(
      new RegExp(`^! IPPolicyRule ${w.ns}/bad-office: would wait: WaitingForReference: `),
    );
    expect(out).toContain(`+ IPPolicyRule ${w.ns}/good-office: create`);
    expect(out).toContain('    ip_policy_id: "<id of IPPolicy/good>"');
    expect(r.code).toBe(1);
  });

  it("as a user who may read one account's key Secret and not another's: that account's key used, the objects of an EdgeAccount and a ClusterEdgeAccount on the other refused KeySecretForbidden; exit 1", async () => {
    const files = [
      file('accounts.yaml', [
        adopting('by-open', ids.team!, {
          description: 'made by the team',
          accountRef: { kind: 'EdgeAccount', name: 'open' },
        }),
        obj('IPPolicy', w.ns, 'by-closed', {
          description: 'no key',
          accountRef: { kind: 'EdgeAccount', name: 'closed' },
        }),
        obj('IPPolicy', w.ns, 'by-cluster', {
          description: 'no key either',
          accountRef: { kind: 'ClusterEdgeAccount', name: cluster },
        }),
      ]),
    ];
    const r = await plan(files, { as: reader });
    expect(r.code).toBe(1);
    const out = r.stdout.split('\n');
    expect(out).toContain(`~ IPPolicy ${w.ns}/by-open: adopt ${ids.team}`);
    expect(out).toContain(
      `! IPPolicy ${w.ns}/by-closed: refused: KeySecretForbidden: EdgeAccount ${w.ns}/closed: Secret ${w.ns}/closed-key, key key: you may not read it (edgectl plan reads an account's key with your own Kubernetes rights)`,
    );
    expect(out).toContain(
      `! IPPolicy ${w.ns}/by-cluster: refused: KeySecretForbidden: ClusterEdgeAccount ${cluster}: Secret ${w.ns}/closed-key, key key: you may not read it (edgectl plan reads an account's key with your own Kubernetes rights)`,
    );
    // what the user may not list is said, not failed on
    expect(r.stderr).toContain('plan: note: you may not list');
    // the team's policy read with the team's key, from the Secret the user may read: one GET, none other
    expect(calls.team).toEqual({ 'ipPolicies.get 200': 1 });
    expect(calls.all).toEqual({ 'ipPolicies.get 200': 1 });

    const json = await plan(files, { as: reader, more: ['-o', 'json'] });
    expect(json.code).toBe(1);
    const doc = JSON.parse(json.stdout);
    expect(doc.summary).toMatchObject({ adopt: 1, refuse: 2 });
    expect(doc.objects[1]).toEqual({
      kind: 'IPPolicy',
      namespace: w.ns,
      name: 'by-closed',
      action: 'refuse',
      account: `EdgeAccount/${w.ns}/closed`,
      reason: 'KeySecretForbidden',
      message: `EdgeAccount ${w.ns}/closed: Secret ${w.ns}/closed-key, key key: you may not read it (edgectl plan reads an account's key with your own Kubernetes rights)`,
    });
    expect(doc.objects[2]).toMatchObject({
      account: `ClusterEdgeAccount/${cluster}`,
      reason: 'KeySecretForbidden',
    });
    expect(doc.notes.join('\n')).toContain('you may not list');
    expect(doc.notes).toContain(
      `you may not read namespace ${w.ns}: its labels are not known, and a ClusterEdgeAccount that admits it only by spec.namespaceSelector is planned as not admitting it (AccountNotAllowed)`,
    );
  });

  it("a ClusterEdgeAccount's key read from its Secret by a caller who may: the team's policy adopted with the team's key, exit 2", async () => {
    const r = await plan([
      file('cluster.yaml', [
        adopting('by-cluster', ids.team!, {
          description: 'made by the team',
          accountRef: { kind: 'ClusterEdgeAccount', name: cluster },
        }),
      ]),
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`~ IPPolicy ${w.ns}/by-cluster: adopt ${ids.team}`);
    expect(r.code).toBe(2);
    expect(calls.team).toEqual({ 'ipPolicies.get 200': 1 });
    expect(calls.all).toEqual({ 'ipPolicies.get 200': 1 });
  });
});
