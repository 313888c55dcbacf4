// Fair share of one account's budget between namespaces. The emulator enforces the limit; namespace
// `bulk` applies N objects of all kinds; 5 s after that apply starts, namespace `small` applies one
// IP policy and namespace `edit` edits one it already has. Measures how long each waits while the
// bulk converges, and the bulk's convergence against the time the limit allows (as bench:budget).
// Then `bulk` deletes its N objects (urgent work) and, 5 s later, `small` applies one more: how
// long it waits while the deletes go on, and the deletes against the time the limit allows.
// Then, with no limit, the operator's CPU to converge the same N objects in 1 and in --spread
// namespaces (fair queuing must not cost more per request as namespaces grow).
// Usage: npm run bench:fairness -- --n 1000 [--rate-limit 120] [--spread 100] [--no-cpu]
import { parseArgs } from 'node:util';
import { startEmulator } from '../../src/emulator/server.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/constants.ts';
import { obj, ready } from '../support/operator.ts';
import {
  createAll,
  kubeWrites,
  listAll,
  metrics,
  mixedObjects,
  pluralOf,
  pool,
  readyTracker,
  res,
  startOperator,
  sumMetric,
} from './lib.ts';
import { commit, machine, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    'rate-limit': { type: 'string', default: '120' },
    spread: { type: 'string', default: '100' },
    'no-cpu': { type: 'boolean', default: false },
    'no-fair': { type: 'boolean', default: false },
    port: { type: 'string', default: '18184' },
  },
});
const N = Number(values.n);
const RATE = Number(values['rate-limit']);
const SPREAD = Number(values.spread);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const startedAtCommit = commit();
const P = res('ippolicies');
const NS = { group: '', version: 'v1', plural: 'namespaces' };

const w = await benchWorld('fair', { rateLimitPerMinute: RATE });
const sum = (by: Record<string, number>, f: (op: string, status: string) => boolean) =>
  Object.entries(by).reduce((n, [k, v]) => {
    const [op, status] = k.split(' ');
    return f(op!, status!) ? n + v : n;
  }, 0);
const namespace = async (name: string) => {
  await w.kube.create(NS, undefined, { metadata: { name } });
  return name;
};
const allReadyIn = async (namespaces: string[], n: number) => {
  let count = 0;
  for (const ns of namespaces) {
    const items = await listAll(w.kube, ns);
    if (!items.every((o) => ready(o) && o.status?.observedGeneration === o.metadata.generation)) return false;
    count += items.length;
  }
  return count === n;
};
/** Every object of an installation Ready, from one cluster-wide list per kind (not one per namespace). */
const allReadyLabelled = async (instance: string, n: number) => {
  let count = 0;
  for (const b of BINDINGS) {
    const { items } = await w.kube.list(res(b.plural), undefined, {
      labelSelector: `${INSTANCE_LABEL}=${instance}`,
    });
    if (!items.every((o) => ready(o) && o.status?.observedGeneration === o.metadata.generation)) return false;
    count += items.length;
  }
  return count === n;
};
const cpuSeconds = async (url: string) => (await metrics(url)).get('process_cpu_seconds_total') ?? 0;

async function fairPhase() {
  // --- fair share under the account's limit
  const bulk = w.ns;
  const small = await namespace(`${w.ns}-small`);
  const edit = await namespace(`${w.ns}-edit`);
  const op = await startOperator(w.emu, w.kubeconfig, bulk, 'bench', Number(values.port), [
    '--api-rate-limit',
    String(RATE),
    '--namespaces',
    [bulk, small, edit].join(','),
  ]);
  await createAll(w.kube, [obj('IPPolicy', edit, 'team', { description: 'v1' })]);
  await sleep(3000);
  w.emu.counters.reset();
  const smallReady = readyTracker(w.kube, small);
  await smallReady.synced;
  const objs = mixedObjects(N, bulk);
  const t0 = performance.now();
  const applying = createAll(w.kube, objs, 16);
  await sleep(5000);
  const tSmall = performance.now();
  await createAll(w.kube, [obj('IPPolicy', small, 'one', { description: 'small team' })]);
  const smallDone = smallReady.all(1, 600_000).then(() => smallReady.readyAt.values().next().value! - tSmall);
  const teamId = (await w.kube.get(P, edit, 'team')).status?.id as string;
  const tEdit = performance.now();
  await w.kube.patch(P, edit, 'team', { spec: { description: 'edited under load' } });
  let editMs = Number.NaN;
  for (let i = 0; i < 24_000 && Number.isNaN(editMs); i++) {
    if (w.emu.store.get('ipPolicies', teamId)?.description === 'edited under load')
      editMs = performance.now() - tEdit;
    else await sleep(25);
  }
  const smallMs = await smallDone;
  smallReady.stop();
  await applying;
  while (!(await allReadyIn([bulk], N).catch(() => false))) await sleep(2000);
  const convergeS = (performance.now() - t0) / 1000;
  const converged = w.emu.counters.snapshot();
  const m = await metrics(op.metricsUrl);

  // --- the bulk namespace deletes everything (deletes are urgent); 5 s later `small` applies
  // one more object, which takes creates' share instead of waiting for the last delete
  w.emu.counters.reset();
  const smallAgain = readyTracker(w.kube, small);
  await smallAgain.synced;
  const td = performance.now();
  const deleting = pool(objs, 16, (o) => w.kube.delete(res(pluralOf(o.kind!)), bulk, o.metadata.name));
  await sleep(5000);
  const tTwo = performance.now();
  await createAll(w.kube, [obj('IPPolicy', small, 'two', { description: 'small team, again' })]);
  await smallAgain.all(2, 600_000);
  const twoMs = smallAgain.readyAt.get('IPPolicy/two')! - tTwo;
  const bulkLeftWhenTwoReady = (await listAll(w.kube, bulk)).length;
  smallAgain.stop();
  await deleting;
  while ((await listAll(w.kube, bulk).catch(() => [1])).length) await sleep(2000);
  const deleteS = (performance.now() - td) / 1000;
  const deleted = w.emu.counters.snapshot();
  const deletes = sum(deleted, (o, s) => o.endsWith('.delete') && s.startsWith('2'));
  const md = await metrics(op.metricsUrl);
  await op.kill();
  const writes = sum(converged, (o, s) => /\.(create|update|put|delete)$/.test(o) && s.startsWith('2'));
  const allowedS = (writes / RATE) * 60;
  const kube = kubeWrites(m);

  writeResult(`fairness-${N}`, {
    date: new Date().toISOString(),
    commit: startedAtCommit,
    machine: machine(),
    n: N,
    rate_limit_per_minute: RATE,
    small_namespace_one_object_ready_ms: Math.round(smallMs),
    other_namespace_edit_to_api_ms: Math.round(editMs),
    bulk: {
      seconds: Number(convergeS.toFixed(1)),
      api_writes: writes,
      seconds_the_limit_allows_for_them: Number(allowedS.toFixed(1)),
      ratio: Number((convergeS / allowedS).toFixed(3)),
      api_requests: sum(converged, () => true),
      throttled_429: sum(converged, (_o, s) => s === '429'),
      kube_writes_per_object: Number((kube.objects / N).toFixed(2)),
      budget_wait_seconds_by_priority: Object.fromEntries(
        ['urgent', 'high', 'low'].map((p) => [
          p,
          Number(
            sumMetric(m, 'edge_api_budget_wait_seconds', (l) => l.includes(`priority="${p}"`)).toFixed(1),
          ),
        ]),
      ),
      rss_mib: Math.round((m.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
    },
    small_namespace_one_object_ready_during_bulk_delete_ms: Math.round(twoMs),
    bulk_objects_left_when_it_was_ready: bulkLeftWhenTwoReady,
    bulk_delete: {
      seconds: Number(deleteS.toFixed(1)),
      api_deletes: deletes,
      seconds_the_limit_allows_for_them: Number(((deletes / RATE) * 60).toFixed(1)),
      ratio: Number((deleteS / ((deletes / RATE) * 60)).toFixed(3)),
      api_requests: sum(deleted, () => true),
      throttled_429: sum(deleted, (_o, s) => s === '429'),
      kube_writes_per_object: Number(((kubeWrites(md).objects - kube.objects) / N).toFixed(2)),
      rss_mib: Math.round((md.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
    },
  });
}

try {
  if (!values['no-fair']) await fairPhase();

  // --- CPU with no limit: N objects in 1 namespace, then in SPREAD namespaces, watched
  // cluster-wide (a watch per namespace would measure the watches), each phase's objects
  // labelled for an installation of its own so that no phase sees another's
  const cpu: Record<string, unknown> = {};
  // an emulator without a limit of its own: the CPU, not the budget, is measured
  const free = values['no-cpu'] ? undefined : await startEmulator({});
  if (free)
    for (const spread of [1, SPREAD]) {
      const prefix = `${w.ns}-cpu${spread}`;
      // this run's installation alone (an earlier run's objects stay in the bench cluster)
      const instance = prefix;
      const spaces = await Promise.all(Array.from({ length: spread }, (_, i) => namespace(`${prefix}-${i}`)));
      const operator = await startOperator(
        free,
        w.kubeconfig,
        spaces[0]!,
        `cpu${spread}`,
        Number(values.port) + spread,
        ['--api-rate-limit', '1000000', '--namespaces', '', '--instance', instance],
      );
      const per = Math.ceil(N / spread);
      const all = spaces.flatMap((ns, i) =>
        mixedObjects(Math.min(per, N - i * per), ns, { restrictions: false }),
      );
      for (const o of all) o.metadata.labels = { ...o.metadata.labels, [INSTANCE_LABEL]: instance };
      const c0 = await cpuSeconds(operator.metricsUrl);
      const t = performance.now();
      await createAll(w.kube, all, 16);
      while (!(await allReadyLabelled(instance, all.length).catch(() => false))) await sleep(2000);
      const seconds = (performance.now() - t) / 1000;
      const cpuS = (await cpuSeconds(operator.metricsUrl)) - c0;
      await operator.kill();
      cpu[`namespaces_${spread}`] = {
        objects: all.length,
        seconds: Number(seconds.toFixed(1)),
        operator_cpu_seconds: Number(cpuS.toFixed(2)),
      };
    }

  if (free) {
    await free.close();
    writeResult(`fairness-cpu-${N}`, {
      date: new Date().toISOString(),
      commit: startedAtCommit,
      machine: machine(),
      n: N,
      what: 'operator CPU to converge N objects of all kinds with no API limit, in 1 namespace and in --spread namespaces (cluster-wide watch)',
      ...cpu,
    });
  }
} finally {
  await w.close();
}
