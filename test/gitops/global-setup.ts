// gitops: real Flux and Argo CD drive the operator from a Git repository. This setup starts
// what both tools share: the local control plane (processes, in its own directory so other
// suites' clusters are left alone) with kube-controller-manager's garbage collector and
// namespace controller, every CRD (ours, Flux's, Argo CD's) and the Git server on loopback.
// The tools themselves, the emulator and the operator start in each test file.
// Needs the control plane, Flux and Argo CD binaries (test/controlplane/build.sh,
// test/gitops/build.sh), Debian's redis-server and git; without them the suite is skipped
// with the reason, except in CI, where it is mandatory.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { cacheDir, clusterDown, clusterUp, findBinaries, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { createRepository, serveGit } from './git.ts';
import { type Proc, startControllerManager } from './tools.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    gitopsSkip: string;
    gitopsKubeconfig: string;
    gitopsClusterDir: string;
    gitopsBin: string;
    /** http://127.0.0.1:<port>/edge.git */
    gitopsRepoUrl: string;
    /** The working clone tests commit in. */
    gitopsWork: string;
  }
}

const CLUSTER_DIR = join(REPO_ROOT, '.cache', 'gitops-cluster');
const GIT_DIR = join(REPO_ROOT, '.cache', 'gitops-git');
export const TOOL_BINARIES = ['source-controller', 'kustomize-controller', 'argocd'];

const onPath = (cmd: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

export default async function setup(project: TestProject) {
  const bin = join(cacheDir(), 'bin');
  const provide = (skip: string, kubeconfig = '', url = '', work = '') => {
    project.provide('gitopsSkip', skip);
    project.provide('gitopsKubeconfig', kubeconfig);
    project.provide('gitopsClusterDir', CLUSTER_DIR);
    project.provide('gitopsBin', bin);
    project.provide('gitopsRepoUrl', url);
    project.provide('gitopsWork', work);
  };
  const missing = [
    ...(findBinaries() ? [] : ['kube-apiserver and etcd (test/controlplane/build.sh)']),
    ...(findBinaries() && !existsSync(join(findBinaries()!, 'kube-controller-manager'))
      ? ['kube-controller-manager (test/controlplane/build.sh)']
      : []),
    ...TOOL_BINARIES.filter((b) => !existsSync(join(bin, b))).map((b) => `${b} (test/gitops/build.sh)`),
    ...['redis-server', 'git'].filter((c) => !onPath(c)).map((c) => `${c} (apt-get install ${c})`),
  ];
  if (missing.length) {
    const why = `gitops skipped: missing ${missing.join(', ')}`;
    if (process.env.CI) throw new Error(`${why} (the gitops suite is mandatory in CI)`);
    process.stderr.write(`\n${why}\n`);
    provide(why);
    return;
  }
  const cluster = await clusterUp({ dir: CLUSTER_DIR });
  let git: Awaited<ReturnType<typeof serveGit>> | undefined;
  let controllers: Proc | undefined;
  try {
    controllers = await startControllerManager({
      bin: findBinaries()!,
      kubeconfig: cluster.kubeconfig,
      clusterDir: CLUSTER_DIR,
    });
    const kube = new Kube(kubeconfigTarget(cluster.kubeconfig));
    // ours as the README installs them (apart from the tools; Flux then takes them over from Git),
    // Flux's and Argo CD's as their releases ship them
    await apply(kube, [
      ...readManifests(join(REPO_ROOT, 'crds')),
      ...readManifests(join(bin, 'source-controller-crds')),
      ...readManifests(join(bin, 'kustomize-controller-crds')),
      ...readManifests(join(bin, 'argocd-crds')),
    ]);
    const repo = createRepository(GIT_DIR, 'edge');
    git = await serveGit(GIT_DIR);
    provide('', cluster.kubeconfig, `${git.base}/edge.git`, repo.work);
  } catch (e) {
    await git?.close();
    await controllers?.stop();
    await clusterDown({ dir: CLUSTER_DIR });
    throw e;
  }
  return async () => {
    await git?.close();
    await controllers?.stop();
    await clusterDown({ dir: CLUSTER_DIR });
  };
}
