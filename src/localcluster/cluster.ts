// A local control plane for tests and the demo: etcd + kube-apiserver on free loopback ports,
// with RBAC and an admin kubeconfig. Two ways to run them (EDGE_CONTROLPLANE=process|container
// forces one): processes of the binaries built from their Go modules (test/controlplane/build.sh),
// used when those are built; otherwise containers (containers.ts) when a Docker engine answers
// and the images are there; otherwise the Go build, then processes. Either way they are detached
// so `up` can return; `down` stops them.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBinaries, findBinaries, runtimeForNode } from './binaries.ts';
import {
  containerLogs,
  containersUnavailable,
  controlPlaneImages,
  removeContainers,
  startContainer,
} from './containers.ts';
import { apiserverArgs, etcdArgs, writeKubeconfig, writePki } from './control-plane-files.ts';
import { NODE_NAME, nodeUnsupported, nodeUp } from './node.ts';
import { nodeDown } from './node-down.ts';
import { loadImages } from './node-images.ts';
import { cacheDir, DEFAULT_CLUSTER_DIR, REPO_ROOT } from './paths.ts';
import { alive, freePort, spawnLoggedIn, stop } from './processes.ts';
import {
  type ClusterState,
  type ControlPlaneRuntime,
  get,
  isReady,
  readState,
  running,
  tlsOf,
  writeState,
} from './state.ts';

export type { ClusterState, ControlPlaneRuntime };
export { cacheDir, DEFAULT_CLUSTER_DIR, ensureBinaries, findBinaries, isReady, REPO_ROOT };

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

/** etcd and kube-apiserver started (not yet ready), as processes or containers; the state written. */
async function startControlPlane(
  dir: string,
  runtime: ControlPlaneRuntime,
  bin: string,
  node: boolean,
): Promise<{ state: ClusterState; apiPort: number }> {
  const pki = await writePki(dir);
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const spawnLogged = spawnLoggedIn(dir);
  const images = runtime === 'container' ? controlPlaneImages(REPO_ROOT) : undefined;
  // containers are named after the directory, so two clusters (e2e, bench, demo) coexist
  const prefix = `edge-cp-${createHash('sha256').update(resolve(dir)).digest('hex').slice(0, 8)}`;
  const containers = { etcd: `${prefix}-etcd`, apiserver: `${prefix}-apiserver` };
  const etcdFlags = etcdArgs({
    dataDir: runtime === 'container' ? '/var/lib/etcd' : join(dir, 'etcd'),
    clientPort: etcdPort,
    peerPort,
  });
  const containerLabels = { 'edge.tunnel.dev/cluster-dir': resolve(dir) };
  // pids are 0 for containers: the state names the containers instead
  let etcd = 0;
  if (runtime === 'container')
    await startContainer({
      name: containers.etcd,
      image: images!.etcd,
      entrypoint: '/usr/local/bin/etcd',
      args: etcdFlags,
      tmpfs: ['/var/lib/etcd'],
      labels: containerLabels,
    });
  else etcd = spawnLogged('etcd', join(bin, 'etcd'), etcdFlags);
  const apiserverFlags = apiserverArgs({
    dir,
    etcdPort,
    apiPort,
    certDir: runtime === 'container' ? '/tmp/certs' : join(dir, 'certs'),
    node,
  });
  let apiserver = 0;
  if (runtime === 'container')
    await startContainer({
      name: containers.apiserver,
      image: images!.apiserver,
      entrypoint: '/usr/local/bin/kube-apiserver',
      args: apiserverFlags,
      readOnly: [resolve(dir)],
      tmpfs: ['/tmp'],
      labels: containerLabels,
    });
  else apiserver = spawnLogged('apiserver', join(bin, 'kube-apiserver'), apiserverFlags);
  const server = `https://127.0.0.1:${apiPort}`;
  const state: ClusterState = {
    dir,
    kubeconfig: writeKubeconfig(dir, server, pki),
    server,
    runtime,
    pids: { etcd, apiserver },
    ...(runtime === 'container'
      ? { containers }
      : { apiserver: { bin: join(bin, 'kube-apiserver'), args: apiserverFlags } }),
  };
  writeState(state);
  return { state, apiPort };
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
  const { state, apiPort } = await startControlPlane(dir, runtime, bin, node);

  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const started = Date.now();
  while (!(await isReady(state))) {
    if (!(await running(state)) || Date.now() > deadline) {
      const tail =
        runtime === 'container' && state.containers
          ? await containerLogs(state.containers.apiserver)
          : readFileSync(join(dir, 'apiserver.log'), 'utf8').split('\n').slice(-15).join('\n');
      await clusterDown({ dir, log: () => {}, keepLogs: true });
      throw new Error(`kube-apiserver did not become ready:\n${tail}`);
    }
    await sleep(300);
  }
  log(`control plane ready at ${state.server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  if (node) {
    try {
      state.node = await nodeUp({
        dir,
        bin,
        kubeconfig: state.kubeconfig,
        apiPort,
        pauseArchive,
        spawnLogged: spawnLoggedIn(dir),
        freePort,
        log,
      });
      writeState(state);
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
  if (state.runtime === 'container' && state.containers)
    await removeContainers([state.containers.apiserver, state.containers.etcd]);
  else await stop([state.pids.apiserver, state.pids.etcd]);
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
  writeState(state);
  const deadline = Date.now() + 60_000;
  while (!(await isReady(state))) {
    if (Date.now() > deadline) throw new Error('kube-apiserver did not come back');
    await sleep(200);
  }
}
