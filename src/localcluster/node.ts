// A node for the local control plane (`edgectl cluster up --node`): containerd, a kubelet,
// kube-controller-manager and kube-scheduler as processes on this machine, so the chart's
// Deployment becomes a pod for real. Linux and root only. Everything it makes is named after
// the cluster directory and removed by nodeDown: processes, containers, mounts, the pods'
// network namespaces, one bridge, one iptables chain, the kubelet's cgroups.
//
// Network: pods sit on a bridge of their own (10.213.N.0/24, the gateway on the host). They
// reach the API server the way in-cluster clients do, at the `kubernetes` Service address
// (10.0.0.1:443), and any loopback port of the host at the gateway address: both are DNAT
// rules to 127.0.0.1 (route_localnet on the bridge), so the control plane, the emulator and
// the kubelet stay on loopback and no traffic leaves the machine. There is no kube-proxy and
// no cluster DNS: pods use addresses, and resolve nothing (their resolv.conf names 127.0.0.1,
// inside their own namespace).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { cniConfig, containerdConfig, kubeletConfig } from './node-config.ts';
import { networkUp, nodeNames } from './node-network.ts';
import { sh, trySh } from './shell.ts';

export const NODE_NAME = 'edge-node';

export interface NodeState {
  bridge: string;
  /** The host's address on the bridge: pods reach the host's loopback ports here. */
  gateway: string;
  subnet: string;
  chain: string;
  socket: string;
  runDir: string;
  sandboxImage: string;
  pids: { containerd: number; kubelet: number; controllerManager: number; scheduler: number };
  kubeletPort: number;
}

export interface NodeInput {
  dir: string;
  bin: string;
  kubeconfig: string;
  apiPort: number;
  pauseArchive: string;
  spawnLogged: (name: string, cmd: string, args: string[]) => number;
  freePort: () => Promise<number>;
  log: (s: string) => void;
}

/** Why this machine cannot run a node, or undefined. */
export function nodeUnsupported(): string | undefined {
  if (process.platform !== 'linux') return 'a node needs Linux';
  if (process.getuid?.() !== 0) return 'a node needs root (containerd, the kubelet, a bridge, iptables)';
  for (const c of ['containerd', 'ctr', 'runc', 'iptables', 'ip'])
    if (!trySh('sh', ['-c', `command -v ${c}`]))
      return `${c} is not installed (test/node/runtime.sh installs what the node needs)`;
  if (!existsSync('/usr/lib/cni/bridge')) return 'the CNI plugins are not installed (test/node/runtime.sh)';
  return undefined;
}

async function waitFor(what: string, fn: () => boolean | Promise<boolean>, ms: number, logFile?: string) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) {
      const tail =
        logFile && existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n') : '';
      throw new Error(`${what} within ${ms / 1000}s${tail ? `:\n${tail}` : ''}`);
    }
    await sleep(250);
  }
}

export async function nodeUp(i: NodeInput): Promise<NodeState> {
  const unsupported = nodeUnsupported();
  if (unsupported) throw new Error(`no node: ${unsupported}`);
  const dir = join(i.dir, 'node');
  const n = nodeNames(i.dir);
  mkdirSync(join(dir, 'cni'), { recursive: true });
  mkdirSync(n.runDir, { recursive: true });
  networkUp(n, i.apiPort);
  writeFileSync(join(dir, 'cni', '10-edge-node.conflist'), cniConfig(dir, n));
  writeFileSync(join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\n');

  const socket = join(n.runDir, 'containerd.sock');
  const tag = /pause-([0-9a-f]+)\.tar$/.exec(i.pauseArchive)?.[1] ?? 'local';
  const sandboxImage = `edge.local/pause:${tag}`;
  writeFileSync(join(dir, 'containerd.toml'), containerdConfig(dir, n, socket, sandboxImage));
  const containerd = i.spawnLogged('containerd', 'containerd', ['--config', join(dir, 'containerd.toml')]);
  await waitFor(
    'containerd did not answer',
    () => trySh('ctr', ['--address', socket, 'version']),
    30_000,
    join(i.dir, 'containerd.log'),
  );
  sh('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'import', i.pauseArchive]);

  const [kubeletPort, healthzPort] = [await i.freePort(), await i.freePort()];
  const f = (name: string) => join(i.dir, name);
  writeFileSync(
    join(dir, 'kubelet.yaml'),
    stringify(
      kubeletConfig({
        socket,
        gateway: n.gateway,
        port: kubeletPort,
        healthzPort,
        caFile: f('ca.crt'),
        resolvConf: join(dir, 'resolv.conf'),
      }),
    ),
  );
  const kubelet = i.spawnLogged('kubelet', join(i.bin, 'kubelet'), [
    `--config=${join(dir, 'kubelet.yaml')}`,
    `--kubeconfig=${i.kubeconfig}`,
    `--root-dir=${join(dir, 'kubelet')}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${n.gateway}`,
    '--v=1',
  ]);
  // both controllers: the admin kubeconfig, their own port on loopback, one instance
  const controller = async () => [
    `--kubeconfig=${i.kubeconfig}`,
    `--authentication-kubeconfig=${i.kubeconfig}`,
    `--authorization-kubeconfig=${i.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${await i.freePort()}`,
    '--leader-elect=false',
  ];
  const controllerManager = i.spawnLogged('controller-manager', join(i.bin, 'kube-controller-manager'), [
    ...(await controller()),
    `--root-ca-file=${f('ca.crt')}`,
    `--service-account-private-key-file=${f('sa.key')}`,
    '--use-service-account-credentials=true',
    '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service,-route',
  ]);
  const scheduler = i.spawnLogged('scheduler', join(i.bin, 'kube-scheduler'), await controller());
  return {
    ...n,
    socket,
    sandboxImage,
    kubeletPort,
    pids: { containerd, kubelet, controllerManager, scheduler },
  };
}

export const nodeLogFiles = (dir: string) =>
  ['containerd', 'kubelet', 'controller-manager', 'scheduler'].map((x) => join(dir, `${x}.log`));
