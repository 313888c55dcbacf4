// Flux (source-controller + kustomize-controller) syncs deploy/examples from the suite's Git
// server with the Kustomization the README shows (prune, wait), and the five checks run.
import { join } from 'node:path';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { apiserverRequests, bin, kube, kubeconfig, repoUrl, ssa } from './harness.ts';
import { gitopsSuite, type Tool } from './scenario.ts';
import { LOG_DIR, startFlux, type Tools } from './tools.ts';

const NS = 'flux-system';
const KS = '/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/edge-resources';
const GR = '/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/edge-config';

/**
 * The README's health check for every kind of ours: kstatus alone takes an object without
 * status (just applied, before the operator's first write) as Current, so `wait: true` would be
 * Ready at once. Ready=True is current, Stalled=True failed, anything else in progress.
 */
const FLUX_HEALTH_CHECK_EXPRS = [
  {
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    current: "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    failed: "status.conditions.exists(c, c.type == 'Stalled' && c.status == 'True')",
  },
];

type Cond = { type: string; status: string; reason: string; message: string };
type Kustomization = KubeObject & {
  status?: {
    conditions?: Cond[];
    lastAppliedRevision?: string;
    lastAttemptedRevision?: string;
    observedGeneration?: number;
  };
};

let tools: Tools | undefined;

const tool: Tool = {
  name: 'Flux',
  ns: 'gitops-flux',
  dir: 'flux',
  async start() {
    tools = await startFlux({ bin, kubeconfig, dataDir: join(LOG_DIR, 'flux-data') });
    await ssa(`/api/v1/namespaces/${NS}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await ssa(GR, {
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'GitRepository',
      metadata: { name: 'edge-config', namespace: NS },
      spec: { interval: '10s', url: repoUrl, ref: { branch: 'main' } },
    });
    // as the README's "your edge resources" Kustomization, with short intervals for the test
    await ssa(KS, {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'edge-resources', namespace: NS },
      spec: {
        interval: '10s',
        retryInterval: '5s',
        timeout: '2m',
        path: './flux',
        prune: true,
        wait: true,
        sourceRef: { kind: 'GitRepository', name: 'edge-config' },
        healthCheckExprs: FLUX_HEALTH_CHECK_EXPRS,
      },
    });
  },
  async stop() {
    await tools?.stop();
  },
  async status(sha) {
    const k = await kube().request<Kustomization>('GET', KS);
    const ready = k.status?.conditions?.find((c) => c.type === 'Ready');
    const current = k.status?.observedGeneration === k.metadata.generation;
    const at = (rev?: string) => !!rev?.endsWith(`:${sha}`);
    return {
      healthy: current && ready?.status === 'True' && at(k.status?.lastAppliedRevision),
      failed: current && ready?.status === 'False' && at(k.status?.lastAttemptedRevision),
      message: `Ready=${ready?.status} ${ready?.reason}: ${ready?.message} (applied ${k.status?.lastAppliedRevision}, attempted ${k.status?.lastAttemptedRevision})`,
    };
  },
  // Flux re-applies nothing unchanged: its applies show as writes in the API server's counters
  // (the scenario checks those); it has no sync history of its own
  async syncs() {
    return '';
  },
  // each reconciliation compares by server-side dry run: they show as dry-run requests
  async activity() {
    let n = 0;
    for (const [k, v] of await apiserverRequests(kube())) if (k.endsWith(' dry-run')) n += v;
    return n;
  },
  failureCarriesMessage: false,
  logs: () => LOG_DIR,
};

gitopsSuite(tool);
