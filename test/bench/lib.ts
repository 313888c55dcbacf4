// Shared by the benchmark scripts and the small-N e2e run: a mixed set of objects of every
// kind, convergence timing, and the invariants (no duplicate, no orphan, nothing stuck).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { pino } from 'pino';
import { collect, createClient, type EdgeClient } from '../../src/api/client.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { decodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import { isConflict, Kube, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import {
  allOperatorLogs,
  metrics,
  type OperatorProcess,
  obj,
  pluralOf,
  ready,
  res,
  startOperatorProcess,
  sumMetric,
  unexpectedExits,
  waitFor,
} from '../support/operator.ts';

export { res };

const RESTRICTION_TYPES = ['dashboard', 'api', 'agent', 'endpoints'];

/**
 * n objects, ten kinds per group of ten, with references inside each group. What the API keeps
 * unique across the account (hostports, one IP restriction per type) differs by namespace, so
 * the phases of a benchmark (warm-up, operator, plain loops) share one emulator without
 * colliding; `restrictions: false` leaves the four restrictions to another phase.
 */
export function mixedObjects(n: number, ns: string, o: { restrictions?: boolean } = {}): KubeObject[] {
  const out: KubeObject[] = [];
  const withRestrictions = o.restrictions ?? true;
  for (let g = 0; out.length < n; g++) {
    const o = (i: number) => `${g}.${i}`;
    const group = [
      obj('IPPolicy', ns, `p${g}`, {}),
      obj('IPPolicyRule', ns, `r${g}`, {
        ipPolicyRef: { name: `p${g}` },
        cidr: `10.${(g >> 8) & 255}.${g & 255}.0/24`,
        action: 'allow',
      }),
      // the API keeps one IP restriction per type (four types): later groups get a second rule
      withRestrictions && g < RESTRICTION_TYPES.length
        ? obj('IPRestriction', ns, `x${g}`, { type: RESTRICTION_TYPES[g], ipPolicyRefs: [{ name: `p${g}` }] })
        : obj('IPPolicyRule', ns, `x${g}`, {
            ipPolicyRef: { name: `p${g}` },
            cidr: `172.${16 + ((g >> 8) & 15)}.${g & 255}.0/24`,
            action: 'deny',
          }),
      obj('TunnelGroupBackend', ns, `t${g}`, { labels: { group: String(g) } }),
      obj('WeightedBackend', ns, `w${g}`, {
        backends: [{ backendRef: { kind: 'TunnelGroupBackend', name: `t${g}` }, weight: 100 }],
      }),
      obj('HTTPSEdge', ns, `e${g}`, { hostports: [`g${g}.${ns}.example.com:443`] }),
      obj('HTTPSEdgeRoute', ns, `ro${g}`, {
        edgeRef: { name: `e${g}` },
        matchType: 'path_prefix',
        match: '/',
        backend: { backendRef: { kind: 'WeightedBackend', name: `w${g}` } },
        compression: {},
      }),
      obj('TCPEdge', ns, `tcp${g}`, {
        hostports: [`${g}.${ns}.tcp.example.com:${10000 + (g % 50000)}`],
        backend: { backendRef: { kind: 'TunnelGroupBackend', name: `t${g}` } },
      }),
      obj('TLSEdge', ns, `tls${g}`, { hostports: [`tls${g}.${ns}.example.com:443`] }),
      obj('IPPolicy', ns, `q${g}`, { description: o(9) }),
    ];
    out.push(...group.slice(0, n - out.length));
  }
  return out;
}

/** IP policies with one rule each (n objects in all): the comparison the lean-operator issue names. */
export function policiesWithRules(n: number, ns: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (let g = 0; out.length < n; g++)
    out.push(
      ...[
        obj('IPPolicy', ns, `p${g}`, {}),
        obj('IPPolicyRule', ns, `r${g}`, {
          ipPolicyRef: { name: `p${g}` },
          cidr: `10.${(g >> 8) & 255}.${g & 255}.0/24`,
          action: 'allow',
        }),
      ].slice(0, n - out.length),
    );
  return out;
}

export async function pool<T>(
  items: T[],
  concurrency: number,
  fn: (t: T) => Promise<unknown>,
): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let x = queue.shift(); x !== undefined; x = queue.shift()) await fn(x);
    }),
  );
}

/**
 * Retries while the API server is away (a restart under test) or the Edge API's faults break a
 * request (status 0, 5xx, 429); 'already exists' and 'gone' count as done (undefined).
 */
export async function persist<T>(fn: () => Promise<T>, attempts = 60): Promise<T | undefined> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      const status = (e as { status?: number }).status;
      if (status === 409 || status === 404) return undefined;
      if (i >= attempts || (status !== undefined && status !== 0 && status < 500 && status !== 429)) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function createAll(kube: Kube, objs: KubeObject[], concurrency = 16): Promise<void> {
  await pool(objs, concurrency, (o) =>
    persist(() => kube.create(res(pluralOf(o.kind!)), o.metadata.namespace, o)),
  );
}

export async function listAll(kube: Kube, ns: string): Promise<KubeObject[]> {
  const lists = await Promise.all(BINDINGS.map((b) => kube.list(res(b.plural), ns)));
  return lists.flatMap((l) => l.items);
}

const isReady = (o: KubeObject) => ready(o) && o.status?.observedGeneration === o.metadata.generation;

/** Waits like waitFor and returns how long it took, in ms. */
export async function waitAll(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<number> {
  const t0 = performance.now();
  await waitFor(what, check, timeoutMs, 250);
  return performance.now() - t0;
}

export const allReady = (kube: Kube, ns: string, n: number) => async () => {
  const items = await listAll(kube, ns);
  return items.length === n && items.every(isReady);
};

/** Every remote resource the operator made, by the owner marker it carries. */
export async function ownedRemotes(
  api: EdgeClient,
  clusterId: string,
): Promise<{ id: string; uid: string }[]> {
  const families = [
    api.ipPolicies,
    api.ipPolicyRules,
    api.ipRestrictions,
    api.tunnelGroupBackends,
    api.weightedBackends,
    api.sshCredentials,
    api.httpsEdges,
    api.tcpEdges,
    api.tlsEdges,
  ];
  const out: { id: string; uid: string }[] = [];
  for (const f of families) {
    for (const r of await collect((f.list as () => AsyncIterable<{ id: string; metadata?: string }>)())) {
      const o = decodeMetadata(r.metadata).owner;
      if (o?.cluster === clusterId) out.push({ id: r.id, uid: o.uid });
    }
  }
  for (const e of await collect(api.httpsEdges.list())) {
    for (const r of e.routes) {
      const o = decodeMetadata(r.metadata).owner;
      if (o?.cluster === clusterId) out.push({ id: r.id, uid: o.uid });
    }
  }
  return out;
}

/** No two remote resources carry the same owner, and each belongs to a live object. */
export async function invariants(kube: Kube, api: EdgeClient, ns: string, clusterId: string) {
  const remotes = await ownedRemotes(api, clusterId);
  const byUid = new Map<string, string[]>();
  for (const r of remotes) byUid.set(r.uid, [...(byUid.get(r.uid) ?? []), r.id]);
  const duplicates = [...byUid.entries()].filter(([, ids]) => ids.length > 1);
  const live = new Set((await listAll(kube, ns)).map((o) => o.metadata.uid));
  const orphans = remotes.filter((r) => !live.has(r.uid));
  return { remotes: remotes.length, duplicates, orphans };
}

export type OperatorChild = OperatorProcess;
export { unexpectedExits };
/** Every line any operator started here printed (the secrets scan reads them). */
export const operatorLogs = allOperatorLogs;

/** Operators this benchmark started: a benchmark stopped by a signal stops them too. */
const children = new Set<OperatorChild>();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const c of children) c.proc.kill('SIGKILL');
    process.exit(130);
  });

/**
 * Benchmarks run what the chart's default pod runs: the bundle (built here once per run) with
 * the image's environment (test/support/operator.ts) and the chart's heap limit.
 * EDGE_OPERATOR_ENTRY=src/cli/edgectl.ts runs the sources instead.
 */
function bundleOnce(): void {
  if (process.env.EDGE_OPERATOR_ENTRY) return;
  execFileSync(process.execPath, [join(REPO_ROOT, 'scripts/bundle.ts')], { stdio: 'ignore' });
  process.env.EDGE_OPERATOR_ENTRY = 'bundle/edgectl.js';
  // and the heap limit the chart derives from its default memory limit (512Mi x 75%)
  process.env.EDGE_OPERATOR_NODE_ARGS ??= '--max-old-space-size=384';
}

export async function startOperator(
  emu: Emulator,
  kubeconfig: string,
  namespace: string,
  clusterId: string,
  port: number,
  extra: string[] = [],
  /**
   * On a service account's token, as the chart's pod (the memory benchmarks: the credentials
   * decide what the operator loads; the fault benchmark: a kube-apiserver it has just restarted
   * refuses a service account until RBAC's caches are filled, where it lets system:masters
   * through); else on the kubeconfig's admin certificate.
   */
  o: { asPod?: boolean } = {},
): Promise<OperatorChild> {
  bundleOnce();
  const child = await startOperatorProcess({
    emu,
    kubeconfig,
    serviceAccountDir: o.asPod ? await podServiceAccount(kubeconfig) : undefined,
    namespace,
    clusterId,
    port,
    extra: ['--agent-metrics-interval', '0', ...extra],
  });
  children.add(child);
  child.proc.once('exit', () => children.delete(child));
  return child;
}

export { metrics, pluralOf, sumMetric };

/** The CA the kubeconfig's current cluster is trusted by (its data, or its file), as client-node reads it. */
function kubeconfigCa(kubeconfig: string): string {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData) return Buffer.from(cluster.caData, 'base64').toString();
  if (cluster?.caFile) return readFileSync(resolve(dirname(kubeconfig), cluster.caFile), 'utf8');
  throw new Error(`${kubeconfig}: the current cluster names no CA`);
}

const serviceAccounts = new Map<string, Promise<string>>();
/**
 * A service account's token (a TokenRequest, as the kubelet makes) and the cluster's CA, for an
 * operator run as the chart's pod: the credentials decide which modules it loads
 * (load-kube-target.ts). Bound to cluster-admin, the benchmarks measure the operator, not its
 * RBAC. One per cluster, in a folder of its own.
 */
function podServiceAccount(kubeconfig: string): Promise<string> {
  let dir = serviceAccounts.get(kubeconfig);
  if (!dir) {
    dir = (async () => {
      const kube = new Kube(kubeconfigTarget(kubeconfig));
      const name = 'edge-operator-bench';
      const ignoreExisting = (e: unknown) => {
        if (!isConflict(e)) throw e;
      };
      await kube
        .create({ group: '', version: 'v1', plural: 'serviceaccounts' }, 'kube-system', {
          metadata: { name },
        })
        .catch(ignoreExisting);
      await kube
        .create(
          { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings' },
          undefined,
          {
            metadata: { name },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
            subjects: [{ kind: 'ServiceAccount', name, namespace: 'kube-system' }],
          } as KubeObject,
        )
        .catch(ignoreExisting);
      const { status } = await kube.request<{ status: { token: string } }>(
        'POST',
        `/api/v1/namespaces/kube-system/serviceaccounts/${name}/token`,
        {
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: 6 * 3600 },
          },
        },
      );
      const d = mkdtempSync(join(tmpdir(), 'bench-sa-'));
      // the token is good for hours: it leaves with the benchmark (a signal's exit included)
      process.once('exit', () => rmSync(d, { recursive: true, force: true }));
      writeFileSync(join(d, 'token'), status.token);
      writeFileSync(join(d, 'ca.crt'), kubeconfigCa(kubeconfig));
      writeFileSync(join(d, 'namespace'), 'kube-system');
      return d;
    })();
    serviceAccounts.set(kubeconfig, dir);
  }
  return dir;
}

/**
 * The operator's Kubernetes writes from its own counters, apart: to the managed objects
 * (PATCH, DELETE), Events (the only POSTs), and leader-election Lease renewals (the only
 * PUTs, one every retry period whatever the load).
 */
export function kubeWrites(m: Map<string, number>): { objects: number; events: number; leases: number } {
  const by = (method: string) =>
    sumMetric(m, 'rest_client_requests_total', (l) => l.includes(`method="${method}"`));
  return { objects: by('PATCH') + by('DELETE'), events: by('POST'), leases: by('PUT') };
}

export const clientFor = (emu: Emulator) =>
  createClient({ baseUrl: emu.url, apiKey: emu.apiKey, rateLimitPerMinute: Infinity });

/**
 * When each object of a namespace became Ready, from one watch per kind: what a person
 * running `kubectl get -w` sees, at the cost of one watch stream per kind (polling every
 * kind's list would load the API server the operator is being measured on).
 */
export function readyTracker(kube: Kube, ns: string) {
  const readyAt = new Map<string, number>();
  /** When each object's id annotation (written once the operator is idle) appeared. */
  const recordedAt = new Map<string, number>();
  let waiters: { n: number; of: Map<string, number>; resolve: () => void }[] = [];
  const informers = BINDINGS.map((b) => {
    const inf = new Informer({
      kube,
      resource: res(b.plural),
      namespace: ns,
      log: pino({ level: 'silent' }),
    });
    inf.on((type, o) => {
      const k = `${b.kind}/${o.metadata.name}`;
      if (type !== 'delete' && isReady(o) && !readyAt.has(k)) readyAt.set(k, performance.now());
      if (type !== 'delete' && o.metadata.annotations?.[ID_ANNOTATION] && !recordedAt.has(k))
        recordedAt.set(k, performance.now());
      for (const w of waiters.filter((w) => w.of.size >= w.n)) w.resolve();
      waiters = waiters.filter((w) => w.of.size < w.n);
    });
    inf.start();
    return inf;
  });
  const until = (of: Map<string, number>, what: string, n: number, timeoutMs: number): Promise<void> => {
    if (of.size >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`only ${of.size} of ${n} ${what}`)), timeoutMs);
      waiters.push({
        n,
        of,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
    });
  };
  return {
    readyAt,
    recordedAt,
    synced: Promise.all(informers.map((i) => i.synced)),
    /** Resolves once n objects have been Ready (or rejects after the timeout). */
    all: (n: number, timeoutMs: number) => until(readyAt, 'Ready', n, timeoutMs),
    /** Resolves once n objects carry their id annotation. */
    allRecorded: (n: number, timeoutMs: number) => until(recordedAt, 'with an id annotation', n, timeoutMs),
    stop: () => {
      for (const i of informers) i.stop();
    },
  };
}
