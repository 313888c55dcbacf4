// The node suite's world: the chart (or deploy/) installed the way a user installs it, the
// emulator on the host's loopback (pods reach it at the bridge gateway), and what a test looks
// at from outside: pods, the operator's process on the host, objects, remote resources.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { createClient, type EdgeClient } from '../../src/api/client.ts';
import { type Emulator, startEmulator } from '../../src/emulator/server.ts';
import { cacheDir, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { Kube, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { condition, NAMESPACES, ready, res, waitFor } from '../support/operator.ts';

export { condition, ready, res, waitFor };
export const skipReason = inject('nodeSkip');
export const kubeconfig = inject('nodeKubeconfig');
export const gateway = inject('nodeGateway');
const socket = inject('nodeSocket');
export const apiPort = inject('nodeApiPort');
export const CHART = join(REPO_ROOT, 'helm/edge-operator');
export const IMAGE = { repository: 'edge-operator', tag: 'dev' };
export const PODS = { group: '', version: 'v1', plural: 'pods' };
export const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
export const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
export const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' };
export const JOBS = { group: 'batch', version: 'v1', plural: 'jobs' };

const execFileAsync = promisify(execFile);
const bin = (name: string) => join(cacheDir(), 'bin', name);
if (!skipReason && !existsSync(bin('helm')))
  throw new Error('helm is not built: run test/controlplane/build.sh');

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: kubeconfig },
    });
  } catch (e) {
    const err = e as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${err.stderr || err.stdout || err.message}`);
  }
}
/**
 * helm, asynchronously: the emulator lives in this process, and `helm uninstall` waits on a
 * hook Job that waits on the operator that waits on the emulator (a blocking call deadlocks).
 */
export async function helm(...args: string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(bin('helm'), args, {
      encoding: 'utf8',
      env: { ...process.env, KUBECONFIG: kubeconfig },
      maxBuffer: 16 << 20,
    });
    return stdout;
  } catch (e) {
    const err = e as { stderr?: string; stdout?: string; message: string };
    throw new Error(`helm ${args.join(' ')}: ${err.stderr || err.stdout || err.message}`);
  }
}
export const kustomize = (...args: string[]) => run(bin('kustomize'), args);

export interface NodeWorld {
  kube: Kube;
  emu: Emulator;
  api: EdgeClient;
  /** The API base URL as pods reach it. */
  podApiUrl: string;
  close(): Promise<void>;
}

/** `accounts`: more accounts of the emulator, name to key (each its own resources). */
export async function nodeWorld(accounts?: Record<string, string>): Promise<NodeWorld> {
  const kube = new Kube(kubeconfigTarget(kubeconfig));
  const emu = await startEmulator({ host: '127.0.0.1', port: 0, accounts });
  const api = createClient({ baseUrl: emu.url, apiKey: emu.apiKey, rateLimitPerMinute: Infinity });
  return {
    kube,
    emu,
    api,
    podApiUrl: `http://${gateway}:${new URL(emu.url).port}`,
    close: async () => {
      await api.close();
      await emu.close();
    },
  };
}

/** A namespace for the operator, as the README says: restricted Pod Security, the API key Secret. */
export async function operatorNamespace(w: NodeWorld, ns: string): Promise<void> {
  await w.kube.create(NAMESPACES, undefined, {
    metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
  });
  await w.kube.create(SECRETS, ns, {
    metadata: { name: 'edge-operator-api' },
    stringData: { 'api-key': w.emu.apiKey },
  });
}

/**
 * `helm install` of the chart as the README gives it, plus the image built here. The CRDs
 * belong to the first release that installed them (Helm keeps them on uninstall); a later
 * release of another name leaves them alone, as a second installation in a cluster does.
 */
export async function helmInstall(
  w: NodeWorld,
  release: string,
  ns: string,
  set: string[] = [],
): Promise<string> {
  const crd = await w.kube
    .get(
      { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' },
      undefined,
      'ippolicies.edge.tunnel.dev',
    )
    .catch(() => undefined);
  const owner = crd?.metadata.annotations ?? {};
  const ours =
    !crd ||
    (owner['meta.helm.sh/release-name'] === release && owner['meta.helm.sh/release-namespace'] === ns);
  const sets = [
    ...(ours ? [] : ['crds.install=false']),
    `api.url=${w.podApiUrl}`,
    'api.existingSecret=edge-operator-api',
    `image.repository=${IMAGE.repository}`,
    `image.tag=${IMAGE.tag}`,
    ...set,
  ].flatMap((s) => ['--set', s]);
  return await helm('install', release, CHART, '-n', ns, ...sets, '--wait', '--timeout', '3m');
}

export async function namespace(w: NodeWorld, name: string): Promise<string> {
  await w.kube.create(NAMESPACES, undefined, { metadata: { name } });
  return name;
}

/** deploy/examples, moved into `ns` (the file's Namespace left out), applied by `kube` (default: admin). */
export async function applyExamples(w: NodeWorld, ns: string, kube = w.kube): Promise<KubeObject[]> {
  const objs = readManifests(join(REPO_ROOT, 'deploy/examples'))
    .filter((o) => o.kind !== 'Namespace')
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace: ns } }));
  await apply(kube, objs, ns);
  return objs.filter((o) => o.apiVersion?.startsWith('edge.tunnel.dev/'));
}

export async function managed(w: NodeWorld, ns: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const b of BINDINGS) out.push(...(await w.kube.list(res(b.plural), ns)).items);
  return out;
}

export async function allReady(w: NodeWorld, ns: string, count: number, ms = 120_000): Promise<KubeObject[]> {
  return waitFor(
    `${count} objects Ready in ${ns}`,
    async () => {
      const objs = await managed(w, ns);
      return objs.length === count && objs.every(ready) ? objs : false;
    },
    ms,
    500,
  );
}

/** Each object's Ready condition: status and when it last changed. */
export async function readyMarks(w: NodeWorld, ns: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const o of await managed(w, ns)) {
    const c = condition(o, 'Ready') as { status: string; lastTransitionTime?: string } | undefined;
    out[`${o.kind}/${o.metadata.name}`] = `${c?.status} ${c?.lastTransitionTime}`;
  }
  return out;
}

/** Remote resources the operator made (owner marker set), by id; in one account of the emulator (default: its first). */
export async function remoteIds(w: NodeWorld, account?: string): Promise<string[]> {
  const query = account ? `?account=${encodeURIComponent(account)}` : '';
  const r = await fetch(`${w.emu.url}/_emulator/state${query}`, {
    headers: { authorization: `Bearer ${w.emu.adminKey}` },
  });
  const state = (await r.json()) as Record<string, { id?: string; metadata?: string }[]>;
  return Object.entries(state)
    .filter(([c]) => !['tunnelSessions', 'tunnels', 'agents'].includes(c))
    .flatMap(([, items]) => items.filter((x) => x.metadata?.includes('owner')).map((x) => x.id ?? ''));
}

/** The cluster as a user sees it (`kubectl --as`): the admin's credentials, impersonating `user`. */
export function asUser(user: string): Kube {
  const target = kubeconfigTarget(kubeconfig);
  return new Kube({
    ...target,
    auth: async () => {
      const a = await target.auth();
      return { ...a, headers: { ...a.headers, 'Impersonate-User': user } };
    },
  });
}

export async function operatorPods(w: NodeWorld, ns: string, release: string): Promise<KubeObject[]> {
  const pods = await w.kube.list(PODS, ns, {
    labelSelector: `app.kubernetes.io/name=edge-operator,app.kubernetes.io/instance=${release}`,
  });
  return pods.items.filter((p) =>
    ((p.metadata as { ownerReferences?: { kind: string }[] }).ownerReferences ?? []).some(
      (r) => r.kind === 'ReplicaSet',
    ),
  );
}

type ContainerStatus = {
  name: string;
  ready: boolean;
  restartCount: number;
  containerID?: string;
  lastState?: { terminated?: { exitCode: number; reason?: string } };
};
export const containerStatus = (pod: KubeObject) =>
  ((pod.status?.containerStatuses as ContainerStatus[] | undefined) ?? [])[0];

/** The host pid of a pod's first container (through the node's containerd). */
export function hostPid(pod: KubeObject): number {
  const id = containerStatus(pod)?.containerID?.replace(/^containerd:\/\//, '');
  if (!id) throw new Error(`${pod.metadata.name} has no container`);
  const line = run('ctr', ['--address', socket, '-n', 'k8s.io', 'tasks', 'ls'])
    .split('\n')
    .find((l) => l.startsWith(id));
  if (!line) throw new Error(`no task for container ${id}`);
  return Number(line.split(/\s+/)[1]);
}

/** What the container's process runs as and sees, read from the host's /proc. */
export function processFacts(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
  const rootMount = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f[4] === '/');
  const env = Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  return { uid, readOnlyRoot: !!rootMount?.[5]?.split(',').includes('ro'), env, cmdline };
}

/** Who holds the operator's Lease (the chart's default name), as "<pod>-<pid>". */
export async function leaseHolder(w: NodeWorld, ns: string): Promise<string | undefined> {
  const lease = await w.kube.get(LEASES, ns, 'edge-operator').catch(() => undefined);
  return (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
}

/** Deletes a namespace and waits until it is gone (the namespace controller's work). */
export async function deleteNamespace(w: NodeWorld, ns: string, ms = 120_000): Promise<void> {
  await w.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
  await waitFor(
    `namespace ${ns} gone`,
    async () => {
      try {
        await w.kube.get(NAMESPACES, undefined, ns);
        return false;
      } catch {
        return true;
      }
    },
    ms,
    500,
  );
}

/**
 * After a test file, pass or fail: its edge objects deleted while its operators still run (or,
 * failing that, their finalizers removed), its releases uninstalled, its namespaces gone; so
 * that no operator of one file acts on the next file's objects.
 */
export async function cleanUp(
  w: NodeWorld | undefined,
  o: { apps?: string[]; releases?: [string, string][]; namespaces?: string[] },
): Promise<void> {
  if (!w) return;
  for (const ns of o.apps ?? []) {
    for (const x of await managed(w, ns).catch(() => []))
      await w.kube.delete(res(kindPlural(x.kind ?? '')), ns, x.metadata.name).catch(() => {});
    const gone = await waitFor(
      'objects finalized',
      async () => (await managed(w, ns)).length === 0,
      60_000,
      500,
    ).catch(() => false);
    if (gone === false)
      for (const x of await managed(w, ns))
        await w.kube
          .patch(res(kindPlural(x.kind ?? '')), ns, x.metadata.name, { metadata: { finalizers: null } })
          .catch(() => {});
  }
  for (const [release, ns] of o.releases ?? []) {
    try {
      await helm('uninstall', release, '-n', ns, '--wait', '--timeout', '2m');
    } catch {
      try {
        await helm('uninstall', release, '-n', ns, '--no-hooks', '--wait');
      } catch {}
    }
  }
  for (const ns of [...(o.apps ?? []), ...(o.namespaces ?? [])]) await deleteNamespace(w, ns).catch(() => {});
}

const kindPlural = (kind: string) => BINDINGS.find((b) => b.kind === kind)!.plural;

/** One figure for the README, printed where CI's log keeps it. */
export function figure(name: string, seconds: number): void {
  process.stdout.write(`node figure: ${name} ${seconds.toFixed(1)} s\n`);
}
