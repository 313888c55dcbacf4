import { createAll, metrics, mixedObjects, readyTracker, startOperator } from './lib.ts';
import { benchWorld } from './world.ts';

const w = await benchWorld('dbg');
const op = await startOperator(w.emu, w.kubeconfig, w.ns, 'bench', 18184, [
  '--api-rate-limit',
  '1000000',
  '--resync-period',
  '20s',
  '--concurrency',
  '8',
]);
const rss = async () =>
  Math.round(((await metrics(op.metricsUrl)).get('process_resident_memory_bytes') ?? 0) / 2 ** 20);
await new Promise((r) => setTimeout(r, 3000));
const start = await rss();
const t = readyTracker(w.kube, w.ns);
await t.synced;
const t0 = performance.now();
await createAll(w.kube, mixedObjects(1000, w.ns), 16);
await t.all(1000, 600_000);
const secs = ((performance.now() - t0) / 1000).toFixed(1);
const conv = await rss();
await new Promise((r) => setTimeout(r, 25_000));
console.log(
  JSON.stringify({ args: process.env.EDGE_OPERATOR_NODE_ARGS, secs, start, conv, afterResync: await rss() }),
);
t.stop();
await op.kill();
await w.close();
process.exit(0);
