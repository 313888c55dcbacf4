// What tearing down costs: N IP policies with one rule each (the operator's own objects),
// created and Ready, then every object deleted at once, as `kubectl delete` of both kinds
// does, in both orders (policies first, rules first). Counts the operator's API requests by
// operation and status while the objects go, per deleted object, beside what creating them cost.
// Usage: npm run bench:deletion -- --n 1000   (n pairs: 2n objects)
import { parseArgs } from 'node:util';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { apiRequests, requestsSince } from '../support/operator.ts';
import {
  clientFor,
  createAll,
  invariants,
  kubeWrites,
  metrics,
  policiesWithRules,
  pool,
  readyTracker,
  res,
  startOperator,
} from './lib.ts';
import { commit, machine, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '8' },
  },
});
const PAIRS = Number(values.n);
const CONCURRENCY = Number(values.concurrency);

const w = await benchWorld('del');
const api = clientFor(w.emu);
const P = res('ippolicies');
const R = res('ippolicyrules');

const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
const count = async (ns: string) =>
  (await w.kube.list(P, ns)).items.length + (await w.kube.list(R, ns)).items.length;

const op = await startOperator(w.emu, w.kubeconfig, w.ns, 'bench-del', 18183, [
  '--api-rate-limit',
  '1000000',
  '--concurrency',
  String(CONCURRENCY),
  // one namespace per order; the operator watches them all
  '--namespaces',
  `${w.ns}-a,${w.ns}-b`,
]);
try {
  const rounds: Record<string, unknown>[] = [];
  for (const [suffix, order] of [
    ['a', 'policies first'],
    ['b', 'rules first'],
  ] as const) {
    const ns = `${w.ns}-${suffix}`;
    await w.kube.create({ group: '', version: 'v1', plural: 'namespaces' }, undefined, {
      metadata: { name: ns },
    });
    const objs = policiesWithRules(2 * PAIRS, ns);
    const tracker = readyTracker(w.kube, ns);
    await tracker.synced;
    const before = await apiRequests(op.metricsUrl);
    const t0 = performance.now();
    await createAll(w.kube, objs, 16);
    await tracker.all(objs.length, 30 * 60_000);
    const createMs = performance.now() - t0;
    // the id annotations follow when idle: deletion starts from the settled state
    await tracker.allRecorded(objs.length, 10 * 60_000);
    tracker.stop();
    const m1 = await metrics(op.metricsUrl);
    const afterCreate = await apiRequests(op.metricsUrl);
    const created = requestsSince(afterCreate, before);
    const writes1 = kubeWrites(m1);

    // every object at once, one kind after the other, as `kubectl delete ippolicies,ippolicyrules --all`
    const kinds: [typeof P, KubeObject[]][] = [
      [P, objs.filter((o) => o.kind === 'IPPolicy')],
      [R, objs.filter((o) => o.kind === 'IPPolicyRule')],
    ];
    if (order === 'rules first') kinds.reverse();
    const t1 = performance.now();
    for (const [r, list] of kinds)
      await pool(list, 16, (o) => w.kube.delete(r, ns, o.metadata.name).catch(() => {}));
    for (;;) {
      if ((await count(ns)) === 0) break;
      if (performance.now() - t1 > 30 * 60_000) throw new Error(`objects left in ${ns} after 30 minutes`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const deleteMs = performance.now() - t1;
    // late requests (a retry after the last object went) count too
    await new Promise((r) => setTimeout(r, 2000));
    const m2 = await metrics(op.metricsUrl);
    const deleted = requestsSince(await apiRequests(op.metricsUrl), afterCreate);
    const writes2 = kubeWrites(m2);
    const left = await invariants(w.kube, api, ns, 'bench-del');
    rounds.push({
      order,
      objects: objs.length,
      create_seconds: Number((createMs / 1000).toFixed(1)),
      create_api_requests: total(created),
      create_api_requests_per_object: Number((total(created) / objs.length).toFixed(3)),
      create_api_requests_by_operation: created,
      delete_seconds: Number((deleteMs / 1000).toFixed(1)),
      delete_api_requests: total(deleted),
      delete_api_requests_per_object: Number((total(deleted) / objs.length).toFixed(3)),
      delete_api_requests_by_operation: deleted,
      delete_kube_writes_per_object: Number(((writes2.objects - writes1.objects) / objs.length).toFixed(2)),
      delete_events_per_object: Number(((writes2.events - writes1.events) / objs.length).toFixed(2)),
      remote_resources_left: left.remotes,
    });
  }
  const m = await metrics(op.metricsUrl);
  writeResult(`deletion-${PAIRS}`, {
    date: new Date().toISOString(),
    commit: commit(),
    machine: machine(),
    pairs: PAIRS,
    concurrency: CONCURRENCY,
    entry: process.env.EDGE_OPERATOR_ENTRY,
    rounds,
    rss_mib: Math.round((m.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
  });
} finally {
  await op.kill();
  await api.close();
  await w.close();
}
