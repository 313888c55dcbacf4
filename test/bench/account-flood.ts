// A tenant makes many EdgeAccounts on one key (one Secret), one IP policy on each: what the
// operator holds for them. Phase 1, the default limit: all but the oldest few are
// Stalled/AccountLimit and hold nothing. Phase 2, the limit raised past N: the accounts share one
// client and one budget (the key's), so memory and metric series per extra account stay near
// zero; then everything is deleted and what the operator holds is measured again.
// Usage: npm run bench:account-flood -- --n 400 [--rate-limit 6000]
import { parseArgs } from 'node:util';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { createAll, metrics, pool, res, startOperator } from './lib.ts';
import { commit, machine, writeResult } from './report.ts';
import { benchWorld } from './world.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '400' },
    'rate-limit': { type: 'string', default: '6000' },
    port: { type: 'string', default: '18196' },
  },
});
const N = Number(values.n);
const RATE = Number(values['rate-limit']);
const KEY = 'bench-flood-key';
const EA = accountResource('EdgeAccount');
const P = res('ippolicies');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const NS = { group: '', version: 'v1', plural: 'namespaces' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const startedAtCommit = commit();

const w = await benchWorld('flood', { rateLimitPerMinute: RATE, accounts: { flood: KEY } });

const names = Array.from({ length: N }, (_, i) => `a${String(i).padStart(4, '0')}`);
const accountsOf = (ns: string): KubeObject[] =>
  names.map((name) => ({
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    kind: 'EdgeAccount',
    metadata: { name, namespace: ns },
    spec: { apiKeySecretRef: { name: 'k', key: 'api-key' } },
  }));
const policiesOf = (ns: string): KubeObject[] =>
  names.map((name) => ({
    apiVersion: 'edge.tunnel.dev/v1alpha1',
    kind: 'IPPolicy',
    metadata: { name, namespace: ns },
    spec: { accountRef: { kind: 'EdgeAccount', name } },
  }));

const reason = (o: KubeObject) =>
  ((o.status as { conditions?: { type: string; status: string; reason: string }[] })?.conditions ?? []).find(
    (c) => c.status === 'True' && (c.type === 'Ready' || c.type === 'Stalled'),
  )?.reason ?? 'none';
async function census(ns: string, r: typeof EA): Promise<Record<string, number>> {
  const by: Record<string, number> = {};
  for (const o of (await w.kube.list(r, ns)).items) by[reason(o)] = (by[reason(o)] ?? 0) + 1;
  return by;
}
async function until(what: string, ok: () => Promise<boolean>, ms = 600_000): Promise<number> {
  const t0 = performance.now();
  while (!(await ok())) {
    if (performance.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(2000);
  }
  return (performance.now() - t0) / 1000;
}
/** What the operator holds: memory, and the metric series that name an EdgeAccount. */
async function held(url: string) {
  const text = await (await fetch(url)).text();
  const series = text.split('\n').filter((l) => l.includes('account="EdgeAccount/'));
  const m = await metrics(url);
  return {
    rss_mib: Math.round((m.get('process_resident_memory_bytes') ?? 0) / 2 ** 20),
    heap_used_mib: Math.round((m.get('nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20),
    account_series: series.length,
    accounts_labelled: new Set(series.map((l) => /account="([^"]+)"/.exec(l)![1])).size,
  };
}

async function phase(name: string, ns: string, port: number, limit: number) {
  await w.kube.create(NS, undefined, { metadata: { name: ns } });
  await w.kube.create(SECRETS, ns, {
    metadata: { name: 'k', namespace: ns },
    stringData: { 'api-key': KEY },
  });
  const op = await startOperator(w.emu, w.kubeconfig, ns, name, port, [
    '--default-account=false',
    '--api-rate-limit',
    String(RATE),
    '--max-accounts-per-namespace',
    String(limit),
  ]);
  await sleep(3000);
  const idle = await held(op.metricsUrl);
  w.emu.counters.reset();
  const t0 = performance.now();
  await pool(accountsOf(ns), 16, (o) => w.kube.create(EA, ns, o));
  await createAll(w.kube, policiesOf(ns), 16);
  const served = Math.min(limit, N);
  await until(
    `${name}: ${served} accounts Ready`,
    async () => ((await census(ns, EA)).KeyAccepted ?? 0) >= served,
  );
  await until(`${name}: ${served} policies Ready`, async () => ((await census(ns, P)).Synced ?? 0) >= served);
  const seconds = (performance.now() - t0) / 1000;
  // every account has said whether it is served, every policy whether it waits
  await until(`${name}: every account has a status`, async () => !(await census(ns, EA)).none);
  const accounts = await census(ns, EA);
  const policies = await census(ns, P);
  const requests = w.emu.counters.of('flood').snapshot();
  const full = await held(op.metricsUrl);
  // everything goes: objects first (their remote resources with them), then the accounts
  await pool(policiesOf(ns), 16, (o) => w.kube.delete(P, ns, o.metadata.name).catch(() => {}));
  await until(`${name}: policies deleted`, async () => (await w.kube.list(P, ns)).items.length === 0);
  await pool(accountsOf(ns), 16, (o) => w.kube.delete(EA, ns, o.metadata.name).catch(() => {}));
  await until(`${name}: accounts deleted`, async () => (await w.kube.list(EA, ns)).items.length === 0);
  await sleep(10_000);
  const after = await held(op.metricsUrl);
  await op.kill();
  return {
    limit,
    seconds_to_ready: Number(seconds.toFixed(1)),
    accounts_by_reason: accounts,
    policies_by_reason: policies,
    api_requests: Object.values(requests).reduce((a, b) => a + b, 0),
    api_requests_by_operation: requests,
    throttled_429: Object.entries(requests)
      .filter(([k]) => k.endsWith(' 429'))
      .reduce((a, [, v]) => a + v, 0),
    before: idle,
    with_accounts: full,
    after_deletion: after,
    rss_mib_per_extra_account: Number(((full.rss_mib - idle.rss_mib) / N).toFixed(3)),
  };
}

try {
  const port = Number(values.port);
  const limited = await phase('flood-limited', `${w.ns}-limited`, port, 3);
  const raised = await phase('flood-raised', `${w.ns}-raised`, port + 1, N + 100);
  writeResult(`account-flood-${N}`, {
    date: new Date().toISOString(),
    commit: startedAtCommit,
    machine: machine(),
    n: N,
    rate_limit_per_minute: RATE,
    limited,
    raised,
  });
} finally {
  await w.close();
}
