// The install a user does, run for real on a node: the chart's Deployment becomes a pod under
// its own ServiceAccount and RBAC (no admin credentials anywhere), in-cluster configuration,
// uid 65532 on a read-only root; deploy/examples reconcile to Ready; deleting a namespace
// (the namespace controller) leaves nothing behind; deploy/ (kustomize). watchNamespaces:
// teams.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, resourceFor } from '../../src/operator/apply.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  allReady,
  applyExamples,
  cleanUp,
  containerStatus,
  deleteNamespace,
  helm,
  helmInstall,
  hostPid,
  kustomize,
  managed,
  type NodeWorld,
  namespace,
  nodeWorld,
  operatorNamespace,
  operatorPods,
  processFacts,
  remoteIds,
  skipReason,
  waitFor,
} from './harness.ts';

describe.skipIf(!!skipReason)('helm install on a node', () => {
  let w: NodeWorld;
  const system = 'edge-system-install';
  beforeAll(async () => {
    w = await nodeWorld();
    await operatorNamespace(w, system);
  });
  afterAll(async () => {
    await cleanUp(w, {
      apps: ['demo-install', 'demo-kustomize'],
      releases: [['eo', system]],
      namespaces: [system],
    });
    await w?.close();
  });

  it('the pod runs Ready as uid 65532 on a read-only root, in-cluster, and reconciles deploy/examples to Ready', async () => {
    await helmInstall(w, 'eo', system);
    const [pod, ...others] = await operatorPods(w, system, 'eo');
    expect(others).toEqual([]);
    expect(pod!.status?.phase).toBe('Running');
    expect(containerStatus(pod!)?.ready).toBe(true);
    // the credentials are the chart's ServiceAccount token, nothing else
    expect((pod!.spec as { serviceAccountName: string }).serviceAccountName).toBe('eo-edge-operator');
    const facts = processFacts(hostPid(pod!));
    expect(facts.uid).toBe(65532);
    expect(facts.readOnlyRoot).toBe(true);
    expect(facts.env.KUBERNETES_SERVICE_HOST).toBe('10.0.0.1');
    expect(facts.env.KUBECONFIG).toBeUndefined();
    expect(facts.env.NODE_OPTIONS).toMatch(/--max-old-space-size=\d+/);
    expect(facts.cmdline.slice(-1)).toEqual(['operator']);

    const apps = await namespace(w, 'demo-install');
    const objs = await applyExamples(w, apps);
    const done = await allReady(w, apps, objs.length);
    const ids = await remoteIds(w);
    for (const o of done) expect(ids, `${o.kind}/${o.metadata.name}`).toContain(o.status?.id);
  });

  it('deleting a namespace with objects in it finishes with nothing left locally or remotely', async () => {
    const objs = await managed(w, 'demo-install');
    expect(objs.length).toBeGreaterThan(0);
    await deleteNamespace(w, 'demo-install');
    expect(await remoteIds(w)).toEqual([]);
  });

  it('deploy/ with kustomize (the README: the URL ConfigMap and key Secret beside it) reconciles deploy/examples', async () => {
    // one operator at a time for these objects: the chart's goes first
    await helm('uninstall', 'eo', '-n', system, '--wait');
    const overlay = mkdtempSync(join(tmpdir(), 'edge-overlay-'));
    try {
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          `resources: [${relative(overlay, join(REPO_ROOT, 'deploy'))}]`,
          // the image built here instead of the registry's
          'images: [{name: ghcr.io/edge-operator/edge-operator, newName: edge-operator, newTag: dev}]',
        ].join('\n'),
      );
      const docs = parseAllDocuments(
        kustomize('build', '--load-restrictor=LoadRestrictionsNone', overlay),
      ).map((d) => d.toJSON() as KubeObject);
      const ns = docs.find((d) => d.kind === 'Namespace')!.metadata.name;
      // `kubectl apply --server-side -k deploy/crds && kubectl apply -k deploy/`
      const crds = parseAllDocuments(kustomize('build', join(REPO_ROOT, 'deploy/crds'))).map(
        (d) => d.toJSON() as KubeObject,
      );
      await apply(w.kube, crds);
      await apply(w.kube, docs);
      await w.kube.create({ group: '', version: 'v1', plural: 'configmaps' }, ns, {
        metadata: { name: 'edge-operator-api' },
        data: { url: w.podApiUrl },
      });
      await w.kube.create({ group: '', version: 'v1', plural: 'secrets' }, ns, {
        metadata: { name: 'edge-operator-api' },
        stringData: { 'api-key': w.emu.apiKey },
      });
      const pod = await waitFor(
        'the kustomize install Ready',
        async () => {
          const pods = await operatorPods(w, ns, 'edge-operator');
          return pods.length === 1 && containerStatus(pods[0]!)?.ready ? pods[0] : false;
        },
        120_000,
        500,
      );
      expect(processFacts(hostPid(pod)).uid).toBe(65532);
      const apps = await namespace(w, 'demo-kustomize');
      const objs = await applyExamples(w, apps);
      await allReady(w, apps, objs.length);
      await deleteNamespace(w, apps);
      expect(await remoteIds(w)).toEqual([]);
      // the README's uninstall: objects first (done), then deploy/
      for (const d of docs.filter((x) => x.kind !== 'Namespace').reverse()) {
        const r = resourceFor(d);
        await w.kube.delete(r, r.namespaced ? d.metadata.namespace : undefined, d.metadata.name);
      }
      await deleteNamespace(w, ns);
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });
});
