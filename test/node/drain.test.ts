// `helm uninstall` runs the chart's pre-delete drain Job (drainPolicy Orphan, the default;
// Retain; Delete) on a node: each finishes with no object stuck in Terminating, and touches
// objects and remote resources exactly as its policy says; the operator stopped, no account
// keeps its finalizer, so the namespaces go at once afterwards.
import { afterAll, describe, expect, it } from 'vitest';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import {
  allReady,
  applyExamples,
  cleanUp,
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
  remoteIds,
  skipReason,
  waitFor,
} from './harness.ts';

const EDGE_ACCOUNTS = accountResource('EdgeAccount');

describe.skipIf(!!skipReason)('helm uninstall runs the drain Job on a node', () => {
  // one account per round: the resources Orphan and Retain leave would be conflicts (one SSH
  // key per account, ...) for the next round's objects
  let w: NodeWorld;
  const worlds: NodeWorld[] = [];
  const left: { apps: string[]; releases: [string, string][]; namespaces: string[] } = {
    apps: [],
    releases: [],
    namespaces: [],
  };
  afterAll(async () => {
    await cleanUp(w, left);
    for (const x of worlds) await x.close();
  });

  /** Install with the policy (undefined: the chart's default), reconcile the examples, uninstall. */
  const round = async (policy: 'Orphan' | 'Retain' | 'Delete' | undefined) => {
    const tag = (policy ?? 'default').toLowerCase();
    w = await nodeWorld();
    worlds.push(w);
    const system = `edge-system-drain-${tag}`;
    const release = `eo-drain-${tag}`;
    const apps = `demo-drain-${tag}`;
    left.apps.push(apps);
    left.releases.push([release, system]);
    left.namespaces.push(system);
    await operatorNamespace(w, system);
    await helmInstall(w, release, system, policy ? [`drainPolicy=${policy}`] : []);
    await namespace(w, apps);
    const count = (await applyExamples(w, apps)).length;
    const ids = (await allReady(w, apps, count)).map((o) => o.status!.id as string);
    // a team's account, which the running operator puts its finalizer on (no object uses it)
    await w.kube.create(EDGE_ACCOUNTS, apps, {
      apiVersion: 'edge.tunnel.dev/v1alpha1',
      kind: 'EdgeAccount',
      metadata: { name: 'spare' },
      spec: { apiKeySecretRef: { name: 'no-such-secret', key: 'key' } },
    });
    await waitFor(
      'the account finalized',
      async () => !!(await w.kube.get(EDGE_ACCOUNTS, apps, 'spare')).metadata.finalizers?.length,
      60_000,
      500,
    );
    const t0 = Date.now();
    await helm('uninstall', release, '-n', system, '--wait', '--timeout', '5m');
    const seconds = (Date.now() - t0) / 1000;
    figure(`helm uninstall with drainPolicy ${policy ?? 'Orphan (default)'}`, seconds);
    // no operator left (its pods get their grace period)
    await waitFor(
      'the operator pods gone',
      async () => (await operatorPods(w, system, release)).length === 0,
      90_000,
      500,
    );
    const objects = await managed(w, apps);
    const remote = await remoteIds(w);
    // no operator is left to remove the account's finalizer: the Job did
    expect((await w.kube.get(EDGE_ACCOUNTS, apps, 'spare')).metadata.finalizers ?? []).toEqual([]);
    return { system, apps, count, ids, left: objects, remote };
  };
  const removeRound = async (r: { system: string; apps: string }) => {
    await deleteNamespace(w, r.apps, 30_000);
    await deleteNamespace(w, r.system);
  };

  it('Orphan (the default) stops the operator, then frees the finalizers: objects and remote resources stay', async () => {
    const r = await round(undefined);
    expect(r.left).toHaveLength(r.count);
    for (const o of r.left) {
      expect(o.metadata.deletionTimestamp, `${o.kind}/${o.metadata.name}`).toBeUndefined();
      expect(o.metadata.finalizers ?? [], `${o.kind}/${o.metadata.name}`).toEqual([]);
    }
    for (const id of r.ids) expect(r.remote).toContain(id);
    // nothing holds them any more: deleting the namespace is immediate and leaves the remote resources
    await removeRound(r);
    for (const id of r.ids) expect(await remoteIds(w)).toContain(id);
  });

  it('Retain deletes the objects and keeps the remote resources', async () => {
    const r = await round('Retain');
    expect(r.left).toEqual([]);
    for (const id of r.ids) expect(r.remote).toContain(id);
    await removeRound(r);
  });

  it('Delete deletes the objects and, through the operator, the remote resources', async () => {
    const r = await round('Delete');
    expect(r.left).toEqual([]);
    for (const id of r.ids) expect(r.remote).not.toContain(id);
    await removeRound(r);
  });
});
