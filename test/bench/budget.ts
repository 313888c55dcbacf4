// The account's request budget at scale: the emulator enforces the limit (429 beyond it),
// the operator spends it. Measures convergence against the time the limit allows for the
// writes needed, 429s, how fast a user's spec edit reaches the API while thousands of
// objects converge or are observed, and the idle cost of observation per resync period.
// Usage: npm run bench:budget -- --n 1000 [--rate-limit 120] [--resync 2m] [--idle-periods 1.5]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  allReady,
  createAll,
  kubeWrites,
  metrics,
  mixedObjects,
  pluralOf,
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
    resync: { type: 'string', default: '2m' },
    'idle-periods': { type: 'string', default: '1.5' },
    'edit-every': { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '4' },
    port: { type: 'string', default: '18183' },
  },
});
const N = Number(values.n);
const RATE = Number(values['rate-limit']);
const RESYNC_S = Number(/^(\d+)/.exec(values.resync!)![1]) * (values.resync!.endsWith('m') ? 60 : 1);
const PAGE = 100;
const POLL_MS = N > 2000 ? 10_000 : 2000;

const startedAtCommit = commit();
const w = await benchWorld('budget', { rateLimitPerMinute: RATE });
const counts = () => w.emu.counters.snapshot();
const sum = (by: Record<string, number>, f: (op: string, status: string) => boolean) =>
  Object.entries(by).reduce((n, [k, v]) => {
    const [op, status] = k.split(' ');
    return f(op!, status!) ? n + v : n;
  }, 0);

try {
  const op = await startOperator(w.emu, w.kubeconfig, w.ns, 'bench', Number(values.port), [
    '--api-rate-limit',
    String(RATE),
    '--resync-period',
    values.resync!,
    '--concurrency',
    values.concurrency!,
  ]);
  const objs = mixedObjects(N, w.ns);
  const t0 = performance.now();
  await createAll(w.kube, objs, 16);

  // a user's spec edits while everything converges: time from the patch to the API holding it
  const editLatencies: number[] = [];
  let editing = true;
  let edits = 0;
  const editor = (async () => {
    while (editing) {
      for (let s = 0; editing && s < Number(values['edit-every']); s++)
        await new Promise((r) => setTimeout(r, 1000));
      if (!editing) break;
      const items = (await w.kube.list(res('ippolicies'), w.ns)).items.filter(
        (o) => o.status?.id as string | undefined,
      );
      const o = items[Math.floor(Math.random() * items.length)];
      if (!o) continue;
      const text = `edit ${++edits}`;
      const t = performance.now();
      await w.kube.patch(res('ippolicies'), w.ns, o.metadata.name, { spec: { description: text } });
      for (let i = 0; i < 1200; i++) {
        if (w.emu.store.get('ipPolicies', o.status!.id as string)?.description === text) {
          editLatencies.push(performance.now() - t);
          break;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  })();
  // listing every kind is itself load on the API server: poll less often for large N
  const tw = performance.now();
  const isAllReady = allReady(w.kube, w.ns, N);
  while (!(await isAllReady().catch(() => false))) await new Promise((r) => setTimeout(r, POLL_MS));
  const convergeMs = performance.now() - tw;
  const operatorS = (performance.now() - t0) / 1000;
  const converged = counts();
  const m1 = await metrics(op.metricsUrl);

  // idle: every object observed, nothing changes (the editor keeps editing: users still wait behind nothing)
  w.emu.counters.reset();
  const idleT0 = performance.now();
  await new Promise((r) => setTimeout(r, Number(values['idle-periods']) * RESYNC_S * 1000));
  editing = false;
  await editor;
  const idleS = (performance.now() - idleT0) / 1000;
  const idle = counts();
  const m2 = await metrics(op.metricsUrl);
  if (process.env.EDGE_BENCH_DUMP) writeFileSync(process.env.EDGE_BENCH_DUMP, op.logs.join('\n'));
  await op.kill();

  const writes = sum(converged, (o, s) => /\.(create|update|put|delete)$/.test(o) && s.startsWith('2'));
  const total = sum(converged, () => true);
  const throttled = sum(converged, (_o, s) => s === '429');
  const allowedS = (writes / RATE) * 60;
  const periods = idleS / RESYNC_S;
  const idleCalls = sum(idle, (o) => !/^ipPolicies\.update$/.test(o) && !/^tunnel/.test(o)) - 0;
  const idleLists = sum(idle, (o) => o.endsWith('.list') && !o.startsWith('tunnel'));
  const idleGets = sum(idle, (o) => o.endsWith('.get'));
  const listsPerPeriod = idleLists / periods;
  const q = (xs: number[], p: number) =>
    Math.round([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0);
  // writes to the objects themselves: Events and Lease renewals are counted apart
  const kube = kubeWrites(m1);
  // observation costs one request per page of a kind: with half the budget kept for writes,
  // the largest N kept in sync at the default 10-minute resync
  const budgetPer10m = RATE * 10;
  const result = {
    date: new Date().toISOString(),
    commit: startedAtCommit,
    machine: machine(),
    n: N,
    rate_limit_per_minute: RATE,
    resync: values.resync,
    converge: {
      seconds: Number(operatorS.toFixed(1)),
      wait_after_apply_seconds: Number((convergeMs / 1000).toFixed(1)),
      api_writes: writes,
      seconds_the_limit_allows_for_them: Number(allowedS.toFixed(1)),
      ratio: Number((operatorS / allowedS).toFixed(3)),
      api_requests: total,
      throttled_429: throttled,
      throttled_share: Number((throttled / Math.max(1, total)).toFixed(4)),
      api_requests_by_operation: converged,
      kube_writes_per_object: Number((kube.objects / N).toFixed(2)),
      kube_events: kube.events,
      kube_lease_renewals: kube.leases,
    },
    spec_edit_to_api_ms: {
      edits: editLatencies.length,
      p50: q(editLatencies, 0.5),
      p99: q(editLatencies, 0.99),
      max: Math.round(Math.max(0, ...editLatencies)),
      all: editLatencies.map(Math.round),
      // where an edit's time goes: waiting in the work queue, and waiting for budget
      urgent_queue_wait_mean_ms: Math.round(
        (1000 *
          sumMetric(m2, 'edge_operator_queue_wait_seconds_sum', (l) => l.includes('priority="urgent"'))) /
          Math.max(
            1,
            sumMetric(m2, 'edge_operator_queue_wait_seconds_count', (l) => l.includes('priority="urgent"')),
          ),
      ),
      urgent_queue_waits: sumMetric(m2, 'edge_operator_queue_wait_seconds_count', (l) =>
        l.includes('priority="urgent"'),
      ),
      budget_wait_seconds_by_priority: Object.fromEntries(
        ['urgent', 'high', 'low'].map((p) => [
          p,
          Number(
            sumMetric(m2, 'edge_api_budget_wait_seconds', (l) => l.includes(`priority="${p}"`)).toFixed(1),
          ),
        ]),
      ),
    },
    idle: {
      seconds: Number(idleS.toFixed(1)),
      periods: Number(periods.toFixed(2)),
      requests: idleCalls,
      lists_per_period: Number(listsPerPeriod.toFixed(1)),
      gets: idleGets,
      requests_by_operation: idle,
      lists_per_period_expected: `ceil(objects of each kind / ${PAGE}) per kind with objects`,
      share_of_budget_at_10m_resync: Number((listsPerPeriod / budgetPer10m).toFixed(4)),
    },
    sizing: {
      page_size: PAGE,
      requests_per_10m_period: budgetPer10m,
      largest_n_with_half_the_budget_for_writes: (budgetPer10m / 2) * PAGE,
      rule: `observation costs about ceil(objects / ${PAGE}) requests per kind per resync period; at R requests a minute and a resync of P minutes, keep objects <= R * P / 2 * ${PAGE}`,
    },
    memory: {
      rss_mib: Math.round((m2.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
    },
    kinds: [...new Set(objs.map((o) => pluralOf(o.kind!)))].length,
  };
  writeResult(`budget-${N}`, result);
} finally {
  await w.close();
}
