// Started before its CRDs: the manager asks API discovery (here a stand-in that answers as the
// API server does: 404 for a group version without CRDs, then the served resources), says once
// which are missing, is not ready with that reason, and starts when they are served. The
// probes are real HTTP; test/e2e/install-order.test.ts does the same on a real API server.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { ACCOUNTS } from '../../src/operator/kinds/accounts.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { missingMessage } from '../../src/operator/runtime/kube/crds-installed.ts';
import { type Kube, KubeError } from '../../src/operator/runtime/kube/kube.ts';
import { Manager } from '../../src/operator/runtime/manager/manager.ts';
import { ProbeServer } from '../../src/operator/runtime/manager/probes.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('started before its CRDs', () => {
  it('not ready, naming the missing CRDs and how to install them, until discovery serves them', async () => {
    let served: string[] | undefined;
    let initializing = false;
    const lists: string[] = [];
    const kube = {
      request: async (_m: string, path: string) => {
        if (path !== '/apis/edge.tunnel.dev/v1alpha1') throw new Error(`unexpected ${path}`);
        if (!served) throw new KubeError(404, `GET ${path}: 404 page not found`);
        return { resources: served.map((name) => ({ name })) };
      },
      list: async (r: { plural: string }) => {
        // just established: the API server's storage for the kind is not up yet
        if (initializing && r.plural !== 'secrets')
          throw new KubeError(429, `GET ${r.plural}: 429 storage is (re)initializing`);
        lists.push(r.plural);
        return { metadata: { resourceVersion: '1' }, items: [] };
      },
      watch: (_r: unknown, _ns: unknown, _rv: unknown, _on: unknown, o: { signal: AbortSignal }) =>
        new Promise<void>((_resolve, reject) =>
          o.signal.addEventListener('abort', () => reject(new Error('aborted'))),
        ),
      patch: async () => ({}),
      create: async () => ({}),
    };
    const lines: { level: number; msg: string }[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
    const metrics = createMetrics();
    const probes = new ProbeServer(metrics);
    await probes.listen('--listen', '127.0.0.1:0', true);
    const api = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', rateLimitPerMinute: 60 });
    const m = new Manager({
      kube: kube as unknown as Kube,
      api,
      bindings: BINDINGS,
      log,
      metrics,
      clusterId: 'c',
      digestKey: 'k',
      identity: 'test',
      namespaces: ['ns'],
      concurrency: 1,
      resyncMs: 60_000,
      drainMs: 100,
      leaderElection: { enabled: false, namespace: 'ns', name: 'x' },
      probes,
    });
    // discovery is asked again every 5 s (CRD_RECHECK_MS): the test waits that long, thrice
    const started = m.start();
    stop = async () => {
      await m.stop();
      await started;
      await probes.close();
      await api.close();
    };
    const readyz = async () => {
      const r = await fetch(`http://${probes.address}/readyz`);
      return { status: r.status, body: await r.text() };
    };
    await new Promise((r) => setTimeout(r, 100));
    // the managed kinds and the account kinds
    const all = [...BINDINGS, ...ACCOUNTS].map((b) => b.plural);
    expect(await readyz()).toEqual({ status: 503, body: `not ready: ${missingMessage(all)}` });
    expect(lines.filter((l) => l.msg.startsWith('CRDs not installed'))).toHaveLength(1);
    expect(lists).toEqual([]);

    // all but one served: said again, naming that one
    served = all.slice(1);
    await new Promise((r) => setTimeout(r, 5500));
    expect(await readyz()).toEqual({ status: 503, body: `not ready: ${missingMessage([all[0]!])}` });
    expect(lines.filter((l) => l.msg.startsWith('CRDs not installed'))).toHaveLength(2);
    expect(lists).toEqual([]);

    // all served, their storage not answering yet: still waiting, no watch opened
    initializing = true;
    served = all;
    await new Promise((r) => setTimeout(r, 5500));
    expect(await readyz()).toMatchObject({
      status: 503,
      body: expect.stringContaining('CRDs installed; waiting for the API server to serve'),
    });
    expect(lists).toEqual([]);
    initializing = false;
    await started;
    await new Promise((r) => setTimeout(r, 100));
    expect(await readyz()).toEqual({ status: 200, body: 'ok' });
    expect(new Set(lists)).toEqual(new Set([...all, 'secrets']));
    expect(lines.filter((l) => l.msg === 'CRDs installed: starting')).toHaveLength(1);
  }, 30_000);
});
