// The fault and crash suite at a small N (the script takes any N: npm run bench:faults).
import { afterAll, beforeAll, expect, it } from 'vitest';
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
  'converges and cleans up under 20% API faults and repeated SIGKILLs: no duplicate, no orphan',
  async () => {
    const r = await faultCrashRun({
      kube: w.kube,
      kubeconfig,
      emu: w.emu,
      ns: w.ns,
      n: 40,
      crashes: 4,
      port: await freePort(),
      timeoutMs: 150_000,
    });
    expect(r.remoteResources).toBe(40);
    expect(r.duplicates).toBe(0);
    expect(r.orphans).toBe(0);
    expect(r.remainingAfterDelete).toBe(0);
    expect(r.unexpectedExits).toEqual([]);
  },
  400_000,
);
