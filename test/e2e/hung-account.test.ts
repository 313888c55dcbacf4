// One account's API hangs (accepts connections, never answers) while another account serves:
// the hung account's objects wait out --api-timeout, and the other account's objects, in the
// same namespace as well as in another, are Ready at once; a key's proof the hung API holds
// does not hold another namespace's new account either; a namespace's two hung accounts hold
// no more workers between them than one would. Account A is an EdgeAccount whose
// apiURL is a loopback proxy in front of the emulator (allowed by --account-api-urls) that stops
// answering on cue (A2, the same team's second EdgeAccount, too); account B is a ClusterEdgeAccount on the emulator, shared by both namespaces.
// Stopping, the operator waits for it no longer than --drain-timeout: then its requests are aborted.
import { createServer, request, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountResource } from '../../src/operator/kinds/accounts.ts';
import { INSTANCE_LABEL } from '../../src/operator/runtime/constants.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  edgeAccount,
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
const CEA = accountResource('ClusterEdgeAccount');
const SECRETS = { group: '', version: 'v1', plural: 'secrets' };
const KEY_A = 'key-of-account-a';
const KEY_B = 'key-of-account-b';
const KEY_C = 'key-of-account-c';
/** Long enough that a worker waiting on the hung API is still waiting when the test ends. */
const API_TIMEOUT_S = 60;

/** Forwards to the emulator until `hang`; then accepts every request and never answers. */
function hangingProxy(target: string) {
  const sockets = new Set<Socket>();
  const p = { hang: false, held: 0, heldCreates: 0, url: '', server: undefined as unknown as Server };
  p.server = createServer((req, res) => {
    if (p.hang) {
      p.held++;
      if (req.method === 'POST') p.heldCreates++;
      req.resume();
      return;
    }
    const up = request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode!, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  p.server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    p,
    listen: () =>
      new Promise<void>((resolve) =>
        p.server.listen(0, '127.0.0.1', () => {
          p.url = `http://127.0.0.1:${(p.server.address() as { port: number }).port}`;
          resolve();
        }),
      ),
    close: () => {
      for (const s of sockets) s.destroy();
      p.server.close();
    },
  };
}

describe.skipIf(!!skipReason)('a hung account never holds another account back', () => {
  let w: World;
  let op: OperatorProcess;
  let proxy: ReturnType<typeof hangingProxy>;
  const stamp = Date.now().toString(36);
  const inst = `hung-${stamp}`;
  const [nsT, nsU] = [`${stamp}-hung-t`, `${stamp}-hung-u`];
  const shared = `${inst}-b`;
  const labels = { [INSTANCE_LABEL]: inst };
  const mine = (o: KubeObject): KubeObject => ({ ...o, metadata: { ...o.metadata, labels } });
  const onB = { accountRef: { kind: 'ClusterEdgeAccount', name: shared } };
  /** Team T's second account, behind the same hung API. */
  const onA2 = { accountRef: { kind: 'EdgeAccount', name: 'second' } };
  const isReady = async (ns: string, name: string) => {
    const o = await w.kube.get(P, ns, name).catch(() => undefined);
    return !!o && ready(o);
  };

  /** A namespace's EdgeAccount (`default` unless named), its key in a Secret of that namespace. */
  const defaultAccount = (ns: string, secret: string, key: string, apiURL?: string, name = 'default') =>
    edgeAccount(w.kube, ns, { secret, key, apiURL, name, labels });

  const start = () =>
    startOperator(w.emu, w.ns, [
      '--namespaces',
      `${nsT},${nsU}`,
      '--instance',
      inst,
      '--default-account=false',
      '--account-api-urls',
      proxy.p.url,
      '--api-timeout',
      `${API_TIMEOUT_S}s`,
      '--concurrency',
      '4',
      // the requests the hung API holds are not waited for at the end
      '--drain-timeout',
      '1s',
    ]);

  beforeAll(async () => {
    w = await world('hung', { accounts: { a: KEY_A, b: KEY_B, c: KEY_C } });
    proxy = hangingProxy(w.emu.url);
    await proxy.listen();
    for (const ns of [nsT, nsU]) await w.kube.create(NAMESPACES, undefined, { metadata: { name: ns } });
    op = await start();
    // team T's own account (A) behind the proxy; B shared by T and U from the operator's namespace
    await defaultAccount(nsT, 'key-a', KEY_A, proxy.p.url);
    await defaultAccount(nsT, 'key-a2', KEY_A, proxy.p.url, 'second');
    await w.kube.create(SECRETS, w.ns, {
      metadata: { name: 'key-b', namespace: w.ns },
      stringData: { key: KEY_B },
    });
    await w.kube.create(
      CEA,
      undefined,
      mine({
        apiVersion: 'edge.tunnel.dev/v1alpha1',
        kind: 'ClusterEdgeAccount',
        metadata: { name: shared },
        spec: { apiKeySecretRef: { name: 'key-b', key: 'key' }, namespaces: [nsT, nsU] },
      }),
    );
    // both accounts serve: one object each is Ready
    await w.kube.create(P, nsT, mine(obj('IPPolicy', nsT, 'a-before', {})));
    await w.kube.create(P, nsT, mine(obj('IPPolicy', nsT, 'b-before', onB)));
    await w.kube.create(P, nsT, mine(obj('IPPolicy', nsT, 'a2-before', onA2)));
    await waitFor(
      'the accounts serve',
      async () =>
        (await isReady(nsT, 'a-before')) &&
        (await isReady(nsT, 'b-before')) &&
        (await isReady(nsT, 'a2-before')),
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    await op?.kill();
    proxy?.close();
    for (const ns of [nsT, nsU]) await w?.kube.delete(NAMESPACES, undefined, ns).catch(() => {});
    const left = await w?.kube.get(CEA, undefined, shared).catch(() => undefined);
    if (left) {
      await w.kube.patch(CEA, undefined, shared, { metadata: { finalizers: null } }).catch(() => {});
      await w.kube.delete(CEA, undefined, shared).catch(() => {});
    }
    await w?.close();
  });

  it('account B’s new objects are Ready at once, in the hung account’s namespace too, while A’s wait', async () => {
    proxy.p.hang = true;
    const aNames = Array.from({ length: 6 }, (_, i) => `a-${i}`);
    for (const n of aNames) await w.kube.create(P, nsT, mine(obj('IPPolicy', nsT, n, {})));
    // and as many on team T's second account: a namespace's accounts share one cap
    const a2Names = Array.from({ length: 6 }, (_, i) => `a2-${i}`);
    for (const n of a2Names) await w.kube.create(P, nsT, mine(obj('IPPolicy', nsT, n, onA2)));
    // account A's objects have taken workers: their requests are held by the hung API
    await waitFor('requests held by the hung API', async () => proxy.p.heldCreates >= 3, 15_000);
    // concurrency 4: team T's two hung accounts hold three workers between them, not four
    await new Promise((r) => setTimeout(r, 2000));
    expect(proxy.p.heldCreates).toBe(3);
    const started = Date.now();
    const bNames = [
      ...Array.from({ length: 4 }, (_, i) => [nsT, `b-${i}`] as const),
      ...Array.from({ length: 4 }, (_, i) => [nsU, `b-${i}`] as const),
    ];
    for (const [ns, n] of bNames) await w.kube.create(P, ns, mine(obj('IPPolicy', ns, n, onB)));
    await waitFor(
      'account B’s objects Ready',
      async () => (await Promise.all(bNames.map(([ns, n]) => isReady(ns, n)))).every(Boolean),
      20_000,
    );
    const took = Date.now() - started;
    // well within the time a request to the hung API waits before it gives up
    expect(took).toBeLessThan((API_TIMEOUT_S * 1000) / 4);
    // and account A's are still waiting on it
    for (const n of [...aNames, ...a2Names]) expect(await isReady(nsT, n)).toBe(false);
    expect(await isReady(nsT, 'a-before')).toBe(true);
  }, 60_000);

  it("the proof of a key held by the hung API does not hold another namespace's new account", async () => {
    // team T rotates account A's key: the proof of the new key is a request the hung API holds
    const held = proxy.p.held;
    await w.kube.patch(SECRETS, nsT, 'key-a', { stringData: { key: `${KEY_A}-rotated` } });
    await waitFor('the proof of the new key held by the hung API', async () => proxy.p.held > held, 30_000);
    // team U makes an account of its own (on the operator's API URL) and an object using it
    const started = Date.now();
    await defaultAccount(nsU, 'key-c', KEY_C);
    await w.kube.create(P, nsU, mine(obj('IPPolicy', nsU, 'c-0', {})));
    await waitFor('team U’s object Ready on its own account', async () => isReady(nsU, 'c-0'), 30_000);
    // well within the time the held proof waits before it gives up
    expect(Date.now() - started).toBeLessThan((API_TIMEOUT_S * 1000) / 4);
    expect(w.emu.store.account('c').all('ipPolicies').length).toBe(1);
  }, 60_000);

  it('stops within its drain deadline although the hung API still holds requests', async () => {
    expect(proxy.p.held).toBeGreaterThan(0);
    const t0 = Date.now();
    await op.kill();
    // --drain-timeout 1s, then what is in flight is aborted: not the 60 s of --api-timeout
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(op.logs.some((l) => l.includes('drain deadline passed'))).toBe(true);
  }, 30_000);

  it('restarted while account A’s API hangs, account B’s objects are Ready at once', async () => {
    // account A's first check, a request the hung API holds, holds A's objects only
    op = await start();
    const started = Date.now();
    const names = [nsT, nsU].map((ns) => [ns, 'b-after-restart'] as const);
    for (const [ns, n] of names) await w.kube.create(P, ns, mine(obj('IPPolicy', ns, n, onB)));
    await waitFor(
      'account B’s new objects Ready',
      async () => (await Promise.all(names.map(([ns, n]) => isReady(ns, n)))).every(Boolean),
      30_000,
    );
    expect(Date.now() - started).toBeLessThan((API_TIMEOUT_S * 1000) / 4);
  }, 60_000);
});
