// The node suite: the local control plane with a node (containerd, kubelet, controller-manager,
// scheduler; src/localcluster/node.ts), the shipped image loaded into it. Mandatory in CI:
// no node, no pass. Elsewhere it says why it is skipped.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { clusterDown, clusterUp, loadIntoNode, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { nodeUnsupported } from '../../src/localcluster/node.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    nodeKubeconfig: string;
    nodeSkip: string;
    /** The host's address on the pods' bridge: pods reach loopback ports of the host there. */
    nodeGateway: string;
    nodeSocket: string;
    nodeApiPort: number;
  }
}

const DIR = join(REPO_ROOT, '.cache', 'node-cluster');
export const IMAGE = 'edge-operator:dev';
/** The same image under a second tag, for the upgrade test. */
export const NEXT_IMAGE = 'edge-operator:dev-next';

function whyNot(): string | undefined {
  const unsupported = nodeUnsupported();
  if (unsupported) return unsupported;
  try {
    execFileSync('docker', ['image', 'inspect', IMAGE], { stdio: 'ignore' });
  } catch {
    return `no image ${IMAGE} in the Docker engine (npm run image:build)`;
  }
  return undefined;
}

export default async function setup(project: TestProject) {
  const why = whyNot();
  if (why) {
    const line = `node suite skipped: ${why}`;
    if (process.env.CI) throw new Error(`${line} (the node suite is mandatory in CI)`);
    process.stderr.write(`\n${line}\n`);
    for (const [k, v] of [
      ['nodeKubeconfig', ''],
      ['nodeGateway', ''],
      ['nodeSocket', ''],
    ] as const)
      project.provide(k, v);
    project.provide('nodeApiPort', 0);
    project.provide('nodeSkip', line);
    return;
  }
  const state = await clusterUp({ dir: DIR, node: true });
  execFileSync('docker', ['tag', IMAGE, NEXT_IMAGE]);
  await loadIntoNode([IMAGE, NEXT_IMAGE], DIR);
  project.provide('nodeKubeconfig', state.kubeconfig);
  project.provide('nodeGateway', state.node!.gateway);
  project.provide('nodeSocket', state.node!.socket);
  project.provide('nodeApiPort', Number(new URL(state.server).port));
  project.provide('nodeSkip', '');
  return async () => {
    await clusterDown({ dir: DIR });
  };
}
