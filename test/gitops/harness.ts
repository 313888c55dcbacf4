// The gitops world shared by the Flux and Argo CD files: the control plane and Git repository
// the global setup started, deploy/examples rendered into the repository for one namespace,
// an emulator and the operator (the e2e helpers), and the API server's own request counters.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { inject } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { collect, createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { Kube, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import {
  apiRequests,
  apiWrites,
  condition,
  freePort,
  type OperatorProcess,
  pluralOf,
  ready,
  res,
  startOperatorProcess,
} from '../support/operator.ts';
import { commit } from './git.ts';
import { LOG_DIR } from './tools.ts';

export const skipReason = inject('gitopsSkip');
export const kubeconfig = inject('gitopsKubeconfig');
export const bin = inject('gitopsBin');
export const repoUrl = inject('gitopsRepoUrl');
export const work = inject('gitopsWork');

/** The suite's cluster, and server-side apply to it by path (the tools' own objects). */
export const kube = () => new Kube(kubeconfigTarget(kubeconfig));
export const ssa = (path: string, body: object) =>
  kube().request('PATCH', path, {
    body,
    contentType: 'application/apply-patch+yaml',
    query: { fieldManager: 'gitops-suite', force: true },
  });

export const EXAMPLES = join(REPO_ROOT, 'deploy', 'examples');
/** The operator's drift check period here (its minimum): the out-of-band test waits for one. */
export const RESYNC = '10s';

export interface Doc {
  kind: string;
  name: string;
  text: string;
}

/**
 * deploy/examples as files for one namespace (each document as it is, only the namespace
 * renamed), keyed by file name. Plain YAML without a kustomization.yaml: Flux generates one
 * and Argo CD reads the directory.
 */
export function renderExamples(ns: string): Map<string, Doc[]> {
  const out = new Map<string, Doc[]>();
  for (const f of readdirSync(EXAMPLES).filter((x) => x.endsWith('.yaml') && x !== 'kustomization.yaml')) {
    const docs = parseAllDocuments(readFileSync(join(EXAMPLES, f), 'utf8')).map((d) => {
      const o = d.toJS() as KubeObject;
      if (o.kind === 'Namespace') o.metadata.name = ns;
      else o.metadata.namespace = ns;
      return { kind: o.kind ?? '', name: o.metadata.name, text: stringify(o) };
    });
    out.set(f, docs);
  }
  return out;
}

/** Files for commit(): each example file under dir, documents joined. */
export const filesOf = (dir: string, examples: Map<string, Doc[]>): Record<string, string | null> =>
  Object.fromEntries(
    [...examples].map(([f, docs]) => [
      `${dir}/${f}`,
      docs.length ? docs.map((d) => d.text).join('---\n') : null,
    ]),
  );

export const gitCommit = (message: string, files: Record<string, string | null>) =>
  commit(work, message, files);

/** The edge.tunnel.dev objects the examples hold. */
export const managedOf = (examples: Map<string, Doc[]>) =>
  [...examples.values()].flat().filter((d) => d.kind !== 'Namespace' && d.kind !== 'Secret');

export interface Edge {
  kube: Kube;
  emu: Emulator;
  api: EdgeClient;
  op?: OperatorProcess;
  ns: string;
  startOperator(): Promise<OperatorProcess>;
  close(): Promise<void>;
}

/** An emulator and (once startOperator is called) the operator for one namespace. */
export async function edge(ns: string): Promise<Edge> {
  const kube = new Kube(kubeconfigTarget(kubeconfig));
  const emu = await startEmulator();
  const api = createClient({ baseUrl: emu.url, apiKey: emu.apiKey, rateLimitPerMinute: Infinity });
  const e: Edge = {
    kube,
    emu,
    api,
    ns,
    startOperator: async () => {
      e.op = await startOperatorProcess({
        emu,
        kubeconfig,
        namespace: ns,
        clusterId: `gitops-${ns}`,
        port: await freePort(),
        extra: ['--api-rate-limit', '100000', '--resync-period', RESYNC],
      });
      return e.op;
    },
    close: async () => {
      await e.op?.kill();
      if (e.op) {
        mkdirSync(LOG_DIR, { recursive: true });
        writeFileSync(join(LOG_DIR, `operator-${ns}.log`), `${e.op.logs.join('\n')}\n`);
      }
      await api.close();
      await emu.close();
    },
  };
  return e;
}

export const getObj = (kube: Kube, ns: string, kind: string, name: string) =>
  kube.get(res(pluralOf(kind)), ns, name).catch((err: { status?: number }) => {
    if (err.status === 404) return undefined;
    throw err;
  });

/** Each managed object of the examples: Ready or not, and why not. */
export async function readiness(
  kube: Kube,
  ns: string,
  docs: Doc[],
): Promise<{ allReady: boolean; notReady: string[] }> {
  const notReady: string[] = [];
  for (const d of docs) {
    const o = await getObj(kube, ns, d.kind, d.name);
    if (!ready(o))
      notReady.push(`${d.kind}/${d.name}: ${o ? (condition(o, 'Ready')?.reason ?? 'no status') : 'absent'}`);
  }
  return { allReady: notReady.length === 0, notReady };
}

/** kube-apiserver's apiserver_request_total for edge.tunnel.dev, by verb/subresource/dry_run. */
export async function apiserverRequests(kube: Kube): Promise<Map<string, number>> {
  const auth = await kube.target.auth();
  const r = await request(`${kube.server}/metrics`, {
    headers: { ...auth.headers, accept: 'text/plain' },
    dispatcher: auth.dispatcher,
  });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`kube-apiserver /metrics: ${r.statusCode} ${text.slice(0, 200)}`);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{') || !line.includes('group="edge.tunnel.dev"')) continue;
    const label = (k: string) => new RegExp(`${k}="([^"]*)"`).exec(line)?.[1] ?? '';
    const key = `${label('verb')} ${label('resource')}${label('subresource') ? `/${label('subresource')}` : ''}${label('dry_run') ? ' dry-run' : ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/** What grew between two readings of apiserverRequests, split into writes and dry runs. */
export function apiserverDelta(now: Map<string, number>, before: Map<string, number>) {
  const writes: Record<string, number> = {};
  const dryRuns: Record<string, number> = {};
  for (const [k, v] of now) {
    const d = v - (before.get(k) ?? 0);
    if (d <= 0 || !WRITE_VERBS.has(k.split(' ')[0]!)) continue;
    if (k.endsWith(' dry-run')) dryRuns[k] = d;
    else writes[k] = d;
  }
  return { writes, dryRuns };
}

/** The operator's Edge API writes so far. */
export const operatorApiWrites = async (op: OperatorProcess) => apiWrites(await apiRequests(op.metricsUrl));

export { collect };
