// The informer's failure modes that a real API server shows only now and then, against a
// stand-in for the Kubernetes client: a namespace the operator may no longer read (403), a
// watch a proxy closes at once, and a page token that expired in the middle of a long list.
import { afterEach, describe, expect, it } from 'vitest';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import {
  type Kube,
  KubeError,
  type KubeObject,
  type WatchEvent,
} from '../../src/operator/runtime/kube/kube.ts';
import { createLogger } from '../../src/operator/runtime/logging.ts';

const P = { group: 'edge.tunnel.dev', version: 'v1alpha1', plural: 'ippolicies' };
const policy = (name: string, rv = '1'): KubeObject => ({
  apiVersion: 'edge.tunnel.dev/v1alpha1',
  kind: 'IPPolicy',
  metadata: { name, namespace: 'team-a', uid: `u-${name}`, resourceVersion: rv },
});
type ListQuery = { limit?: number; continue?: string };

/** A Kube whose list and watch the test writes; watches wait until aborted unless told otherwise. */
function fakeKube(o: {
  list: (q: ListQuery) => { items: KubeObject[]; continue?: string; rv?: string };
  watch?: (onEvent: (e: WatchEvent) => void, signal: AbortSignal) => Promise<void>;
}) {
  const calls = { lists: [] as ListQuery[], watches: 0 };
  const kube = {
    list: async (_r: unknown, _ns: unknown, q: ListQuery) => {
      calls.lists.push({ ...q });
      const page = o.list(q);
      return { items: page.items, metadata: { resourceVersion: page.rv ?? '5', continue: page.continue } };
    },
    watch: async (
      _r: unknown,
      _ns: unknown,
      _rv: string,
      onEvent: (e: WatchEvent) => void,
      opts: { signal: AbortSignal; onOpen?: () => void },
    ) => {
      calls.watches++;
      opts.onOpen?.();
      if (o.watch) return o.watch(onEvent, opts.signal);
      await new Promise<void>((resolve) => opts.signal.addEventListener('abort', () => resolve()));
    },
  } as unknown as Kube;
  return { kube, calls };
}

let informer: Informer | undefined;
afterEach(() => {
  informer?.stop();
  informer = undefined;
});
const start = (kube: Kube) => {
  informer = new Informer({
    kube,
    resource: P,
    namespace: 'team-a',
    log: createLogger('silent'),
    minBackoffMs: 20,
    maxBackoffMs: 40,
    idleMs: 60_000,
  });
  const events: string[] = [];
  informer.on((type, obj) => events.push(`${type} ${obj.metadata.name}`));
  informer.start();
  return { inf: informer, events };
};
const until = async (what: string, ok: () => boolean, ms = 3000) => {
  for (const end = Date.now() + ms; !ok(); await new Promise((r) => setTimeout(r, 10)))
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
};

describe('informer failures', () => {
  it('a namespace it may not read (403) counts as empty and synced, alive, and fills again once access returns', async () => {
    let allowed = false;
    const { kube } = fakeKube({
      list: () => {
        if (!allowed) throw new KubeError(403, 'ippolicies is forbidden');
        return { items: [policy('corp')] };
      },
    });
    const { inf, events } = start(kube);
    // the manager waits for every informer before any worker starts: this one must not hold it
    await inf.synced;
    expect(inf.cache.size).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    // an API server that answers is progress: liveness does not restart the pod for it
    expect(inf.stalledMs()).toBeLessThan(150);
    allowed = true;
    await until('the object listed once access is back', () => inf.cache.size === 1);
    expect(events).toEqual(['add corp']);
  });

  it('objects cached before access went away leave the cache (delete events)', async () => {
    let allowed = true;
    const { kube } = fakeKube({
      list: () => {
        if (!allowed) throw new KubeError(403, 'forbidden');
        return { items: [policy('corp')] };
      },
      watch: async () => {
        // the watch ends, as when the RoleBinding goes: the informer lists again
        await new Promise((r) => setTimeout(r, 50));
        throw new KubeError(410, 'too old');
      },
    });
    const { inf, events } = start(kube);
    await inf.synced;
    expect(inf.cache.size).toBe(1);
    allowed = false;
    await until('the cache emptied', () => inf.cache.size === 0);
    expect(events).toEqual(['add corp', 'delete corp']);
  });

  it('a watch that ends at once with no event is reopened with the backoff, not in a loop', async () => {
    const { kube, calls } = fakeKube({ list: () => ({ items: [] }), watch: async () => {} });
    const { inf } = start(kube);
    await inf.synced;
    await new Promise((r) => setTimeout(r, 500));
    // a backoff of 20-40 ms allows about 25 in half a second; without it, tens of thousands
    expect(calls.watches).toBeLessThan(40);
    expect(calls.watches).toBeGreaterThan(3);
  });

  it('a page token that expired in the middle of a list (410) lists once more without pages', async () => {
    const { kube, calls } = fakeKube({
      list: (q) => {
        if (q.continue === 'p2') throw new KubeError(410, 'the provided continue parameter is too old');
        if (q.limit === undefined) return { items: [policy('a'), policy('b'), policy('c')] };
        return { items: [policy('a')], continue: 'p2' };
      },
    });
    const { inf, events } = start(kube);
    await inf.synced;
    expect(calls.lists).toEqual([{ limit: 500 }, { limit: 500, continue: 'p2' }, {}]);
    expect(events.sort()).toEqual(['add a', 'add b', 'add c']);
  });
});
