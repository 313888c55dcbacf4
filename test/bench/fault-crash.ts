// Faults and crashes while objects converge and are deleted: 20% of API requests fail
// (500/502/503, 429 with Retry-After, dropped connections after the work was done) with
// added latency, and the operator is killed with SIGKILL at random moments.
// Invariants: all Ready, no duplicate, no orphan; after deletion nothing remains, no object
// stuck on its finalizer. Usage: npm run bench:faults -- --n 1000 --crashes 10
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { seeded } from '../../src/emulator/faults.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import type { Kube } from '../../src/operator/runtime/kube.ts';
import {
  allReady,
  clientFor,
  createAll,
  invariants,
  listAll,
  mixedObjects,
  type OperatorChild,
  ownedRemotes,
  pluralOf,
  pool,
  res,
  startOperator,
  unexpectedExits,
  waitAll,
} from './lib.ts';

export interface FaultCrashOptions {
  kube: Kube;
  kubeconfig: string;
  emu: Emulator;
  ns: string;
  n: number;
  crashes: number;
  port: number;
  seed?: number;
  timeoutMs?: number;
  log?: (s: string) => void;
}

export async function faultCrashRun(o: FaultCrashOptions) {
  const log = o.log ?? (() => {});
  const rand = seeded(o.seed ?? 7);
  const clusterId = `faults-${o.ns}`;
  const api = clientFor(o.emu);
  const timeoutMs = o.timeoutMs ?? 600_000;
  o.emu.faults.set({
    errorRate: 0.1,
    rateLimitRate: 0.05,
    retryAfterSeconds: 1,
    dropRate: 0.05,
    latencyMs: 40,
    seed: o.seed ?? 7,
  });
  const extra = ['--api-rate-limit', '100000', '--resync-period', '30s', '--concurrency', '8'];
  let op: OperatorChild = await startOperator(o.emu, o.kubeconfig, o.ns, clusterId, o.port, extra);
  const crashLoop = async (count: number, until: () => boolean) => {
    for (let i = 0; i < count && !until(); i++) {
      await new Promise((r) => setTimeout(r, 300 + rand() * 2500));
      await op.kill('SIGKILL');
      log(`crash ${i + 1}/${count}: operator killed`);
      op = await startOperator(o.emu, o.kubeconfig, o.ns, clusterId, o.port, extra);
    }
  };

  const objs = mixedObjects(o.n, o.ns);
  const t0 = performance.now();
  let converged = false;
  const creating = createAll(o.kube, objs);
  await crashLoop(Math.ceil(o.crashes / 2), () => converged);
  await creating;
  await waitAll('all Ready under faults', allReady(o.kube, o.ns, o.n), timeoutMs);
  converged = true;
  const convergeMs = performance.now() - t0;
  const afterCreate = await invariants(o.kube, api, o.ns, clusterId);
  log(
    `converged in ${(convergeMs / 1000).toFixed(1)}s: ${afterCreate.remotes} remote resources, ${afterCreate.duplicates.length} duplicates, ${afterCreate.orphans.length} orphans`,
  );

  const t1 = performance.now();
  let deleted = false;
  const deleting = pool(await listAll(o.kube, o.ns), 16, (x) =>
    o.kube.delete(res(pluralOf(x.kind!)), o.ns, x.metadata.name),
  );
  await crashLoop(Math.floor(o.crashes / 2), () => deleted);
  await deleting;
  await waitAll('all objects finalized', async () => (await listAll(o.kube, o.ns)).length === 0, timeoutMs);
  deleted = true;
  const deleteMs = performance.now() - t1;
  o.emu.faults.set({});
  const left = await ownedRemotes(api, clusterId);
  await op.kill();
  await api.close();
  return {
    n: o.n,
    crashes: o.crashes,
    convergeSeconds: Number((convergeMs / 1000).toFixed(1)),
    deleteSeconds: Number((deleteMs / 1000).toFixed(1)),
    remoteResources: afterCreate.remotes,
    duplicates: afterCreate.duplicates.length,
    orphans: afterCreate.orphans.length,
    remainingAfterDelete: left.length,
    unexpectedExits: [...unexpectedExits],
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '1000' },
      crashes: { type: 'string', default: '10' },
      seed: { type: 'string', default: '7' },
    },
  });
  const { benchWorld } = await import('./world.ts');
  const w = await benchWorld('faults');
  try {
    const result = await faultCrashRun({
      ...w,
      n: Number(values.n),
      crashes: Number(values.crashes),
      seed: Number(values.seed),
      port: 18181,
      log: (s) => console.error(s),
    });
    const out = join(import.meta.dirname, 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(
      join(out, 'fault-crash.json'),
      `${JSON.stringify({ date: new Date().toISOString(), ...result }, null, 2)}\n`,
    );
    console.log(JSON.stringify(result, null, 2));
    if (result.duplicates || result.orphans || result.remainingAfterDelete || result.unexpectedExits.length)
      process.exitCode = 1;
  } finally {
    await w.close();
  }
}
