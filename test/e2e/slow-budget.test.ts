// Accounts slow to serve (rateLimitPerMinute: 1) hold no worker: two teams' objects wait a
// minute each for their accounts' budgets while a third team's objects, on an account of its own,
// are Ready at once, with one worker per kind (--concurrency 1). Before, each slow account's
// first object held a worker while it waited for its budget, and with the newcomer worker taken
// by the other, the third team waited a minute for a worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/constants.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  edgeAccount,
  metric,
  NAMESPACES,
  type OperatorProcess,
  obj,
  ready,
  res,
  skipReason,
  startOperator,
  type World,
  waitFor,
  world,
} from './harness.ts';

const P = res('ippolicies');
const EA = accountResource('EdgeAccount');
const KEYS = { a: 'key-of-slow-a', b: 'key-of-slow-b', c: 'key-of-fast-c' };

describe.skipIf(!!skipReason)('accounts slow to serve hold no worker', () => {
  let w: World;
  let op: OperatorProcess;
  const stamp = Date.now().toString(36);
  const inst = `slow-${stamp}`;
  const [nsA, nsB] = [`${stamp}-slow-a`, `${stamp}-slow-b`];
  const labels = { [INSTANCE_LABEL]: inst };
  const mine = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, labels } });
  const isReady = async (ns: string, name: string) => {
    const o = await w.kube.get(P, ns, name).catch(() => undefined);
    return !!o && ready(o);
  };

  /** A namespace's `default` EdgeAccount, its key in a Secret of that namespace. */
  const account = (ns: string, key: string, rateLimitPerMinute?: number) =>
    edgeAccount(w.kube, ns, { secret: 'edge-key', key, rateLimitPerMinute, labels });

  const start = () =>
    startOperator(w.emu, w.ns, [
      '--namespaces',
      `${nsA},${nsB},${w.ns}`,
      '--instance',
      inst,
      '--default-account=false',
      '--concurrency',
      '1',
      '--drain-timeout',
      '1s',
    ]);

  beforeAll(async () => {
    w = await world('slow', { accounts: KEYS });
    for (const ns of [nsA, nsB]) await w.kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
    op = await start();
    // each slow account's one request of its first minute checks its key
    await account(nsA, KEYS.a, 1);
    await account(nsB, KEYS.b, 1);
    await account(w.ns, KEYS.c);
    await waitFor(
      'the three accounts Ready',
      async () =>
        (await Promise.all([nsA, nsB, w.ns].map((ns) => w.kube.get(EA, ns, 'default')))).every(ready),
      30_000,
    );
  }, 60_000);

  afterAll(async () => {
    await op?.kill();
    for (const ns of [nsA, nsB]) await w?.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
    await w?.close();
  });

  it("a team's objects are Ready at once while two teams' objects wait a minute for their budgets", async () => {
    const slow = [nsA, nsB].flatMap((ns) => [0, 1, 2].map((i) => [ns, `slow-${i}`] as const));
    for (const [ns, n] of slow) await w.kube.create(P, ns, mine(obj('IPPolicy', ns, n, {})));
    // the slow accounts' first objects are waiting for their budgets
    await new Promise((r) => setTimeout(r, 3000));
    // and hold no worker while they wait
    expect(await metric(op.metricsUrl, 'controller_runtime_active_workers', { controller: 'ippolicy' })).toBe(
      0,
    );
    const started = Date.now();
    const fast = [0, 1, 2].map((i) => `fast-${i}`);
    for (const n of fast) await w.kube.create(P, w.ns, mine(obj('IPPolicy', w.ns, n, {})));
    await waitFor(
      "the third team's objects Ready",
      async () => (await Promise.all(fast.map((n) => isReady(w.ns, n)))).every(Boolean),
      30_000,
    );
    // well within the minute the slow accounts' budgets take for their next request
    expect(Date.now() - started).toBeLessThan(15_000);
    for (const [ns, n] of slow) expect(await isReady(ns, n), `${ns}/${n}`).toBe(false);
    expect(w.emu.store.account('c').all('ipPolicies').length).toBe(3);
    expect(w.emu.store.account('a').all('ipPolicies').length).toBe(0);
  }, 60_000);

  it("after a restart, the slow accounts' first lists hold only their own objects", async () => {
    await op.kill();
    op = await start();
    // each slow account's check takes its one request of the minute; the list of its kind
    // (its objects are IPPolicies) waits for the next
    const started = Date.now();
    await w.kube.create(P, w.ns, mine(obj('IPPolicy', w.ns, 'fast-after-restart', {})));
    await waitFor(
      "the third team's new object Ready",
      async () => isReady(w.ns, 'fast-after-restart'),
      30_000,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    for (const [ns, n] of [nsA, nsB].map((ns) => [ns, 'slow-0'] as const))
      expect(await isReady(ns, n), `${ns}/${n}`).toBe(false);
  }, 60_000);
});
