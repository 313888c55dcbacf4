// Convergence, API economy, idle cost, latency and memory of the operator against the local
// control plane and the emulator, compared with a plain loop doing the minimal work per
// object (the same API create, after the objects it references, the finalizer patch, the
// status patch) at the same concurrency.
// Usage: npm run bench:convergence -- --n 1000 [--idle-seconds 60] [--resync 20s]
import { parseArgs } from 'node:util';
import { CREATE_PENDING_ANNOTATION, FINALIZER } from '../../src/operator/kinds/crd-schema.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { imageEnv, imageNodeArgs } from '../support/operator.ts';
import {
  clientFor,
  createAll,
  kubeWrites,
  metrics,
  mixedObjects,
  pluralOf,
  policiesWithRules,
  pool,
  readyTracker,
  res,
  startOperator,
  sumMetric,
} from './lib.ts';
import { commit, machine, previousResult, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '8' },
    'idle-seconds': { type: 'string', default: '60' },
    resync: { type: 'string', default: '20s' },
    'no-loop': { type: 'boolean', default: false },
    /** objects of a plain loop run before anything is measured */
    warmup: { type: 'string', default: '200' },
    /** mixed: every kind, references between them; policy-rule: IP policies with one rule each */
    objects: { type: 'string', default: 'mixed' },
  },
});
const N = Number(values.n);
const CONCURRENCY = Number(values.concurrency);
const IDLE_S = Number(values['idle-seconds']);
const WARMUP = Number(values.warmup);

const w = await benchWorld('conv');
const api = clientFor(w.emu);
try {
  // the plain loops leave the account's four IP restrictions (one per type) to the operator
  const objectsFor = (n: number, ns: string, operator = false) =>
    values.objects === 'policy-rule'
      ? policiesWithRules(n, ns)
      : mixedObjects(n, ns, { restrictions: operator });
  // --- plain loops, same concurrency, same objects in namespaces nobody watches: the minimal
  // work (API create, finalizer patch, status patch), and the same Kubernetes writes as the
  // operator makes before an object is Ready (the create-pending mark with the finalizer,
  // status) plus its Event; the id annotation it writes later, when idle, is left out
  const loop = async (suffix: string, sameWrites: boolean, n = N): Promise<number> => {
    const ns2 = `${w.ns}-${suffix}`;
    await w.kube.create({ group: '', version: 'v1', plural: 'namespaces' }, undefined, {
      metadata: { name: ns2 },
    });
    const loopObjs = objectsFor(n, ns2);
    // the same watch load as while the operator was measured
    const loopTracker = readyTracker(w.kube, ns2);
    await loopTracker.synced;
    const t1 = performance.now();
    let events: Promise<unknown> = Promise.resolve();
    // every object's remote id, for the objects that reference it
    const resolveId = new Map<string, (id: string) => void>();
    const ids = new Map(
      loopObjs.map((o) => {
        const k = `${o.kind}/${o.metadata.name}`;
        return [k, new Promise<string>((r) => resolveId.set(k, r))];
      }),
    );
    await createAll(w.kube, loopObjs, 16);
    await pool(loopObjs, CONCURRENCY, async (o) => {
      const r = res(pluralOf(o.kind!));
      const name = o.metadata.name;
      await w.kube.patch(r, ns2, name, {
        metadata: {
          finalizers: [FINALIZER],
          ...(sameWrites ? { annotations: { [CREATE_PENDING_ANNOTATION]: new Date().toISOString() } } : {}),
        },
      });
      // the operator's API work: the create body its binding makes (modules inline), after
      // the objects it references have their ids, as the API requires
      const b = BINDINGS.find((x) => x.kind === o.kind)!;
      const spec = o.spec ?? {};
      const refIds = new Map(
        await Promise.all(
          (b.references?.(spec) ?? []).map(
            async (r) => [`${r.kind}/${r.name}`, await ids.get(`${r.kind}/${r.name}`)!] as const,
          ),
        ),
      );
      const ref = (kind: string, refName: string) => refIds.get(`${kind}/${refName}`)!;
      const modules = Object.fromEntries(
        (b.modules ?? [])
          .map((m) => [m.name, m.desired(spec, ref, () => '')] as const)
          .filter(([, body]) => body),
      );
      const created = await b.api.create(api, {
        ...b.desired(spec, ref),
        ...modules,
        metadata: `${o.kind}/${name}`,
      } as never);
      resolveId.get(`${o.kind}/${name}`)!(created.id);
      // Events one at a time, as the operator sends them
      if (sameWrites)
        events = events
          .then(() =>
            w.kube.create({ group: '', version: 'v1', plural: 'events' }, ns2, {
              metadata: { generateName: `${name}.`, namespace: ns2 },
              involvedObject: { kind: o.kind, name, namespace: ns2, apiVersion: o.apiVersion },
              type: 'Normal',
              reason: 'Created',
              message: `created ${created.id}`,
              source: { component: 'bench-loop' },
            }),
          )
          .catch(() => {});
      await w.kube.patch(
        r,
        ns2,
        name,
        {
          status: {
            id: created.id,
            observedGeneration: 1,
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'Synced',
                message: '',
                lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              },
            ],
          },
        },
        'merge',
        'status',
      );
    });
    await loopTracker.all(n, 30 * 60_000);
    loopTracker.stop();
    return performance.now() - t1;
  };
  // --- warm-up: the API server, etcd and the emulator see the same kind of work once before
  // anything is measured (the first phase was otherwise the slower for being first)
  if (WARMUP) await loop('warmup', true, WARMUP);

  // --- the operator
  const op = await startOperator(
    w.emu,
    w.kubeconfig,
    w.ns,
    'bench',
    18182,
    [
      '--api-rate-limit',
      '1000000',
      '--concurrency',
      String(CONCURRENCY),
      '--resync-period',
      String(values.resync),
    ],
    { asPod: true },
  );
  // started, informers synced, nothing to manage yet
  await new Promise((r) => setTimeout(r, 3000));
  const m0 = await metrics(op.metricsUrl);
  const rssAtStart = m0.get('process_resident_memory_bytes') ?? 0;
  const cpuAtStart = m0.get('process_cpu_seconds_total') ?? 0;
  const objs = objectsFor(N, w.ns, true);
  const tracker = readyTracker(w.kube, w.ns);
  await tracker.synced;
  const t0 = performance.now();
  await createAll(w.kube, objs, 16);
  const applied = performance.now();
  await tracker.all(N, 30 * 60_000);
  const operatorMs = performance.now() - t0;
  const convergeMs = performance.now() - applied;
  const atReady = await metrics(op.metricsUrl);
  // the id annotations follow once the operator is idle: writes per object count them
  await tracker.allRecorded(N, 10 * 60_000);
  const recordedMs = performance.now() - t0;
  tracker.stop();

  /** API requests per operation (summed over accounts), less those counted in `before`. */
  const byOperationOf = (m: Map<string, number>, before: Record<string, number> = {}) => {
    const by: Record<string, number> = {};
    for (const [k, v] of m) {
      const op = k.startsWith('edge_api_requests_total{') ? /operation="([^"]+)"/.exec(k)?.[1] : undefined;
      if (op) by[op] = (by[op] ?? 0) + v;
    }
    for (const [op, v] of Object.entries(by)) if (v === before[op]) delete by[op];
    for (const op of Object.keys(by)) by[op]! -= before[op] ?? 0;
    return by;
  };
  const m1 = await metrics(op.metricsUrl);
  const byOperation = byOperationOf(m1);
  const apiCalls = Object.values(byOperation).reduce((a, b) => a + b, 0);
  // how the reconciles ended, per kind (a requeue or an error is time spent twice)
  const reconciles: Record<string, number> = {};
  for (const [k, v] of atReady) {
    const m = /^controller_runtime_reconcile_total\{controller="([^"]+)",result="([^"]+)"\}$/.exec(k);
    if (m && v) reconciles[`${m[1]} ${m[2]}`] = v;
  }
  // writes to the objects themselves: Events are counted apart
  const objectWrites = (m: Map<string, number>) => kubeWrites(m).objects;
  const apiTime = sumMetric(m1, 'edge_api_request_duration_seconds_sum') / N;
  const latencies = [...tracker.readyAt.values()].map((t) => t - t0).sort((a, b) => a - b);
  const q = (p: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0);
  const rss = m1.get('process_resident_memory_bytes') ?? 0;
  const heap = sumMetric(m1, 'nodejs_heap_size_used_bytes') || (m1.get('nodejs_heap_size_used_bytes') ?? 0);

  // --- idle: nothing changes; what does a resync period cost?
  const idleStartApi = apiCalls;
  const idleStartKube = kubeWrites(m1);
  const idleStartObjects = objectWrites(m1);
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const m2 = await metrics(op.metricsUrl);
  let idleApi = -idleStartApi;
  for (const [k, v] of m2) if (k.startsWith('edge_api_requests_total{')) idleApi += v;
  const idleEnd = kubeWrites(m2);
  const idleKube = {
    objects: idleEnd.objects - idleStartObjects,
    events: idleEnd.events - idleStartKube.events,
    lease_renewals: idleEnd.leases - idleStartKube.leases,
  };
  const resyncS =
    Number(/^(\d+)/.exec(String(values.resync))![1]) * (String(values.resync).endsWith('m') ? 60 : 1);
  const periods = IDLE_S / resyncS;
  await op.kill();

  const loopMs = values['no-loop'] ? Number.NaN : await loop('loop', false);
  const sameWritesMs = values['no-loop'] ? Number.NaN : await loop('same', true);

  const result = {
    date: new Date().toISOString(),
    commit: commit(),
    machine: machine(),
    n: N,
    warmup_objects: WARMUP,
    objects: values.objects,
    concurrency: CONCURRENCY,
    operator_seconds: Number((operatorMs / 1000).toFixed(1)),
    plain_loop_seconds: Number((loopMs / 1000).toFixed(1)),
    ratio: Number((operatorMs / loopMs).toFixed(2)),
    same_writes_loop_seconds: Number((sameWritesMs / 1000).toFixed(1)),
    ratio_to_same_writes: Number((operatorMs / sameWritesMs).toFixed(2)),
    api_calls_per_object: Number((apiCalls / N).toFixed(2)),
    api_calls_by_operation: byOperation,
    kube_writes_per_object: Number((objectWrites(m1) / N).toFixed(2)),
    reconciles_until_ready: reconciles,
    operator_cpu_seconds_until_ready: Number(
      ((atReady.get('process_cpu_seconds_total') ?? 0) - cpuAtStart).toFixed(1),
    ),
    kube_writes_per_object_until_ready: Number((objectWrites(atReady) / N).toFixed(2)),
    id_annotations_done_seconds: Number((recordedMs / 1000).toFixed(1)),
    idle: {
      seconds: IDLE_S,
      resync: values.resync,
      api_calls_per_object_per_resync: periods ? Number((idleApi / N / periods).toFixed(3)) : null,
      // which requests a resync costs: the kinds' lists, page by page
      api_calls_by_operation: byOperationOf(m2, byOperation),
      kube_writes: idleKube,
    },
    create_to_ready_ms: {
      p50: q(0.5),
      p95: q(0.95),
      p99: q(0.99),
      api_time_per_object_ms: Math.round(apiTime * 1000),
      note: `from one watch per kind, from the start of the apply; API time is the mean per object, subtract it to see the operator and Kubernetes share`,
    },
    memory: {
      rss_at_start_mib: Math.round(rssAtStart / 2 ** 20),
      rss_mib: Math.round(rss / 2 ** 20),
      // the target's measure: after convergence and the idle phase (at least one resync)
      rss_after_idle_mib: Math.round((m2.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
      entry: process.env.EDGE_OPERATOR_ENTRY,
      // the image's flags and environment go with the bundle only (test/support/operator.ts)
      node_flags: [
        ...(process.env.EDGE_OPERATOR_ENTRY?.startsWith('bundle/')
          ? [imageEnv().NODE_OPTIONS, ...imageNodeArgs()]
          : []),
        process.env.EDGE_OPERATOR_NODE_ARGS,
      ]
        .filter(Boolean)
        .join(' '),
      heap_used_mib: Math.round(heap / 2 ** 20),
      objects_cached: N,
    },
    converge_wait_seconds: Number((convergeMs / 1000).toFixed(1)),
  };
  const name = values.objects === 'mixed' ? `convergence-${N}` : `convergence-${values.objects}-${N}`;
  writeResult(name, {
    ...result,
    // the figures this result replaces, beside the new ones
    ...previousResult(name, [
      'ratio',
      'api_calls_per_object',
      'kube_writes_per_object',
      'operator_cpu_seconds_until_ready',
      'idle.api_calls_per_object_per_resync',
      'memory.rss_at_start_mib',
      'memory.rss_mib',
      'memory.rss_after_idle_mib',
    ]),
  });
} finally {
  await api.close();
  await w.close();
}
