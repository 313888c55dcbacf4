// Accounts in parallel: each account has its own budget, so N objects split over two accounts
// converge in about half the time one account needs. The emulator serves three accounts, each
// with its own --rate-limit. Phase 1: N objects in one namespace on one EdgeAccount. Phase 2: the
// same N objects split over two namespaces, each with its own EdgeAccount (the namespace's
// `default`). Each phase runs its own operator (the bundle, the installation's account off),
// converges, then stays idle for --idle-periods resync periods: what observation costs each
// account while nothing changes.
// Usage: npm run bench:accounts -- --n 1000 [--rate-limit 120] [--resync 2m] [--idle-periods 1.5]
import { parseArgs } from 'node:util';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { allReady, createAll, kubeWrites, metrics, mixedObjects, startOperator, sumMetric } from './lib.ts';
import { commit, machine, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    'rate-limit': { type: 'string', default: '120' },
    resync: { type: 'string', default: '2m' },
    'idle-periods': { type: 'string', default: '1.5' },
    port: { type: 'string', default: '18186' },
  },
});
const N = Number(values.n);
const RATE = Number(values['rate-limit']);
const RESYNC_S = Number(/^(\d+)/.exec(values.resync!)![1]) * (values.resync!.endsWith('m') ? 60 : 1);
const POLL_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const startedAtCommit = commit();

/** An emulator account per role: phase 1's one, phase 2's two (fresh, so no phase sees another's resources). */
const KEYS = { one: 'bench-key-one', a: 'bench-key-a', b: 'bench-key-b' } as const;
type Account = keyof typeof KEYS;

const w = await benchWorld('accts', { rateLimitPerMinute: RATE, accounts: { ...KEYS } });
const NS = { group: '', version: 'v1', plural: 'namespaces' };
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };

const sum = (by: Record<string, number>, f: (op: string, status: string) => boolean) =>
  Object.entries(by).reduce((n, [k, v]) => {
    const [op, status] = k.split(' ');
    return f(op!, status!) ? n + v : n;
  }, 0);

/** A namespace whose EdgeAccount `default` holds the emulator account's key. */
async function team(ns: string, account: Account, create: boolean): Promise<void> {
  if (create) await w.kube.create(NS, undefined, { metadata: { name: ns } });
  await w.kube.create(SECRETS, ns, {
    metadata: { name: 'edge-key', namespace: ns },
    stringData: { key: KEYS[account] },
  });
  await w.kube.create(accountResource('EdgeAccount'), ns, {
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    kind: 'EdgeAccount',
    metadata: { name: 'default', namespace: ns },
    spec: { apiKeySecretRef: { name: 'edge-key', key: 'key' }, rateLimitPerMinute: RATE },
  } as KubeObject);
}

/** One phase: its operator, its objects over its teams, convergence, then idle. */
async function phase(name: string, teams: { ns: string; account: Account; n: number }[], port: number) {
  const op = await startOperator(w.emu, w.kubeconfig, teams[0]!.ns, name, port, [
    '--namespaces',
    teams.map((t) => t.ns).join(','),
    '--default-account=false',
    '--api-rate-limit',
    String(RATE),
    '--resync-period',
    values.resync!,
  ]);
  w.emu.counters.reset();
  const objs = teams.flatMap((t) => mixedObjects(t.n, t.ns));
  const t0 = performance.now();
  await createAll(w.kube, objs, 16);
  const doneAt = new Map<string, number>();
  const checks = teams.map((t) => ({ ns: t.ns, ready: allReady(w.kube, t.ns, t.n) }));
  while (doneAt.size < teams.length) {
    for (const c of checks)
      if (!doneAt.has(c.ns) && (await c.ready().catch(() => false))) doneAt.set(c.ns, performance.now());
    if (doneAt.size < teams.length) await sleep(POLL_MS);
  }
  const seconds = (Math.max(...doneAt.values()) - t0) / 1000;
  const converged = Object.fromEntries(
    teams.map((t) => [t.account, w.emu.counters.of(t.account).snapshot()]),
  );
  const m1 = await metrics(op.metricsUrl);

  // idle: everything observed, nothing changes
  w.emu.counters.reset();
  const idleT0 = performance.now();
  await sleep(Number(values['idle-periods']) * RESYNC_S * 1000);
  const idleMin = (performance.now() - idleT0) / 60_000;
  const idle = Object.fromEntries(teams.map((t) => [t.account, w.emu.counters.of(t.account).snapshot()]));
  const m2 = await metrics(op.metricsUrl);
  await op.kill();

  const kube = kubeWrites(m1);
  return {
    objects: objs.length,
    seconds: Number(seconds.toFixed(1)),
    accounts: Object.fromEntries(
      teams.map((t) => {
        const c = converged[t.account]!;
        const writes = sum(c, (o, s) => /\.(create|update|put|delete)$/.test(o) && s.startsWith('2'));
        const lists = sum(idle[t.account]!, (o) => o.endsWith('.list') && !o.startsWith('tunnel'));
        return [
          t.account,
          {
            namespace: t.ns,
            objects: t.n,
            seconds: Number(((doneAt.get(t.ns)! - t0) / 1000).toFixed(1)),
            api_requests: sum(c, () => true),
            api_requests_per_object: Number((sum(c, () => true) / t.n).toFixed(2)),
            api_writes: writes,
            seconds_the_limit_allows_for_them: Number(((writes / RATE) * 60).toFixed(1)),
            throttled_429: sum(c, (_o, s) => s === '429'),
            idle_requests: sum(idle[t.account]!, () => true),
            idle_lists_per_minute: Number((lists / idleMin).toFixed(2)),
            idle_requests_by_operation: idle[t.account],
            // what the operator itself counted for the account (its `account` label)
            operator_counted_requests: sumMetric(m2, 'edge_api_requests_total', (l) =>
              l.includes(`account="EdgeAccount/${t.ns}/default"`),
            ),
          },
        ];
      }),
    ),
    idle_minutes: Number(idleMin.toFixed(2)),
    kube_writes_per_object: Number((kube.objects / objs.length).toFixed(2)),
    rss_mib: Math.round((m2.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
  };
}

try {
  const port = Number(values.port);
  await team(w.ns, 'one', false);
  const one = await phase('acct1', [{ ns: w.ns, account: 'one', n: N }], port);
  const [nsA, nsB] = [`${w.ns}-a`, `${w.ns}-b`];
  await team(nsA, 'a', true);
  await team(nsB, 'b', true);
  const half = Math.floor(N / 2);
  const two = await phase(
    'acct2',
    [
      { ns: nsA, account: 'a', n: half },
      { ns: nsB, account: 'b', n: N - half },
    ],
    port + 1,
  );
  writeResult(`accounts-${N}`, {
    date: new Date().toISOString(),
    commit: startedAtCommit,
    machine: machine(),
    n: N,
    rate_limit_per_minute_per_account: RATE,
    resync: values.resync,
    one_account: one,
    two_accounts: two,
    ratio_two_to_one: Number((two.seconds / one.seconds).toFixed(3)),
  });
} finally {
  await w.close();
}
