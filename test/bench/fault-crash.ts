import { parseArgs } from 'node:util';
import { seeded } from '../../src/emulator/faults.ts';
import type { Emulator } from '../../src/emulator/server.ts';
import { restartApiserver } from '../../src/localcluster/cluster.ts';
import type { Kube } from '../../src/operator/runtime/kube/kube.ts';
import {
  allReady,
  clientFor,
  createAll,
  invariants,
  listAll,
  mixedObjects,
  type OperatorChild,
  operatorLogs,
  ownedRemotes,
  persist,
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
  /** Restarts kube-apiserver; called once while creating and once while deleting. */
  restartApiserver?: () => Promise<void>;
}

export async function faultCrashRun(o: FaultCrashOptions) {
  const log = o.log ?? (() => {});
  const rand = seeded(o.seed ?? 7);
  const clusterId = `faults-${o.ns}`;
  const api = clientFor(o.emu);
  const timeoutMs = o.timeoutMs ?? 600_000;
  // this run's operators only: the test runner may have run others in this process before
  unexpectedExits.length = 0;
  operatorLogs.length = 0;
  o.emu.faults.set({
    errorRate: 0.07,
    rateLimitRate: 0.05,
    retryAfterSeconds: 1,
    dropRate: 0.05,
    // a gateway's 504 while the API does the work 1.5 s later: a create looked for at once is not there yet
    lateRate: 0.03,
    lateMs: 1500,
    latencyMs: 40,
    seed: o.seed ?? 7,
  });
  const extra = [
    '--api-rate-limit',
    '100000',
    '--resync-period',
    '30s',
    '--concurrency',
    '8',
    '--leader-elect',
    'false',
  ];
  let op: OperatorChild = await startOperator(o.emu, o.kubeconfig, o.ns, clusterId, o.port, extra, {
    asPod: true,
  });
  const crashLoop = async (count: number, done: () => boolean) => {
    for (let i = 0; i < count && !done(); i++) {
      await new Promise((r) => setTimeout(r, 300 + rand() * 2500));
      await op.kill('SIGKILL');
      log(`crash ${i + 1}/${count}: operator killed`);
      op = await startOperator(o.emu, o.kubeconfig, o.ns, clusterId, o.port, extra, { asPod: true });
    }
  };
  let restarts = 0;
  const restart = async () => {
    if (!o.restartApiserver) return;
    await new Promise((r) => setTimeout(r, 1000 + rand() * 1000));
    await o.restartApiserver();
    restarts++;
    log('kube-apiserver restarted');
  };

  const objs = mixedObjects(o.n, o.ns);
  const t0 = performance.now();
  let converged = false;
  const creating = createAll(o.kube, objs);
  await Promise.all([crashLoop(Math.ceil(o.crashes / 2), () => converged), restart()]);
  await creating;
  await waitAll('all Ready under faults', allReady(o.kube, o.ns, o.n), timeoutMs);
  converged = true;
  const convergeMs = performance.now() - t0;
  // read while the faults still run: a list the faults break (after the client's own retries) is read again
  const afterCreate = (await persist(() => invariants(o.kube, api, o.ns, clusterId)))!;
  log(
    `converged in ${(convergeMs / 1000).toFixed(1)}s: ${afterCreate.remotes} remote resources, ${afterCreate.duplicates.length} duplicates, ${afterCreate.orphans.length} orphans`,
  );

  const t1 = performance.now();
  let deleted = false;
  const deleting = pool(await listAll(o.kube, o.ns), 16, (x) =>
    persist(() => o.kube.delete(res(pluralOf(x.kind!)), o.ns, x.metadata.name)),
  );
  await Promise.all([crashLoop(Math.floor(o.crashes / 2), () => deleted), restart()]);
  await deleting;
  await waitAll('all objects finalized', async () => (await listAll(o.kube, o.ns)).length === 0, timeoutMs);
  deleted = true;
  const deleteMs = performance.now() - t1;
  o.emu.faults.set({});
  const left = await ownedRemotes(api, clusterId);
  await op.kill();
  const events = JSON.stringify(await o.kube.request('GET', `/api/v1/namespaces/${o.ns}/events`));
  const leaks = [...operatorLogs, events].filter((x) => x.includes(o.emu.apiKey)).length;
  await api.close();
  return {
    n: o.n,
    crashes: o.crashes,
    apiServerRestarts: restarts,
    convergeSeconds: Number((convergeMs / 1000).toFixed(1)),
    deleteSeconds: Number((deleteMs / 1000).toFixed(1)),
    remoteResources: afterCreate.remotes,
    duplicates: afterCreate.duplicates.length,
    orphans: afterCreate.orphans.length,
    remainingAfterDelete: left.length,
    unexpectedExits: [...unexpectedExits],
    logLinesScanned: operatorLogs.length,
    /** starts that met a refusal of the service account's token (kube-apiserver just restarted) and waited it out */
    refusalsWaitedOut: operatorLogs.filter((l) => /answered 40[13] while reading/.test(l)).length,
    secretLeaks: leaks,
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
    const dir = w.clusterDir;
    const result = await faultCrashRun({
      ...w,
      n: Number(values.n),
      crashes: Number(values.crashes),
      seed: Number(values.seed),
      port: 18181,
      log: (s) => console.error(s),
      restartApiserver: dir ? () => restartApiserver(dir) : undefined,
    });
    const { commit, machine, writeResult } = await import('./report.ts');
    writeResult(`fault-crash-${result.n}`, {
      date: new Date().toISOString(),
      commit: commit(),
      machine: machine(),
      entry: process.env.EDGE_OPERATOR_ENTRY,
      ...result,
    });
    const bad =
      result.duplicates ||
      result.orphans ||
      result.remainingAfterDelete ||
      result.unexpectedExits.length ||
      result.secretLeaks;
    if (bad) process.exitCode = 1;
  } finally {
    await w.close();
  }
}
