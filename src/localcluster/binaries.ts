// The binaries a local cluster runs: kube-apiserver and etcd (and, for a node, the kubelet and
// the controllers) built from their Go modules by test/controlplane/build.sh, which builds the
// components it is given; the node's container runtime and pause image from test/node/runtime.sh.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, REPO_ROOT } from './paths.ts';

const BUILD_SCRIPT = join(REPO_ROOT, 'test', 'controlplane', 'build.sh');
const RUNTIME_SCRIPT = join(REPO_ROOT, 'test', 'node', 'runtime.sh');
/** What every local control plane runs (`edgectl operator --local`, `cluster up`, the e2e suite). */
export const CONTROL_PLANE_BINARIES = ['kube-apiserver', 'etcd'] as const;
/** What a node adds (`cluster up --node`, the node suite). */
export const NODE_BINARIES = ['kube-controller-manager', 'kube-scheduler', 'kubelet'] as const;

/** How the build script is run (tests put a stand-in here: the unit suite shares its modules). */
export const buildScript = {
  path: BUILD_SCRIPT,
  run: (file: string, args: string[]): string =>
    execFileSync(file, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' }),
};

/** The binaries a local cluster runs: the control plane's, and with a node the node's too. */
export function binariesFor(node: boolean): string[] {
  return node ? [...CONTROL_PLANE_BINARIES, ...NODE_BINARIES] : [...CONTROL_PLANE_BINARIES];
}

/** The directory holding kube-apiserver and etcd, or undefined when they are not built. */
export function findBinaries(): string | undefined {
  const dirs = [process.env.EDGE_CONTROLPLANE_BIN, join(cacheDir(), 'bin')].filter(Boolean) as string[];
  return dirs.find((d) => CONTROL_PLANE_BINARIES.every((b) => existsSync(join(d, b))));
}

/**
 * Builds the binaries when missing (needs Go): only those this cluster runs, so a control
 * plane without a node (the demo, `npm start`) never waits for the kubelet and the
 * controllers. Returns their directory.
 */
export function ensureBinaries(
  log: (s: string) => void = (s) => process.stderr.write(`${s}\n`),
  node = false,
): string {
  const wanted = binariesFor(node);
  const found = findBinaries();
  if (found && wanted.every((b) => existsSync(join(found, b)))) return found;
  if (!existsSync(buildScript.path))
    throw new Error(`${wanted.join(', ')} are not built and the build script is not available`);
  log(`building ${wanted.join(', ')} from their Go modules (first time only; several minutes)...`);
  let out: string;
  try {
    // only what this cluster runs (helm, kustomize and actionlint are for the packaging tests)
    out = buildScript.run(buildScript.path, wanted);
  } catch {
    throw new Error(
      `no local control plane: ${wanted.join(', ')} could not be built (see above; the build needs Go) and no Docker engine with the control plane's images answered (test/containers/images.sh makes them). Or use a cluster of your own: KUBECONFIG and --api-url, without --local`,
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
