// The informer against a real API server: watches cut over and over, objects created and
// deleted while it is disconnected; the cache still ends equal to the server's list.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Informer } from '../../src/operator/runtime/kube/informer.ts';
import { createLogger } from '../../src/operator/runtime/logging.ts';
import { obj, res, skipReason, type World, waitFor, world } from './harness.ts';

let w: World;
beforeAll(async () => {
  if (!skipReason) w = await world('informer');
});
afterAll(async () => {
  await w?.close();
});

it.skipIf(!!skipReason)('converges, and misses no delete, while its watches are killed', async () => {
  const P = res('ippolicies');
  const inf = new Informer({
    kube: w.kube,
    resource: P,
    namespace: w.ns,
    log: createLogger('silent'),
    minBackoffMs: 50,
    maxBackoffMs: 200,
  });
  const deleted: string[] = [];
  inf.on((type, o) => {
    if (type === 'delete') deleted.push(o.metadata.name);
  });
  inf.start();
  await inf.synced;
  for (let i = 0; i < 30; i++) {
    await w.kube.create(P, w.ns, obj('IPPolicy', w.ns, `p${i}`, {}));
    if (i % 3 === 0) {
      // cut the watch, and let the informer open a new one before the next cut
      const before = inf.stats.watches;
      inf.restartWatch();
      await waitFor('watch reopened', () => inf.stats.watches > before, 5000, 10);
    }
    if (i % 5 === 4) await w.kube.delete(P, w.ns, `p${i - 2}`);
  }
  const server = async () => new Set((await w.kube.list(P, w.ns)).items.map((o) => o.metadata.name));
  await waitFor('cache equals the server', async () => {
    const s = await server();
    return s.size === inf.cache.size && [...s].every((n) => inf.get(`${w.ns}/${n}`));
  });
  expect(deleted.sort()).toEqual(['p12', 'p17', 'p2', 'p22', 'p27', 'p7']);
  expect(inf.stats.watches).toBeGreaterThanOrEqual(11);
  inf.stop();
});
