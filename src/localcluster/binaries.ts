// The binaries a local cluster runs: kube-apiserver and etcd (and, for a node, the kubelet and
// the controllers) built from their Go modules by test/controlplane/build.sh; the node's
// container runtime and pause image from test/node/runtime.sh.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, REPO_ROOT } from './paths.ts';

const BUILD_SCRIPT = join(REPO_ROOT, 'test', 'controlplane', 'build.sh');
const RUNTIME_SCRIPT = join(REPO_ROOT, 'test', 'node', 'runtime.sh');
const NODE_BINARIES = ['kubelet', 'kube-controller-manager', 'kube-scheduler'];

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

/** containerd, runc and the CNI plugins (installed when missing), and the pause image archive. */
export function runtimeForNode(log: (s: string) => void): string {
  log('node: the container runtime and the pause image (test/node/runtime.sh)...');
  try {
    const out = execFileSync(RUNTIME_SCRIPT, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    return out.trim().split('\n').at(-1)!;
  } catch {
    throw new Error('--node: the container runtime or the pause image could not be made (see above)');
  }
}
