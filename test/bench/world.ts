// A benchmark's world: the local control plane (its own directory), CRDs, an emulator.
import { join } from 'node:path';
import { type Emulator, type EmulatorOptions, startEmulator } from '../../src/emulator/server.ts';
import { clusterUp, REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';

export interface BenchWorld {
  kube: Kube;
  kubeconfig: string;
  /** Set when the local control plane is ours to restart. */
  clusterDir?: string;
  emu: Emulator;
  ns: string;
  close(): Promise<void>;
}

export async function benchWorld(prefix: string, emulator: EmulatorOptions = {}): Promise<BenchWorld> {
  const clusterDir = process.env.E2E_KUBECONFIG ? undefined : join(REPO_ROOT, '.cache', 'bench-cluster');
  const kubeconfig =
    process.env.E2E_KUBECONFIG ?? (await clusterUp({ dir: clusterDir, log: () => {} })).kubeconfig;
  const kube = new Kube(kubeconfigTarget(kubeconfig));
  await apply(kube, readManifests(join(REPO_ROOT, 'crds')));
  const emu = await startEmulator(emulator);
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await kube.create({ group: '', version: 'v1', plural: 'namespaces' }, undefined, {
    metadata: { name: ns },
  });
  return { kube, kubeconfig, clusterDir, emu, ns, close: () => emu.close() };
}
