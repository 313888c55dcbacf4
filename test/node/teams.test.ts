// Two teams on a node, each with its own account: the chart with the installation's account off
// (defaultAccount.enabled=false); each team, as a tenant with the built-in `edit` role (the
// chart's tenant roles aggregate to it), applies its key Secret, its EdgeAccount and objects of
// every kind. `kubectl delete namespace` of one team then finishes with nothing left in the
// cluster or in its account, and the other team untouched: cluster-wide, with watchNamespaces,
// and with the operator restarted while the namespace terminates (the key Secret and the
// operator's RoleBinding are held by its finalizers until nothing there needs them). With
// watchNamespaces, objects in a namespace not watched get no finalizer and no status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { ACCESS_FINALIZER, KEY_FINALIZER } from '../../src/operator/runtime/kube/holds.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  allReady,
  applyExamples,
  asUser,
  CHART,
  cleanUp,
  condition,
  containerStatus,
  deleteNamespace,
  figure,
  helm,
  helmInstall,
  managed,
  type NodeWorld,
  namespace,
  nodeWorld,
  operatorNamespace,
  operatorPods,
  PODS,
  readyMarks,
  remoteIds,
  SECRETS,
  skipReason,
  waitFor,
} from './harness.ts';

const KEYS = { 'team-a': 'key-of-team-a', 'team-b': 'key-of-team-b' } as const;
type Team = keyof typeof KEYS;
const ROLEBINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' };
const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

describe.skipIf(!!skipReason)('two teams, each with its own account, deleting a namespace', () => {
  let w: NodeWorld;
  const system = 'edge-system-teams';
  const made: string[] = [];

  /** A team's namespace, made by the platform: its developer has `edit` there. */
  async function teamNamespace(ns: string): Promise<void> {
    made.push(await namespace(w, ns));
    await w.kube.create(ROLEBINDINGS, ns, {
      metadata: { name: 'developers' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `dev-${ns}` }],
    });
  }

  /** What the developer applies, as that user: the key Secret, the EdgeAccount, objects of every kind. */
  async function team(ns: string, account: Team): Promise<number> {
    const dev = asUser(`dev-${ns}`);
    await dev.create(SECRETS, ns, {
      metadata: { name: 'edge-key' },
      stringData: { 'api-key': KEYS[account] },
    });
    const edgeAccount = {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'EdgeAccount',
      metadata: { name: 'default' },
      spec: { apiKeySecretRef: { name: 'edge-key', key: 'api-key' } },
    };
    // the chart's tenant roles reach `edit` through the controller-manager's aggregation
    await waitFor('edit covers EdgeAccounts', () =>
      dev.create(accountResource('EdgeAccount'), ns, edgeAccount).then(
        () => true,
        (e: { status?: number }) => {
          if (e.status === 403) return false;
          throw e;
        },
      ),
    );
    const objs = await applyExamples(w, ns, dev);
    const done = await allReady(w, ns, objs.length);
    expect(new Set(done.map((o) => o.kind)).size, 'every managed kind').toBe(10);
    for (const o of done) expect((o.status as { account: string }).account).toBe(`EdgeAccount/${ns}/default`);
    return objs.length;
  }

  /** What the other team has, locally and remotely: unchanged by the deletion. */
  const snapshot = async (ns: string, account: Team) => ({
    marks: await readyMarks(w, ns),
    remote: (await remoteIds(w, account)).sort(),
  });

  async function install(release: string, set: string[]): Promise<void> {
    await helmInstall(w, release, system, ['defaultAccount.enabled=false', ...set]);
  }

  beforeAll(async () => {
    w = await nodeWorld({ ...KEYS });
    await operatorNamespace(w, system);
  });
  afterAll(async () => {
    await cleanUp(w, {
      apps: made,
      releases: [
        ['eo-teams', system],
        ['eo-teams-watch', system],
      ],
      namespaces: [system],
    });
    await w?.close();
  });

  it('cluster-wide: one team’s namespace deleted leaves nothing of it; the other team is untouched', async () => {
    await teamNamespace('cw-a');
    await teamNamespace('cw-b');
    await install('eo-teams', []);
    const count = await team('cw-a', 'team-a');
    await team('cw-b', 'team-b');
    expect((await remoteIds(w, 'team-a')).length).toBe(count);
    const other = await snapshot('cw-b', 'team-b');
    const t = Date.now();
    await deleteNamespace(w, 'cw-a');
    figure(
      'teams, cluster-wide: kubectl delete namespace -> gone, nothing left remotely',
      (Date.now() - t) / 1000,
    );
    expect(await remoteIds(w, 'team-a')).toEqual([]);
    expect(await snapshot('cw-b', 'team-b')).toEqual(other);
    await deleteNamespace(w, 'cw-b');
    expect(await remoteIds(w, 'team-b')).toEqual([]);
    await helm('uninstall', 'eo-teams', '-n', system, '--wait');
  });

  it('watchNamespaces: the same, objects elsewhere untouched, the operator holding its RoleBinding until nothing there awaits it', async () => {
    await teamNamespace('wn-a');
    await teamNamespace('wn-b');
    await install('eo-teams-watch', ['watchNamespaces[0]=wn-a', 'watchNamespaces[1]=wn-b']);
    // a namespace the operator does not watch: its objects are not even seen
    const unwatched = await namespace(w, 'wn-other');
    made.push(unwatched);
    await applyExamples(w, unwatched);
    const count = await team('wn-a', 'team-a');
    await team('wn-b', 'team-b');
    expect((await remoteIds(w, 'team-a')).length).toBe(count);
    for (const o of await managed(w, unwatched)) {
      expect(o.metadata.finalizers ?? [], `${o.kind}/${o.metadata.name}`).toEqual([]);
      expect(o.status, `${o.kind}/${o.metadata.name}`).toBeUndefined();
    }
    // held while objects there await the operator
    const binding = await w.kube.get(ROLEBINDINGS, 'wn-a', 'eo-teams-watch-edge-operator');
    expect(binding.metadata.finalizers).toContain(ACCESS_FINALIZER);
    const key = await waitFor('the key Secret held', async () => {
      const s = await w.kube.get(SECRETS, 'wn-a', 'edge-key');
      return s.metadata.finalizers?.includes(KEY_FINALIZER) ? s : false;
    });
    expect(key.metadata.finalizers).toEqual([KEY_FINALIZER]);
    // its patch right on the Secret serves that finalizer alone: the chart's admission policy
    // refuses the operator's ServiceAccount any other change (secret-guard.yaml)
    const operator = asUser(`system:serviceaccount:${system}:eo-teams-watch-edge-operator`);
    for (const change of [
      { data: { 'api-key': 'c3RvbGVu' } },
      { metadata: { labels: { team: 'other' } } },
      // an owner the garbage collector would find gone, deleting the Secret; a Secret made immutable
      {
        metadata: {
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: '00000000-0000-0000-0000-000000000000' },
          ],
        },
      },
      { immutable: true },
    ]) {
      const refused = await operator.patch(SECRETS, 'wn-a', 'edge-key', change).then(
        () => undefined,
        (e: Error & { status?: number }) => e,
      );
      expect(refused?.status, JSON.stringify(change)).toBe(422);
      expect(refused?.message).toContain('the edge operator may change only its finalizer on a Secret');
    }
    const after = await w.kube.get(SECRETS, 'wn-a', 'edge-key');
    expect(after.data).toEqual(key.data);
    expect(after.metadata.labels).toEqual(key.metadata.labels);
    // a ClusterEdgeAccount whose Secret the operator may not read (its own namespace, not a
    // watched one): the account says so, rather than having no status at all
    const CEA = accountResource('ClusterEdgeAccount');
    await w.kube.create(CEA, undefined, {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'ClusterEdgeAccount',
      metadata: { name: 'eo-teams-forbidden' },
      spec: { apiKeySecretRef: { name: 'shared-key', key: 'api-key' }, namespaces: ['wn-b'] },
    });
    try {
      const forbidden = await waitFor('the account says why', async () => {
        const a = await w.kube.get(CEA, undefined, 'eo-teams-forbidden');
        return condition(a, 'Stalled')?.reason === 'KeySecretForbidden' ? a : false;
      });
      expect(condition(forbidden, 'Stalled')?.message).toContain(`Secret ${system}/shared-key, key api-key`);
    } finally {
      await w.kube.delete(CEA, undefined, 'eo-teams-forbidden');
    }
    const other = await snapshot('wn-b', 'team-b');
    const t = Date.now();
    await deleteNamespace(w, 'wn-a');
    figure(
      'teams, watchNamespaces: kubectl delete namespace -> gone, nothing left remotely',
      (Date.now() - t) / 1000,
    );
    expect(await remoteIds(w, 'team-a')).toEqual([]);
    expect(await snapshot('wn-b', 'team-b')).toEqual(other);
  });

  it('watchNamespaces, the operator restarted while the namespace terminates: it still finishes', async () => {
    // team A's API refuses deletes for now: the namespace cannot finish before the restart
    const faults = (body?: unknown) =>
      fetch(`${w.emu.url}/_emulator/faults`, {
        method: body ? 'PUT' : 'DELETE',
        headers: { authorization: `Bearer ${w.emu.adminKey}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
    await teamNamespace('wn-c');
    await helm(
      'upgrade',
      'eo-teams-watch',
      CHART,
      '-n',
      system,
      '--reuse-values',
      '--set',
      'watchNamespaces[0]=wn-b,watchNamespaces[1]=wn-c',
      '--wait',
    );
    const count = await team('wn-c', 'team-a');
    expect((await remoteIds(w, 'team-a')).length).toBe(count);
    const r = await faults({ errorRate: 1, errorStatuses: [503], methods: ['DELETE'], accounts: ['team-a'] });
    expect(r.status).toBe(200);
    await w.kube.delete(NAMESPACES, undefined, 'wn-c');
    await waitFor('objects Terminating', async () => {
      const objs = await managed(w, 'wn-c');
      return objs.length === count && objs.every((o: KubeObject) => !!o.metadata.deletionTimestamp);
    });
    const [before] = await operatorPods(w, system, 'eo-teams-watch');
    await w.kube.delete(PODS, system, before!.metadata.name);
    await waitFor(
      'a new operator pod Ready',
      async () => {
        const pods = await operatorPods(w, system, 'eo-teams-watch');
        return pods.some((p) => p.metadata.name !== before!.metadata.name && containerStatus(p)?.ready);
      },
      120_000,
      500,
    );
    // what the new operator needs is still there, held: the key, and its rights in the namespace
    const key = await w.kube.get(SECRETS, 'wn-c', 'edge-key');
    expect(key.metadata.deletionTimestamp).toBeDefined();
    expect(key.metadata.finalizers).toEqual([KEY_FINALIZER]);
    const binding = await w.kube.get(ROLEBINDINGS, 'wn-c', 'eo-teams-watch-edge-operator');
    expect(binding.metadata.deletionTimestamp).toBeDefined();
    expect(binding.metadata.finalizers).toEqual([ACCESS_FINALIZER]);
    // and the restart came in the middle: every object still waits for its remote resource's delete
    expect((await managed(w, 'wn-c')).length).toBe(count);
    await faults();
    // once the API takes deletes again, each object's next try comes after its backoff (it
    // doubles with each refusal): up to as long again as the refusals lasted
    const t = Date.now();
    await deleteNamespace(w, 'wn-c', 240_000);
    figure('teams, restarted mid-deletion: API back -> namespace gone', (Date.now() - t) / 1000);
    expect(await remoteIds(w, 'team-a')).toEqual([]);
    await deleteNamespace(w, 'wn-b');
    expect(await remoteIds(w, 'team-b')).toEqual([]);
  });
});
