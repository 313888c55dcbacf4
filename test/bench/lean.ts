// The operator's memory as the image runs it (the bundle, the image's Node flags and
// environment, the chart's heap limit), read from outside (VmRSS in /proc), beside a bare
// Node process started with the same flags in the same run: what the application itself costs.
// At start (informers synced, nothing to manage) and, with --n, with that many objects of every
// kind converged and one resync behind them.
// Usage: npm run bench:lean [-- --n 1000] [--runs 3] [--samples 5] [--name lean-before] [--last-applied]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { imageEnv, imageNodeArgs } from '../support/operator.ts';
import { createAll, metrics, mixedObjects, readyTracker, startOperator } from './lib.ts';
import { commit, machine, previousResult, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '0' },
    samples: { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
    resync: { type: 'string', default: '20s' },
    /** results under another name, e.g. a previous commit's bundle: EDGE_OPERATOR_ENTRY=bundle/before/edgectl.js */
    name: { type: 'string' },
    /** a heap snapshot of the operator once measured, into the directory its Node flags name:
     * EDGE_OPERATOR_NODE_ARGS='--max-old-space-size=384 --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR' */
    'heap-snapshot': { type: 'boolean', default: false },
    /** the objects carry kubectl's last-applied annotation, as `kubectl apply` and Argo CD's default sync write them */
    'last-applied': { type: 'boolean', default: false },
  },
});
const N = Number(values.n);
const SAMPLES = Number(values.samples);
const RUNS = Number(values.runs);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const vmRss = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
/** Anonymous memory (heap, malloc) and file pages (the node binary's and libraries' code touched so far), MiB. */
const rssParts = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return {
    rss_anon: Number((kib('RssAnon') / 1024).toFixed(1)),
    rss_file: Number((kib('RssFile') / 1024).toFixed(1)),
  };
};
/** The median of a few readings a second apart (a collection in between moves RSS by a MiB or two). */
async function rss(pids: number[]): Promise<number[]> {
  const reads: number[][] = pids.map(() => []);
  for (let i = 0; i < SAMPLES; i++) {
    if (i) await sleep(1000);
    for (const [j, p] of pids.entries()) reads[j]!.push(vmRss(p));
  }
  return reads.map((r) => Number(r.sort((a, b) => a - b)[Math.floor(r.length / 2)]!.toFixed(1)));
}

/** Where the operator's RSS goes, as its own metrics say: V8's heap (total and live, per space), and off-heap buffers. */
async function heap(url: string): Promise<Record<string, number | string>> {
  const m = await metrics(url);
  const mib = (k: string) => Number(((m.get(k) ?? 0) / 1048576).toFixed(1));
  const spaces = [...m.keys()].flatMap(
    (k) => /^nodejs_heap_space_size_total_bytes\{space="(\w+)"\}$/.exec(k)?.[1] ?? [],
  );
  return {
    cpu_seconds: Number((m.get('process_cpu_seconds_total') ?? 0).toFixed(2)),
    heap_total: mib('nodejs_heap_size_total_bytes'),
    heap_used: mib('nodejs_heap_size_used_bytes'),
    external: mib('nodejs_external_memory_bytes'),
    ...Object.fromEntries(
      spaces.map((s) => [
        `${s}_total/used`,
        `${mib(`nodejs_heap_space_size_total_bytes{space="${s}"}`)}/${mib(`nodejs_heap_space_size_used_bytes{space="${s}"}`)}`,
      ]),
    ),
  };
}

const w = await benchWorld('lean');
/** The operator and a bare Node beside it: the same binary, flags and environment, running nothing. */
async function startPair() {
  // the API limit lifted as in the convergence benchmark (at the chart's 120 requests a minute,
  // 1,000 creates take 8.3 minutes); memory does not depend on it
  const op = await startOperator(
    w.emu,
    w.kubeconfig,
    w.ns,
    'lean',
    18183,
    ['--resync-period', values.resync, '--api-rate-limit', '1000000'],
    { asPod: true },
  );
  const nodeArgs = [
    ...imageNodeArgs(),
    ...(process.env.EDGE_OPERATOR_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
  ];
  const bare = spawn(process.execPath, [...nodeArgs, '-e', 'setInterval(() => {}, 1 << 30)'], {
    env: { ...process.env, ...imageEnv() },
    stdio: 'ignore',
  });
  return { op, bare, nodeArgs };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
try {
  // a start's RSS depends on where the collector happened to be: several starts, the median
  const starts: { op: number; bare: number }[] = [];
  let pair = await startPair();
  for (let run = 1; ; run++) {
    // started, informers synced and a few seconds idle, as a pod is once Ready
    await sleep(5000);
    const [op, bare] = await rss([pair.op.proc.pid!, pair.bare.pid!]);
    starts.push({ op: op!, bare: bare! });
    if (run >= RUNS) break;
    pair.bare.kill();
    await pair.op.kill();
    pair = await startPair();
  }
  const { op, bare, nodeArgs } = pair;
  const heapAtStart = {
    ...(await heap(pair.op.metricsUrl)),
    ...rssParts(pair.op.proc.pid!),
    ...Object.fromEntries(Object.entries(rssParts(pair.bare.pid!)).map(([k, v]) => [`bare_${k}`, v])),
  };
  const atStart = median(starts.map((s) => s.op));
  const bareNode = median(starts.map((s) => s.bare));
  try {
    let converged: number | undefined;
    let afterResync: number | undefined;
    const heaps: Record<string, Record<string, number | string>> = { at_start: heapAtStart };
    if (N) {
      const tracker = readyTracker(w.kube, w.ns);
      await tracker.synced;
      const objects = mixedObjects(N, w.ns);
      if (values['last-applied'])
        for (const o of objects)
          o.metadata.annotations = {
            ...o.metadata.annotations,
            'kubectl.kubernetes.io/last-applied-configuration': `${JSON.stringify(o)}\n`,
          };
      await createAll(w.kube, objects, 16);
      await tracker.all(N, 30 * 60_000);
      await tracker.allRecorded(N, 10 * 60_000);
      tracker.stop();
      [converged] = await rss([op.proc.pid!]);
      heaps.converged = { ...(await heap(op.metricsUrl)), ...rssParts(op.proc.pid!) };
      await sleep(Number(/^(\d+)s$/.exec(values.resync)?.[1] ?? 20) * 1000 + 2000);
      [afterResync] = await rss([op.proc.pid!]);
      heaps.after_resync = { ...(await heap(op.metricsUrl)), ...rssParts(op.proc.pid!) };
    }
    if (values['heap-snapshot']) {
      // after every reading (writing one doubles the heap for a while); done when its size holds
      const dir = /--diagnostic-dir=(\S+)/.exec(process.env.EDGE_OPERATOR_NODE_ARGS ?? '')?.[1] ?? '.';
      const before = new Set(readdirSync(dir));
      op.proc.kill('SIGUSR2');
      for (let last = -1; ; ) {
        await sleep(2000);
        const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
        const size = file ? statSync(join(dir, file)).size : -1;
        if (file && size === last) break;
        last = size;
      }
    }
    const round = (x: number) => Number(x.toFixed(1));
    const name = values.name ?? (N ? `lean-${N}` : 'lean');
    writeResult(name, {
      date: new Date().toISOString(),
      commit: commit(),
      machine: machine(),
      how: 'VmRSS from /proc: per start the median of readings 1 s apart, 5 s after the start; the median of the starts; the operator as the image and the chart default pod run it (its flags and environment, on a service account token)',
      entry: process.env.EDGE_OPERATOR_ENTRY,
      node_flags: [imageEnv().NODE_OPTIONS, ...nodeArgs].filter(Boolean).join(' '),
      rss_at_start_mib: atStart,
      bare_node_mib: bareNode,
      application_at_start_mib: round(atStart - bareNode),
      heap_mib: heaps,
      starts: starts.map((s) => `${s.op} (bare ${s.bare})`).join(', '),
      ...(N
        ? {
            n: N,
            last_applied_annotation: values['last-applied'],
            rss_converged_mib: converged,
            rss_after_resync_mib: afterResync,
            per_object_kib: round(((afterResync! - atStart) * 1024) / N),
          }
        : {}),
      // the figures this result replaces, beside the new ones
      ...previousResult(name, [
        'rss_at_start_mib',
        'bare_node_mib',
        'rss_converged_mib',
        'rss_after_resync_mib',
      ]),
    });
  } finally {
    bare.kill();
    await op.kill();
  }
} finally {
  await w.close();
}
