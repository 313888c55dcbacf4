// Many namespaces on one account, backed up. --namespaces namespaces of --per objects each, all on
// the installation's account, with the emulator enforcing --rate-limit requests a minute: a backlog
// of many minutes builds (1000 x 10 IP policies at 120 a minute is 83 minutes of creates). Once it
// is applied and --settle seconds have passed, measures over --window seconds what the backed-up
// operator costs: its CPU and RSS (read from /proc), the API requests a minute the emulator saw
// (and its 429s), the operator's Kubernetes writes. Then one more namespace applies ONE object:
// the time until it is Ready (the goal is 2 s; reported, not asserted). Then stops: the backlog is
// not waited for. The objects are labelled for an installation of the run's own (cluster-wide
// watch) and removed after each run (finalizers stripped), so the next run sees the same world.
// --rev REV[,REV2]: each revision's operator, one after the other, each in a fresh world of the
// same kind (its own emulator, namespaces, installation): a git worktree of the revision in
// /tmp/bench-wt-<sha> (with this checkout's node_modules), bundled as the image is; one result.
// Usage: npm run bench:namespaces -- [--namespaces 1000] [--per 10] [--rate-limit 120]
//          [--window 60] [--settle 30] [--objects ip-policy|mixed] [--rev REV[,REV2]] [--label L]
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../src/localcluster/cluster.ts';
import { apply, readManifests } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/constants.ts';
import type { Kube, KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { NAMESPACES, obj } from '../support/operator.ts';
import {
  createAll,
  kubeWrites,
  metrics,
  mixedObjects,
  persist,
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
    namespaces: { type: 'string', default: '1000' },
    per: { type: 'string', default: '10' },
    'rate-limit': { type: 'string', default: '120' },
    /** seconds measured, once the backlog is applied and --settle seconds have passed */
    window: { type: 'string', default: '60' },
    settle: { type: 'string', default: '30' },
    /** ip-policy: IP policies (one create each); mixed: every kind, references inside groups of ten */
    objects: { type: 'string', default: 'ip-policy' },
    /** revisions to compare, one after the other (default: this checkout as it is) */
    rev: { type: 'string' },
    /** the result's name: namespaces-<N>-<label> (default: the commits measured) */
    label: { type: 'string' },
    /** how long the extra namespace's object may take before it is reported as not Ready */
    'ready-timeout': { type: 'string', default: '120' },
    /** the operator on the kubeconfig's admin certificate instead of a service account (as the chart's pod) */
    'no-pod': { type: 'boolean', default: false },
    /** leave the objects (with their finalizers) and the worktrees behind */
    keep: { type: 'boolean', default: false },
    port: { type: 'string', default: '18186' },
  },
});
const N = Number(values.namespaces);
const PER = Number(values.per);
const RATE = Number(values['rate-limit']);
const WINDOW_S = Number(values.window);
const SETTLE_S = Number(values.settle);
const READY_TIMEOUT_S = Number(values['ready-timeout']);
const GOAL_MS = 2000;
if (![N, PER, RATE, WINDOW_S, SETTLE_S, READY_TIMEOUT_S].every((x) => Number.isFinite(x) && x >= 0))
  throw new Error('--namespaces, --per, --rate-limit, --window, --settle, --ready-timeout: numbers');
if (!['ip-policy', 'mixed'].includes(values.objects!)) throw new Error('--objects: ip-policy or mixed');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** utime + stime of a process, in seconds (clock ticks of 1/100 s, Linux's USER_HZ). */
const cpuOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const rssMib = (pid: number) =>
  Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

function objectsFor(ns: string, n: number, instance: string): KubeObject[] {
  const objs =
    values.objects === 'mixed'
      ? mixedObjects(n, ns, { restrictions: false })
      : Array.from({ length: n }, (_, i) => obj('IPPolicy', ns, `p${i}`, { description: `${ns}/${i}` }));
  for (const o of objs) o.metadata.labels = { ...o.metadata.labels, [INSTANCE_LABEL]: instance };
  return objs;
}

/** Every object of an installation, cluster-wide, from one paged list per kind. */
async function labelled(kube: Kube, instance: string): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const b of BINDINGS) {
    let cont: string | undefined;
    do {
      const page = await kube.list(res(b.plural), undefined, {
        labelSelector: `${INSTANCE_LABEL}=${instance}`,
        limit: 500,
        continue: cont,
      });
      out.push(...page.items.map((o) => ({ ...o, kind: b.kind })));
      cont = page.metadata.continue || undefined;
    } while (cont);
  }
  return out;
}

/** Removes an installation's objects with the operator stopped: finalizers dropped, then deleted. */
async function removeAll(kube: Kube, instance: string): Promise<number> {
  const objs = await labelled(kube, instance);
  const plural = new Map(BINDINGS.map((b) => [b.kind, b.plural]));
  await pool(objs, 16, async (o) => {
    const r = res(plural.get(o.kind!)!);
    if (o.metadata.finalizers?.length)
      await persist(() =>
        kube.patch(r, o.metadata.namespace, o.metadata.name, { metadata: { finalizers: null } }),
      );
    await persist(() => kube.delete(r, o.metadata.namespace, o.metadata.name));
  });
  return objs.length;
}

interface Target {
  /** what was asked for: a revision, or `checkout` */
  rev: string;
  sha?: string;
  /** EDGE_OPERATOR_ENTRY for it (undefined: lib.ts bundles this checkout) */
  entry?: string;
  /** its CRDs, when they differ from this checkout's */
  crds?: string;
  worktree?: string;
}

const worktrees: string[] = [];
/** A worktree of the revision, bundled into bundle/bench-<sha>/ (EDGE_OPERATOR_ENTRY=src/... runs its sources). */
function prepare(rev: string): Target {
  const sha = git('rev-parse', '--short', `${rev}^{commit}`);
  const dir = `/tmp/bench-wt-${sha}`;
  if (existsSync(dir)) {
    let head = '';
    try {
      head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
    } catch {}
    if (head !== sha) {
      try {
        git('worktree', 'remove', '--force', dir);
      } catch {
        rmSync(dir, { recursive: true, force: true });
        git('worktree', 'prune');
      }
    }
  }
  if (!existsSync(dir)) git('worktree', 'add', '--detach', dir, sha);
  worktrees.push(dir);
  if (!existsSync(join(dir, 'node_modules')))
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
  let entry: string;
  const own = process.env.EDGE_OPERATOR_ENTRY;
  if (own && !own.startsWith('bundle/')) entry = resolve(dir, own);
  else {
    process.stderr.write(`bench: bundling ${rev} (${sha}) in ${dir}\n`);
    execFileSync(process.execPath, [join(dir, 'scripts/bundle.ts')], { cwd: dir, stdio: 'ignore' });
    // under bundle/ in this checkout: the image's flags and environment go with a bundle there
    const into = join(REPO_ROOT, 'bundle', `bench-${sha}`);
    rmSync(into, { recursive: true, force: true });
    cpSync(join(dir, 'bundle'), into, { recursive: true });
    entry = `bundle/bench-${sha}/edgectl.js`;
  }
  let crds: string | undefined;
  try {
    git('diff', '--quiet', sha, '--', 'crds');
  } catch {
    crds = join(dir, 'crds');
  }
  return { rev, sha, entry, crds, worktree: dir };
}

async function run(t: Target, index: number) {
  const w = await benchWorld(`nsb${index}`, { rateLimitPerMinute: RATE });
  const kube = w.kube;
  if (t.crds) await apply(kube, readManifests(t.crds));
  const instance = w.ns;
  const entryBefore = process.env.EDGE_OPERATOR_ENTRY;
  if (t.entry) {
    process.env.EDGE_OPERATOR_ENTRY = t.entry;
    // what lib.ts gives the bundle it builds: the chart's heap limit
    process.env.EDGE_OPERATOR_NODE_ARGS ??= '--max-old-space-size=384';
  }
  let op: Awaited<ReturnType<typeof startOperator>> | undefined;
  try {
    const log = (s: string) => process.stderr.write(`bench [${t.sha ?? t.rev}]: ${s}\n`);
    const spaces = Array.from({ length: N }, (_, i) => `${w.ns}-${i}`);
    const t0 = performance.now();
    await pool(spaces, 16, (name) =>
      persist(() => kube.create(NAMESPACES, undefined, { metadata: { name } })),
    );
    log(`${N} namespaces in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    op = await startOperator(
      w.emu,
      w.kubeconfig,
      w.ns,
      `nsb${index}`,
      Number(values.port) + index,
      ['--api-rate-limit', String(RATE), '--namespaces', '', '--instance', instance],
      { asPod: !values['no-pod'] },
    );
    const pid = op.proc.pid!;
    await sleep(3000);
    const objs = spaces.flatMap((ns) => objectsFor(ns, PER, instance));
    const mStart = await metrics(op.metricsUrl);
    const cpuStart = cpuOf(pid);
    const t1 = performance.now();
    await createAll(kube, objs, 16);
    const applyS = (performance.now() - t1) / 1000;
    log(`${objs.length} objects applied in ${applyS.toFixed(1)} s; settling ${SETTLE_S} s`);
    await sleep(SETTLE_S * 1000);

    // --- the window: the operator backed up
    log(`measuring ${WINDOW_S} s`);
    const before = w.emu.counters.snapshot();
    w.emu.counters.reset();
    const m0 = await metrics(op.metricsUrl);
    const cpu0 = cpuOf(pid);
    const tw = performance.now();
    /** every second: [ms since the window's start, requests, admitted (not 429)] */
    const samples: [number, number, number][] = [];
    const rss: number[] = [];
    while (performance.now() - tw < WINDOW_S * 1000) {
      const total = w.emu.counters.total();
      samples.push([performance.now() - tw, total, total - w.emu.counters.byStatus(429)]);
      if (samples.length % 5 === 1) rss.push(rssMib(pid));
      await sleep(Math.max(0, Math.min(1000, WINDOW_S * 1000 - (performance.now() - tw))));
    }
    const windowS = (performance.now() - tw) / 1000;
    const cpu = cpuOf(pid) - cpu0;
    const m1 = await metrics(op.metricsUrl);
    rss.push(rssMib(pid));
    const during = w.emu.counters.snapshot();
    const total = w.emu.counters.total();
    const throttled = w.emu.counters.byStatus(429);
    samples.push([windowS * 1000, total, total - throttled]);
    // the most admitted in any 60 s of the window (the limit's own measure), when it lasts that long
    let peak: number | null = null;
    if (windowS >= 60)
      for (const [ts, , a] of samples) {
        const end = samples.findLast(([te]) => te <= ts + 60_000)!;
        if (end[0] - ts >= 59_000) peak = Math.max(peak ?? 0, end[2] - a);
      }
    const creates = (by: Record<string, number>) =>
      Object.entries(by)
        .filter(([k]) => /\.create 2\d\d$/.test(k))
        .reduce((n, [, v]) => n + v, 0);
    const k0 = kubeWrites(m0);
    const k1 = kubeWrites(m1);
    const perMin = (x: number) => Number(((x / windowS) * 60).toFixed(1));
    /** A gauge, summed over its labels (undefined when this revision has no such metric). */
    const gauge = (m: Map<string, number>, name: string) =>
      m.has(name)
        ? m.get(name)
        : [...m.keys()].some((k) => k.startsWith(`${name}{`))
          ? sumMetric(m, name)
          : undefined;

    // --- one more namespace, one object
    const extraNs = `${w.ns}-extra`;
    await kube.create(NAMESPACES, undefined, { metadata: { name: extraNs } });
    const tracker = readyTracker(kube, extraNs);
    await tracker.synced;
    const te = performance.now();
    await createAll(kube, objectsFor(extraNs, 1, instance).slice(0, 1));
    let readyMs: number | null = null;
    try {
      await tracker.all(1, READY_TIMEOUT_S * 1000);
      readyMs = Math.round(tracker.readyAt.values().next().value! - te);
    } catch {}
    tracker.stop();
    log(
      `the extra namespace's object: ${readyMs === null ? `not Ready in ${READY_TIMEOUT_S} s` : `Ready in ${readyMs} ms`}`,
    );
    // the extra object's create counts among them
    const createdOverall = creates(before) + creates(w.emu.counters.snapshot()) - (readyMs === null ? 0 : 1);
    await op.kill();

    return {
      rev: t.rev,
      ...(t.sha ? { sha: t.sha } : { commit: commit() }),
      entry: process.env.EDGE_OPERATOR_ENTRY,
      objects: objs.length,
      apply_seconds: Number(applyS.toFixed(1)),
      // from the apply's start to the window's: the backlog taken in
      until_window: {
        operator_cpu_seconds: Number((cpu0 - cpuStart).toFixed(2)),
        kube_writes: {
          objects: k0.objects - kubeWrites(mStart).objects,
          events: k0.events - kubeWrites(mStart).events,
        },
      },
      window: {
        seconds: Number(windowS.toFixed(1)),
        started_after_apply_seconds: SETTLE_S,
        operator_cpu_seconds: Number(cpu.toFixed(2)),
        operator_cpu_percent: Number(((cpu / windowS) * 100).toFixed(1)),
        operator_cpu_seconds_from_metrics: Number(
          ((m1.get('process_cpu_seconds_total') ?? 0) - (m0.get('process_cpu_seconds_total') ?? 0)).toFixed(
            2,
          ),
        ),
        rss_mib: Number(rss.at(-1)!.toFixed(1)),
        rss_max_mib: Number(Math.max(...rss).toFixed(1)),
        heap_used_mib: Math.round((m1.get('nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20),
        api_requests: total,
        api_requests_per_minute: perMin(total),
        api_admitted_per_minute: perMin(total - throttled),
        api_admitted_most_in_60s: peak,
        rate_limit_per_minute: RATE,
        throttled_429: throttled,
        api_creates_ok: creates(during),
        api_requests_by_operation: during,
        kube_writes: {
          objects: k1.objects - k0.objects,
          events: k1.events - k0.events,
          lease_renewals: k1.leases - k0.leases,
        },
        kube_object_writes_per_minute: perMin(k1.objects - k0.objects),
        // at the window's end, as the operator's own gauges say
        gauges: Object.fromEntries(
          [
            'workqueue_depth',
            'edge_api_budget_waiting',
            'edge_api_budget_namespaces_waiting',
            'edge_operator_workqueue_namespaces',
            'edge_operator_managed_objects',
          ].map((g) => [g, gauge(m1, g)]),
        ),
      },
      extra_namespace_one_object_ready_ms: readyMs,
      extra_namespace_goal_ms: GOAL_MS,
      // null above: not Ready within this many seconds (--ready-timeout)
      extra_namespace_ready_timeout_s: READY_TIMEOUT_S,
      extra_namespace_within_goal: readyMs !== null && readyMs <= GOAL_MS,
      backlog_left_objects: objs.length - createdOverall,
      operator_restarts: op.logs.filter((l) => l.includes('starting edge-operator')).length - 1,
    };
  } finally {
    await op?.kill();
    if (t.entry) {
      if (entryBefore === undefined) delete process.env.EDGE_OPERATOR_ENTRY;
      else process.env.EDGE_OPERATOR_ENTRY = entryBefore;
    }
    if (!values.keep) {
      const t2 = performance.now();
      const n = await removeAll(kube, instance).catch((e: Error) => {
        process.stderr.write(`bench: cleaning ${instance} up: ${e.message}\n`);
        return 0;
      });
      process.stderr.write(
        `bench: ${n} objects removed in ${((performance.now() - t2) / 1000).toFixed(1)} s\n`,
      );
    }
    // this checkout's CRDs back, for whatever runs next on the bench cluster
    if (t.crds) await apply(kube, readManifests(join(REPO_ROOT, 'crds')));
    await w.close();
  }
}

const started = performance.now();
const targets: Target[] = values.rev
  ? values.rev.split(',').map((r) => prepare(r.trim()))
  : [{ rev: 'checkout' }];
try {
  const runs = [];
  for (const [i, t] of targets.entries()) runs.push(await run(t, i));
  const label = values.label ?? targets.map((t) => t.sha ?? commit()).join('-');
  writeResult(`namespaces-${N}-${label}`, {
    date: new Date().toISOString(),
    commit: commit(),
    machine: machine(),
    n: N,
    namespaces: N,
    per_namespace: PER,
    objects: values.objects,
    rate_limit_per_minute: RATE,
    what: `the operator backed up (${N} namespaces x ${PER} objects on one account at ${RATE} requests a minute): its CPU, RSS, API requests and Kubernetes writes over ${WINDOW_S} s from ${SETTLE_S} s after the apply; then one object in one more namespace, create to Ready`,
    seconds: Math.round((performance.now() - started) / 1000),
    runs,
  });
} finally {
  if (!values.keep)
    for (const dir of worktrees) {
      try {
        git('worktree', 'remove', '--force', dir);
      } catch {}
      rmSync(join(REPO_ROOT, 'bundle', `bench-${dir.slice('/tmp/bench-wt-'.length)}`), {
        recursive: true,
        force: true,
      });
    }
}
