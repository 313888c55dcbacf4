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
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';

export const NODE_NAME = 'edge-node';
/** The `kubernetes` Service address (first of the API server's --service-cluster-ip-range). */
export const KUBERNETES_SERVICE_IP = '10.0.0.1';

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

const sh = (cmd: string, args: string[], input?: string): string =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'], input });
const trySh = (cmd: string, args: string[]): boolean => {
  try {
    sh(cmd, args);
    return true;
  } catch {
    return false;
  }
};

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

export function nodeNames(dir: string) {
  const h = createHash('sha256').update(resolve(dir)).digest('hex');
  // 15 characters at most for a device name; the third octet spreads clusters apart
  const octet = 1 + (Number.parseInt(h.slice(0, 2), 16) % 250);
  return {
    bridge: `edgebr-${h.slice(0, 8)}`,
    chain: `EDGE-NODE-${h.slice(0, 8).toUpperCase()}`,
    subnet: `10.213.${octet}.0/24`,
    gateway: `10.213.${octet}.1`,
    runDir: `/run/edge-node-${h.slice(0, 8)}`,
  };
}

function network(n: ReturnType<typeof nodeNames>, apiPort: number) {
  if (!trySh('ip', ['link', 'show', n.bridge])) sh('ip', ['link', 'add', n.bridge, 'type', 'bridge']);
  trySh('ip', ['addr', 'add', `${n.gateway}/24`, 'dev', n.bridge]);
  sh('ip', ['link', 'set', n.bridge, 'up']);
  writeFileSync(`/proc/sys/net/ipv4/conf/${n.bridge}/route_localnet`, '1');
  trySh('iptables', ['-t', 'nat', '-N', n.chain]);
  sh('iptables', ['-t', 'nat', '-F', n.chain]);
  if (!trySh('iptables', ['-t', 'nat', '-C', 'PREROUTING', '-i', n.bridge, '-j', n.chain]))
    sh('iptables', ['-t', 'nat', '-A', 'PREROUTING', '-i', n.bridge, '-j', n.chain]);
  const rule = (...a: string[]) => sh('iptables', ['-t', 'nat', '-A', n.chain, ...a]);
  rule(
    '-d',
    KUBERNETES_SERVICE_IP,
    '-p',
    'tcp',
    '--dport',
    '443',
    '-j',
    'DNAT',
    '--to-destination',
    `127.0.0.1:${apiPort}`,
  );
  rule('-d', n.gateway, '-p', 'tcp', '-j', 'DNAT', '--to-destination', '127.0.0.1');
}

/** Whether this process may lower an oom_score_adj (CAP_SYS_RESOURCE in its bounding set). */
function canLowerOomScore(): boolean {
  const bnd = /CapBnd:\s*([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  return !!bnd && (BigInt(`0x${bnd}`) & (1n << 24n)) !== 0n;
}

/**
 * The kubelet gives every pod sandbox an oom_score_adj of -998, which needs CAP_SYS_RESOURCE;
 * where root lacks it (some VMs and containers), runc fails to start any pod ("can't get final
 * child's PID from pipe"). Then runc is called through this wrapper, which keeps such scores at 0.
 */
function runcWrapper(dir: string): string {
  const path = join(dir, 'runc');
  writeFileSync(
    path,
    `#!/bin/sh
# written by edgectl cluster up --node: this machine's root cannot lower oom_score_adj
prev=""
for a in "$@"; do
  if [ "$prev" = "--bundle" ] && [ -f "$a/config.json" ]; then
    sed -i 's/"oomScoreAdj":-[0-9]*/"oomScoreAdj":0/' "$a/config.json"
  fi
  prev=$a
done
exec runc "$@"
`,
    { mode: 0o755 },
  );
  return path;
}

function containerdConfig(
  dir: string,
  n: ReturnType<typeof nodeNames>,
  socket: string,
  sandboxImage: string,
) {
  const q = JSON.stringify;
  const runc = canLowerOomScore() ? '' : `\n        BinaryName = ${q(runcWrapper(dir))}`;
  return `version = 2
root = ${q(join(dir, 'containerd'))}
state = ${q(join(n.runDir, 'containerd'))}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing"]
[grpc]
  address = ${q(socket)}
[ttrpc]
  address = ${q(`${socket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(sandboxImage)}
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${q(join(n.runDir, 'runc'))}${runc}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${q(join(dir, 'cni'))}
`;
}

function cniConfig(dir: string, n: ReturnType<typeof nodeNames>) {
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: 'edge-node',
    plugins: [
      {
        type: 'bridge',
        bridge: n.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: n.subnet, gateway: n.gateway }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(dir, 'cni-ipam'),
        },
      },
    ],
  });
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
  network(n, i.apiPort);
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
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // these machines have cgroup v1, which kubelet 1.35 refuses unless told
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      containerRuntimeEndpoint: `unix://${socket}`,
      // the node's address is the gateway (the kubelet refuses a loopback node IP); the API
      // server reaches the kubelet there for logs and exec
      address: n.gateway,
      port: kubeletPort,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: false },
        x509: { clientCAFile: f('ca.crt') },
      },
      authorization: { mode: 'AlwaysAllow' },
      failSwapOn: false,
      resolvConf: join(dir, 'resolv.conf'),
      clusterDomain: 'cluster.local',
      serializeImagePulls: false,
      // images are loaded, never pulled: garbage collection would lose them
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      nodeStatusReportFrequency: '10s',
      shutdownGracePeriod: '0s',
    }),
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

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

async function stop(pids: number[]) {
  for (const pid of pids) if (pid && alive(pid)) process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (pids.some((p) => p && alive(p)) && Date.now() < deadline) await sleep(100);
  for (const pid of pids) if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
}

/** Mount points at or under one of the prefixes, deepest first. */
function mountsUnder(prefixes: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => !!p && prefixes.some((x) => p === x || p.startsWith(`${x}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Network namespaces holding an address of the node's subnet (its pods'), by name. */
function podNetns(n: NodeState): string[] {
  const prefix = n.subnet.split('.').slice(0, 3).join('.');
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return [];
  }
  return names.filter((name) => {
    try {
      return sh('ip', ['-n', name, '-4', '-o', 'addr']).includes(` ${prefix}.`);
    } catch {
      return false;
    }
  });
}

export async function nodeDown(dir: string, n: NodeState, log: (s: string) => void): Promise<void> {
  // the kubelet first, so it does not restart what is removed below
  await stop([n.pids.kubelet, n.pids.controllerManager, n.pids.scheduler]);
  if (alive(n.pids.containerd)) {
    const ctr = (...a: string[]) => sh('ctr', ['--address', n.socket, '-n', 'k8s.io', ...a]);
    try {
      const tasks = ctr('tasks', 'ls', '-q').split('\n').filter(Boolean);
      for (const t of tasks)
        trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', t]);
      const deadline = Date.now() + 10_000;
      for (const t of tasks)
        while (
          !trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'tasks', 'delete', t]) &&
          Date.now() < deadline
        )
          await sleep(200);
      for (const c of ctr('containers', 'ls', '-q').split('\n').filter(Boolean))
        trySh('ctr', ['--address', n.socket, '-n', 'k8s.io', 'containers', 'delete', c]);
    } catch (e) {
      log(`node: removing containers: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  await stop([n.pids.containerd]);
  // shims of this containerd that outlived it
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (cmd.includes('containerd-shim') && cmd.includes(n.socket)) process.kill(Number(p), 'SIGKILL');
    } catch {}
  }
  for (const ns of podNetns(n)) trySh('ip', ['netns', 'delete', ns]);
  for (const m of mountsUnder([resolve(dir), n.runDir])) trySh('umount', ['-l', m]);
  trySh('iptables', ['-t', 'nat', '-D', 'PREROUTING', '-i', n.bridge, '-j', n.chain]);
  trySh('iptables', ['-t', 'nat', '-F', n.chain]);
  trySh('iptables', ['-t', 'nat', '-X', n.chain]);
  trySh('ip', ['link', 'delete', n.bridge]);
  // the kubelet's cgroups (kubepods and below), empty once the containers are gone
  for (const ctl of existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : [])
    trySh('sh', [
      '-c',
      `[ -d /sys/fs/cgroup/${ctl}/kubepods ] && find /sys/fs/cgroup/${ctl}/kubepods -depth -type d -exec rmdir {} + ; true`,
    ]);
  rmSync(n.runDir, { recursive: true, force: true });
}

/** Puts images from the Docker engine into the node's runtime (`edgectl cluster load`). */
export async function loadImages(n: NodeState, images: string[]): Promise<void> {
  await new Promise<void>((res, rej) => {
    const save = spawn('docker', ['save', ...images], { stdio: ['ignore', 'pipe', 'pipe'] });
    const imp = spawn('ctr', ['--address', n.socket, '-n', 'k8s.io', 'images', 'import', '-'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    save.stderr.on('data', (d) => {
      err += d;
    });
    imp.stderr.on('data', (d) => {
      err += d;
    });
    save.on('error', (e) => rej(new Error(`docker save: ${e.message}`)));
    imp.on('error', (e) => rej(new Error(`ctr import: ${e.message}`)));
    save.stdout.pipe(imp.stdin);
    let pending = 2;
    let failed = false;
    const done = (what: string) => (code: number | null) => {
      if (code !== 0 && !failed) {
        failed = true;
        rej(new Error(`${what} failed: ${err.trim().split('\n')[0] ?? `exit ${code}`}`));
      }
      if (--pending === 0 && !failed) res();
    };
    save.on('close', done('docker save'));
    imp.on('close', done('ctr images import'));
  });
}

export const nodeLogFiles = (dir: string) =>
  ['containerd', 'kubelet', 'controller-manager', 'scheduler'].map((x) => join(dir, `${x}.log`));
