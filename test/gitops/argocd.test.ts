// Argo CD (application-controller + repo-server, Redis) syncs deploy/examples from the suite's
// Git server with the Application the README shows (automated prune and self-heal, server-side
// apply) and the health check the chart ships (helm/edge-operator/argocd-health.lua in
// argocd-cm, as its README says), and the five checks run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { metrics, sumMetric } from '../support/operator.ts';
import { bin, kube, kubeconfig, repoUrl, ssa } from './harness.ts';
import { gitopsSuite, type Tool } from './scenario.ts';
import { LOG_DIR, startArgoCD, type Tools } from './tools.ts';

const NS = 'argocd';
const APP = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications/edge-resources`;
const HEALTH_LUA = readFileSync(join(REPO_ROOT, 'helm/edge-operator/argocd-health.lua'), 'utf8');

type Application = KubeObject & {
  status?: {
    sync?: { status?: string; revision?: string };
    health?: { status?: string; message?: string };
    resources?: { kind: string; name: string; health?: { status?: string; message?: string } }[];
    history?: { id: number; revision: string }[];
    operationState?: { phase?: string; message?: string; startedAt?: string };
    conditions?: { type: string; message: string }[];
  };
};

let tools: (Tools & { controllerMetrics: string }) | undefined;
const partOf = { 'app.kubernetes.io/part-of': 'argocd' };

const tool: Tool = {
  name: 'Argo CD',
  ns: 'gitops-argocd',
  dir: 'argocd',
  async start() {
    await ssa(`/api/v1/namespaces/${NS}`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await ssa(`/api/v1/namespaces/${NS}/configmaps/argocd-cm`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'argocd-cm', namespace: NS, labels: partOf },
      // the chart README's configuration: the shipped Lua for every kind of ours, by the
      // wildcard group/kind (only this key takes one: ConfigMap keys cannot hold a `*`)
      data: {
        'resource.customizations': stringify(
          { 'edge.tunnel.dev/*': { 'health.lua': HEALTH_LUA } },
          { blockQuote: 'literal', lineWidth: 0 },
        ),
      },
    });
    await ssa(`/api/v1/namespaces/${NS}/secrets/argocd-secret`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'argocd-secret', namespace: NS, labels: partOf },
      stringData: { 'server.secretkey': 'gitops-suite-not-a-secret' },
    });
    // what argocd-server creates on its first start (it does not run here)
    await ssa(`/apis/argoproj.io/v1alpha1/namespaces/${NS}/appprojects/default`, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'AppProject',
      metadata: { name: 'default', namespace: NS },
      spec: {
        sourceRepos: ['*'],
        destinations: [{ server: '*', namespace: '*' }],
        clusterResourceWhitelist: [{ group: '*', kind: '*' }],
      },
    });
    tools = await startArgoCD({
      bin,
      kubeconfig,
      dataDir: join(LOG_DIR, 'argocd-data'),
      namespace: NS,
      resyncSeconds: 10,
    });
    // as the README's Application, for the edge resources
    await ssa(APP, {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'edge-resources', namespace: NS },
      spec: {
        project: 'default',
        source: { repoURL: repoUrl, path: 'argocd', targetRevision: 'main' },
        destination: { server: 'https://kubernetes.default.svc', namespace: 'gitops-argocd' },
        syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['ServerSideApply=true'] },
      },
    });
  },
  async stop() {
    await tools?.stop();
  },
  async status(sha) {
    const a = await kube().request<Application>('GET', APP);
    const s = a.status;
    const atHead = s?.sync?.revision === sha;
    const unhealthy = (s?.resources ?? [])
      .filter((r) => r.health?.status && r.health.status !== 'Healthy')
      .map((r) => `${r.kind}/${r.name} ${r.health!.status}: ${r.health!.message ?? ''}`);
    return {
      healthy:
        atHead &&
        s?.sync?.status === 'Synced' &&
        s?.health?.status === 'Healthy' &&
        s?.operationState?.phase !== 'Running',
      failed: atHead && s?.health?.status === 'Degraded',
      message: `sync ${s?.sync?.status} at ${s?.sync?.revision?.slice(0, 8)}, health ${s?.health?.status}; operation ${s?.operationState?.phase}: ${s?.operationState?.message ?? ''}; ${unhealthy.join('; ')}${(s?.conditions ?? []).map((c) => `; ${c.type}: ${c.message}`).join('')}`,
    };
  },
  async syncs() {
    const a = await kube().request<Application>('GET', APP);
    return `${(a.status?.history ?? []).length} syncs, the last started ${a.status?.operationState?.startedAt}`;
  },
  // each refresh compares the app with Git and the cluster
  async activity() {
    const m = await metrics(tools!.controllerMetrics);
    return sumMetric(m, 'argocd_app_reconcile_count');
  },
  failureCarriesMessage: true,
  logs: () => LOG_DIR,
};

gitopsSuite(tool);
