// A local control plane for tests and the demo: etcd + kube-apiserver on free loopback ports,
// with RBAC and an admin kubeconfig. Two ways to run them (EDGE_CONTROLPLANE=process|container
// forces one): processes of the binaries built from their Go modules (test/controlplane/build.sh),
// used when those are built; otherwise containers (containers.ts) when a Docker engine answers
// and the images are there; otherwise the Go build, then processes. Either way they are detached
// so `up` can return; `down` stops them.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { createPki } from './certs.ts';
import {
  containerLogs,
  containerRunning,
  containersUnavailable,
  controlPlaneImages,
  removeContainers,
  startContainer,
} from './containers.ts';
import { loadImages, NODE_NAME, type NodeState, nodeDown, nodeUnsupported, nodeUp } from './node.ts';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const DEFAULT_CLUSTER_DIR = join(REPO_ROOT, '.cache', 'cluster');
const BUILD_SCRIPT = join(REPO_ROOT, 'test', 'controlplane', 'build.sh');
const RUNTIME_SCRIPT = join(REPO_ROOT, 'test', 'node', 'runtime.sh');
const NODE_BINARIES = ['kubelet', 'kube-controller-manager', 'kube-scheduler'];

export type ControlPlaneRuntime = 'process' | 'container';

export interface ClusterState {
  dir: string;
  kubeconfig: string;
  server: string;
  /** Absent in state files written before containers were an option. */
  runtime?: ControlPlaneRuntime;
  pids: { etcd: number; apiserver: number };
  /** Container names, when runtime is 'container'. */
  containers?: { etcd: string; apiserver: string };
  /** How kube-apiserver was started, so it can be restarted with the same flags. */
  apiserver?: { bin: string; args: string[] };
  /** With --node: containerd, kubelet, controller-manager and scheduler (node.ts). */
  node?: NodeState;
}

export function cacheDir(): string {
  return (
    process.env.EDGE_OPERATOR_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-operator')
  );
}

/** The directory holding kube-apiserver and etcd, or undefined when they are not built. */
export function findBinaries(): string | undefined {
  const dirs = [process.env.EDGE_CONTROLPLANE_BIN, join(cacheDir(), 'bin')].filter(Boolean) as string[];
  return dirs.find((d) => existsSync(join(d, 'kube-apiserver')) && existsSync(join(d, 'etcd')));
}

/** Builds the binaries when missing (needs Go); returns their directory. */
export function ensureBinaries(
  log: (s: string) => void = (s) => process.stderr.write(`${s}\n`),
  node = false,
): string {
  const found = findBinaries();
  if (found && (!node || NODE_BINARIES.every((b) => existsSync(join(found, b))))) return found;
  if (!existsSync(BUILD_SCRIPT))
    throw new Error('kube-apiserver/etcd are not built and the build script is not available');
  log(
    `building kube-apiserver and etcd${node ? ', kubelet, kube-controller-manager and kube-scheduler' : ''} from their Go modules (first time only; several minutes)...`,
  );
  let out: string;
  try {
    // only what a control plane needs: helm, kustomize and actionlint are for the packaging tests
    out = execFileSync(BUILD_SCRIPT, {
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      env: { ...process.env, EDGE_SKIP_PACKAGING_TOOLS: '1' },
    });
  } catch {
    throw new Error(
      'no local control plane: kube-apiserver and etcd could not be built (see above; the build needs Go) and no Docker engine with their images answered (test/containers/images.sh makes them). Or use a cluster of your own: KUBECONFIG and --api-url, without --local',
    );
  }
  return out.trim().split('\n').at(-1)!;
}

async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a detached child that exited stays a zombie until its (gone) parent's reaper runs
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
};

function get(
  url: string,
  tls: { ca: string; cert: string; key: string },
): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(url, { ...tls, timeout: 3000 }, (r) => {
      let body = '';
      r.on('data', (d) => {
        body += d;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function readState(dir: string): ClusterState | undefined {
  const f = join(dir, 'state.json');
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as ClusterState) : undefined;
}

function tlsOf(dir: string) {
  return {
    ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
    cert: readFileSync(join(dir, 'admin.crt'), 'utf8'),
    key: readFileSync(join(dir, 'admin.key'), 'utf8'),
  };
}

async function running(state: ClusterState): Promise<boolean> {
  if (state.runtime === 'container' && state.containers)
    return (
      (await containerRunning(state.containers.apiserver)) && (await containerRunning(state.containers.etcd))
    );
  return alive(state.pids.apiserver) && alive(state.pids.etcd);
}

/** Which way to run the control plane here, and why (for the log line). */
async function chooseRuntime(): Promise<{ runtime: ControlPlaneRuntime; why: string }> {
  const forced = process.env.EDGE_CONTROLPLANE;
  if (forced && forced !== 'process' && forced !== 'container')
    throw new Error(`EDGE_CONTROLPLANE=${forced}: expected process or container`);
  if (forced === 'process') return { runtime: 'process', why: 'EDGE_CONTROLPLANE=process' };
  if (!forced && findBinaries()) return { runtime: 'process', why: 'binaries built' };
  const images = controlPlaneImages(REPO_ROOT);
  const unavailable = await containersUnavailable([images.apiserver, images.etcd]);
  if (!unavailable) return { runtime: 'container', why: `images ${images.apiserver}, ${images.etcd}` };
  if (forced === 'container') throw new Error(`EDGE_CONTROLPLANE=container: ${unavailable}`);
  return { runtime: 'process', why: `no containers: ${unavailable}` };
}

/** `edgectl cluster load`: images from the Docker engine into the node's runtime. */
export async function loadIntoNode(images: string[], dir: string = DEFAULT_CLUSTER_DIR): Promise<void> {
  const state = readState(dir);
  if (!state?.node) throw new Error(`no node in ${dir}: start one with edgectl cluster up --node`);
  await loadImages(state.node, images);
}

/** containerd, runc and the CNI plugins (installed when missing), and the pause image archive. */
function runtimeForNode(log: (s: string) => void): string {
  log('node: the container runtime and the pause image (test/node/runtime.sh)...');
  try {
    const out = execFileSync(RUNTIME_SCRIPT, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    return out.trim().split('\n').at(-1)!;
  } catch {
    throw new Error('--node: the container runtime or the pause image could not be made (see above)');
  }
}

async function waitNodeReady(state: ClusterState, deadline: number): Promise<void> {
  const tls = tlsOf(state.dir);
  for (;;) {
    try {
      const r = await get(`${state.server}/api/v1/nodes/${NODE_NAME}`, tls);
      const conds = r.status === 200 ? (JSON.parse(r.body).status?.conditions ?? []) : [];
      if (conds.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'))
        return;
    } catch {}
    if (Date.now() > deadline || !state.node || !alive(state.node.pids.kubelet)) {
      const tail = readFileSync(join(state.dir, 'kubelet.log'), 'utf8').split('\n').slice(-20).join('\n');
      throw new Error(`the node did not become Ready:\n${tail}`);
    }
    await sleep(500);
  }
}

export async function isReady(state: ClusterState): Promise<boolean> {
  try {
    const r = await get(`${state.server}/readyz`, tlsOf(state.dir));
    return r.status === 200 && r.body.trim() === 'ok';
  } catch {
    return false;
  }
}

export async function clusterUp(
  opts: { dir?: string; timeoutMs?: number; log?: (s: string) => void; node?: boolean } = {},
): Promise<ClusterState> {
  const dir = opts.dir ?? DEFAULT_CLUSTER_DIR;
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const existing = readState(dir);
  const node = opts.node ?? false;
  if (node) {
    const why = nodeUnsupported();
    if (why) throw new Error(`--node: ${why}`);
  }
  if (existing && !!existing.node === node && (await running(existing)) && (await isReady(existing))) {
    log(`control plane already running at ${existing.server}`);
    return existing;
  }
  if (existing) await clusterDown({ dir, log: () => {} });
  // a node runs beside processes only (its kubelet and controllers are processes too)
  const { runtime, why } = node ? { runtime: 'process' as const, why: 'with a node' } : await chooseRuntime();
  log(`control plane: ${runtime === 'container' ? 'containers' : 'processes'} (${why})`);
  const bin = runtime === 'process' ? ensureBinaries(log, node) : '';
  const pauseArchive = node ? runtimeForNode(log) : '';
  mkdirSync(dir, { recursive: true });

  const pki = await createPki();
  const files = {
    'ca.crt': pki.ca.cert,
    'ca.key': pki.ca.key,
    'serving.crt': pki.serving.cert,
    'serving.key': pki.serving.key,
    'admin.crt': pki.admin.cert,
    'admin.key': pki.admin.key,
    'sa.pub': pki.serviceAccount.publicKey,
    'sa.key': pki.serviceAccount.privateKey,
  };
  for (const [name, content] of Object.entries(files))
    writeFileSync(join(dir, name), content, { mode: 0o600 });

  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const spawnLogged = (name: string, cmd: string, args: string[]) => {
    const out = openSync(join(dir, `${name}.log`), 'a');
    const p = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out] });
    p.unref();
    return p.pid!;
  };
  const images = runtime === 'container' ? controlPlaneImages(REPO_ROOT) : undefined;
  // containers are named after the directory, so two clusters (e2e, bench, demo) coexist
  const prefix = `edge-cp-${createHash('sha256').update(resolve(dir)).digest('hex').slice(0, 8)}`;
  const containers = { etcd: `${prefix}-etcd`, apiserver: `${prefix}-apiserver` };
  const etcdArgs = [
    `--data-dir=${runtime === 'container' ? '/var/lib/etcd' : join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync',
    '--log-level=warn',
  ];
  const containerLabels = { 'edge.tunnel.dev/cluster-dir': resolve(dir) };
  // pids are 0 for containers: the state names the containers instead
  let etcd = 0;
  if (runtime === 'container')
    await startContainer({
      name: containers.etcd,
      image: images!.etcd,
      entrypoint: '/usr/local/bin/etcd',
      args: etcdArgs,
      tmpfs: ['/var/lib/etcd'],
      labels: containerLabels,
    });
  else etcd = spawnLogged('etcd', join(bin, 'etcd'), etcdArgs);
  const f = (n: string) => join(dir, n);
  const apiserverArgs = [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    `--secure-port=${apiPort}`,
    `--tls-cert-file=${f('serving.crt')}`,
    `--tls-private-key-file=${f('serving.key')}`,
    `--client-ca-file=${f('ca.crt')}`,
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${f('sa.pub')}`,
    `--service-account-signing-key-file=${f('sa.key')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    `--cert-dir=${runtime === 'container' ? '/tmp/certs' : f('certs')}`,
    // without a controller-manager no ServiceAccount exists for the admission plugin to find;
    // with a node, pods get their service account token (and the kubelet a client cert)
    ...(node
      ? [
          `--kubelet-client-certificate=${f('admin.crt')}`,
          `--kubelet-client-key=${f('admin.key')}`,
          // the node's address, never its name (no lookup leaves the machine)
          '--kubelet-preferred-address-types=InternalIP',
        ]
      : ['--disable-admission-plugins=ServiceAccount']),
  ];
  let apiserver = 0;
  if (runtime === 'container')
    await startContainer({
      name: containers.apiserver,
      image: images!.apiserver,
      entrypoint: '/usr/local/bin/kube-apiserver',
      args: apiserverArgs,
      readOnly: [resolve(dir)],
      tmpfs: ['/tmp'],
      labels: containerLabels,
    });
  else apiserver = spawnLogged('apiserver', join(bin, 'kube-apiserver'), apiserverArgs);
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: { server, 'certificate-authority-data': Buffer.from(pki.ca.cert).toString('base64') },
        },
      ],
      users: [
        {
          name: 'admin',
          user: {
            'client-certificate-data': Buffer.from(pki.admin.cert).toString('base64'),
            'client-key-data': Buffer.from(pki.admin.key).toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'admin', namespace: 'default' } }],
      'current-context': 'local',
    }),
    { mode: 0o600 },
  );
  const state: ClusterState = {
    dir,
    kubeconfig,
    server,
    runtime,
    pids: { etcd, apiserver },
    ...(runtime === 'container'
      ? { containers }
      : { apiserver: { bin: join(bin, 'kube-apiserver'), args: apiserverArgs } }),
  };
  writeFileSync(join(dir, 'state.json'), JSON.stringify(state, null, 2));

  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const started = Date.now();
  while (!(await isReady(state))) {
    if (!(await running(state)) || Date.now() > deadline) {
      const tail =
        runtime === 'container'
          ? await containerLogs(containers.apiserver)
          : readFileSync(join(dir, 'apiserver.log'), 'utf8').split('\n').slice(-15).join('\n');
      await clusterDown({ dir, log: () => {}, keepLogs: true });
      throw new Error(`kube-apiserver did not become ready:\n${tail}`);
    }
    await sleep(300);
  }
  log(`control plane ready at ${server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  if (node) {
    try {
      state.node = await nodeUp({ dir, bin, kubeconfig, apiPort, pauseArchive, spawnLogged, freePort, log });
      writeFileSync(join(dir, 'state.json'), JSON.stringify(state, null, 2));
      await waitNodeReady(state, Date.now() + (opts.timeoutMs ?? 180_000));
    } catch (e) {
      await clusterDown({ dir, log: () => {}, keepLogs: true });
      throw e;
    }
    log(
      `node ready in ${((Date.now() - started) / 1000).toFixed(1)}s (logs: ${dir}/kubelet.log, containerd.log)`,
    );
  }
  return state;
}

export async function clusterDown(
  opts: { dir?: string; log?: (s: string) => void; keepLogs?: boolean } = {},
): Promise<void> {
  const dir = opts.dir ?? DEFAULT_CLUSTER_DIR;
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const state = readState(dir);
  if (!state) {
    log('no local control plane is running');
    return;
  }
  if (state.node) await nodeDown(dir, state.node, log);
  if (state.runtime === 'container' && state.containers) {
    await removeContainers([state.containers.apiserver, state.containers.etcd]);
    if (!opts.keepLogs) rmSync(dir, { recursive: true, force: true });
    log('control plane stopped');
    return;
  }
  for (const pid of [state.pids.apiserver, state.pids.etcd]) {
    if (alive(pid)) process.kill(pid, 'SIGTERM');
  }
  const deadline = Date.now() + 10_000;
  while ([state.pids.apiserver, state.pids.etcd].some(alive) && Date.now() < deadline) await sleep(100);
  for (const pid of [state.pids.apiserver, state.pids.etcd]) if (alive(pid)) process.kill(pid, 'SIGKILL');
  if (!opts.keepLogs) rmSync(dir, { recursive: true, force: true });
  log('control plane stopped');
}

/**
 * Stops kube-apiserver and starts it again on the same port and data (watches are cut,
 * clients see connection errors meanwhile); resolves once /readyz is ok again.
 */
export async function restartApiserver(dir: string = DEFAULT_CLUSTER_DIR, downMs = 2000): Promise<void> {
  const state = readState(dir);
  if (!state?.apiserver) throw new Error(`no restartable control plane in ${dir}`);
  process.kill(state.pids.apiserver, 'SIGTERM');
  while (alive(state.pids.apiserver)) await sleep(100);
  await sleep(downMs);
  const out = openSync(join(dir, 'apiserver.log'), 'a');
  const p = spawn(state.apiserver.bin, state.apiserver.args, { detached: true, stdio: ['ignore', out, out] });
  p.unref();
  state.pids.apiserver = p.pid!;
  writeFileSync(join(dir, 'state.json'), JSON.stringify(state, null, 2));
  const deadline = Date.now() + 60_000;
  while (!(await isReady(state))) {
    if (Date.now() > deadline) throw new Error('kube-apiserver did not come back');
    await sleep(200);
  }
}
