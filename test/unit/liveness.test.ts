import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/api/client.ts';
import { ACCOUNTS } from '../../src/operator/kinds/accounts.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { Kube } from '../../src/operator/runtime/kube/kube.ts';
import { kubeconfigTarget } from '../../src/operator/runtime/kube/kubeconfig-target.ts';
import { Manager } from '../../src/operator/runtime/manager/manager.ts';
import { ProbeServer } from '../../src/operator/runtime/manager/probes.ts';
import { createMetrics } from '../../src/operator/runtime/metrics.ts';
import { unreachableKubeconfig } from '../support/scratch.ts';

const IDLE_MS = 150;

/** A Kubernetes API that lists nothing and whose watches stay open until the idle watchdog cuts them. */
const healthyKube = {
  list: async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
  watch: (
    _r: unknown,
    _ns: unknown,
    _rv: unknown,
    _on: unknown,
    o: { onOpen?: () => void; signal: AbortSignal },
  ) =>
    new Promise<void>((_resolve, reject) => {
      o.onOpen?.();
      const t = setTimeout(() => reject(new Error(`watch idle for ${IDLE_MS}ms`)), IDLE_MS);
      o.signal.addEventListener('abort', () => {
        clearTimeout(t);
        reject(new Error('aborted'));
      });
    }),
  patch: async () => ({}),
  create: async () => ({}),
  // API discovery: every kind's CRD is installed
  request: async () => ({ resources: [...BINDINGS, ...ACCOUNTS].map((b) => ({ name: b.plural })) }),
};
/** An API server that went away: a real client against a port where nothing listens. */
function deadKube(): Kube {
  return new Kube(kubeconfigTarget(unreachableKubeconfig()));
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

async function manager(kube: object) {
  const metrics = createMetrics();
  const probes = new ProbeServer(metrics);
  await probes.listen('--listen', '127.0.0.1:0', true);
  const api = createClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', rateLimitPerMinute: 60 });
  const m = new Manager({
    kube: kube as Kube,
    api,
    bindings: BINDINGS,
    log: pino({ level: 'silent' }),
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
    informer: { idleMs: IDLE_MS, relistMs: 60_000, minBackoffMs: 10, maxBackoffMs: 40 },
  });
  await m.start();
  stop = async () => {
    await m.stop();
    await probes.close();
    await api.close();
  };
  const get = async (path: string) => {
    const r = await fetch(`http://${probes.address}${path}`);
    return { status: r.status, body: await r.text() };
  };
  return { m, get };
}

describe('liveness', () => {
  it('fails /healthz when watches make no progress past twice the idle watchdog', async () => {
    const { get } = await manager(deadKube());
    expect((await get('/healthz')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 3 * IDLE_MS + 100));
    const h = await get('/healthz');
    expect(h.status).toBe(503);
    expect(h.body).toMatch(/^not healthy: a watch made no progress for \d+s$/);
    // never synced: not ready either
    expect((await get('/readyz')).status).toBe(503);
  });

  it("every informer, the Secrets' too, takes the configured idle watchdog (--watch-idle-timeout)", async () => {
    const { m } = await manager(healthyKube);
    const informers = (m as unknown as { informers: { idleMs: number; watching: { resource: string } }[] })
      .informers;
    expect(informers.map((i) => i.watching.resource)).toContain('secrets');
    expect(informers.length).toBeGreaterThan(BINDINGS.length);
    for (const i of informers) expect(i.idleMs, i.watching.resource).toBe(IDLE_MS);
  });

  it('stays healthy while idle watches are cut and reopened', async () => {
    const { get } = await manager(healthyKube);
    await new Promise((r) => setTimeout(r, 4 * IDLE_MS));
    expect((await get('/healthz')).status).toBe(200);
    expect(await get('/readyz')).toEqual({ status: 200, body: 'ok' });
  });
});
