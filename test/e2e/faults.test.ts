// The fault and crash suite at a small N (the script takes any N: npm run bench:faults).
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT, restartApiserver } from '../../src/localcluster/cluster.ts';
import { faultCrashRun } from '../bench/fault-crash.ts';
import { freePort, kubeconfig, skipReason, type World, world } from './harness.ts';

let w: World;
beforeAll(async () => {
  if (!skipReason) w = await world('faults');
});
afterAll(async () => {
  await w?.close();
});

it.skipIf(!!skipReason)(
  'converges and cleans up under 20% API faults, SIGKILLs and API server restarts: no duplicate, no orphan, no leaked key',
  async () => {
    // the local control plane is restarted under the run; a cluster of your own is not touched
    const dir = join(REPO_ROOT, '.cache', 'e2e-cluster');
    const r = await faultCrashRun({
      kube: w.kube,
      kubeconfig,
      emu: w.emu,
      ns: w.ns,
      n: 40,
      crashes: 4,
      port: await freePort(),
      timeoutMs: 150_000,
      restartApiserver: process.env.E2E_KUBECONFIG ? undefined : () => restartApiserver(dir),
    });
    expect(r.remoteResources).toBe(40);
    expect(r.duplicates).toBe(0);
    expect(r.orphans).toBe(0);
    expect(r.remainingAfterDelete).toBe(0);
    expect(r.unexpectedExits).toEqual([]);
    expect(r.secretLeaks).toBe(0);
    expect(r.logLinesScanned).toBeGreaterThan(40);
    if (!process.env.E2E_KUBECONFIG) expect(r.apiServerRestarts).toBe(2);
  },
  400_000,
);
