// e2e: a real kube-apiserver. With E2E_KUBECONFIG, that cluster; otherwise the local
// control plane (built from Go modules). In CI the suite is mandatory: no API server, no pass.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { clusterDown, clusterUp, findBinaries, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    e2eSkip: string;
  }
}

const DIR = join(REPO_ROOT, '.cache', 'e2e-cluster');
const hasGo = () => {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

export default async function setup(project: TestProject) {
  let kubeconfig = process.env.E2E_KUBECONFIG ?? '';
  let started = false;
  if (!kubeconfig) {
    if (!findBinaries() && !hasGo()) {
      const why =
        'e2e skipped: no E2E_KUBECONFIG and neither built control-plane binaries nor Go to build them';
      if (process.env.CI) throw new Error(`${why} (the e2e suite is mandatory in CI)`);
      process.stderr.write(`\n${why}\n`);
      project.provide('kubeconfig', '');
      project.provide('e2eSkip', why);
      return;
    }
    const state = await clusterUp({ dir: DIR });
    kubeconfig = state.kubeconfig;
    started = true;
  }
  const kube = new Kube(kubeconfigTarget(kubeconfig));
  await apply(kube, readManifests(join(REPO_ROOT, 'crds')));
  project.provide('kubeconfig', kubeconfig);
  project.provide('e2eSkip', '');
  return async () => {
    if (started) await clusterDown({ dir: DIR });
  };
}
