// The node's configuration files: containerd's (with a runc wrapper where root cannot lower an
// oom_score_adj), the CNI bridge's, and the kubelet's.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeNames } from './node-network.ts';

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

export function containerdConfig(dir: string, n: NodeNames, socket: string, sandboxImage: string) {
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

export function cniConfig(dir: string, n: NodeNames) {
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

/** The kubelet's KubeletConfiguration. */
export function kubeletConfig(o: {
  socket: string;
  gateway: string;
  port: number;
  healthzPort: number;
  caFile: string;
  resolvConf: string;
}) {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // these machines have cgroup v1, which kubelet 1.35 refuses unless told
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${o.socket}`,
    // the node's address is the gateway (the kubelet refuses a loopback node IP); the API
    // server reaches the kubelet there for logs and exec
    address: o.gateway,
    port: o.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: o.healthzPort,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: false },
      x509: { clientCAFile: o.caFile },
    },
    authorization: { mode: 'AlwaysAllow' },
    failSwapOn: false,
    resolvConf: o.resolvConf,
    clusterDomain: 'cluster.local',
    serializeImagePulls: false,
    // images are loaded, never pulled: garbage collection would lose them
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    nodeStatusReportFrequency: '10s',
    shutdownGracePeriod: '0s',
  };
}
