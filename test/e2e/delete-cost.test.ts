// Tearing down costs one API request per remote resource: policies and their rules deleted
// at once, in both orders, as `kubectl delete` of both kinds does. (At N = 1,000:
// `npm run bench:deletion`.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequests, requestsSince } from '../support/operator.ts';
import {
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
const R = res('ippolicyrules');
const PAIRS = 20;

describe.skipIf(!!skipReason)('deleting costs one API request per remote resource', () => {
  let w: World;
  let op: OperatorProcess;
  const nsA = `${Date.now().toString(36)}-del-a`;
  const nsB = `${Date.now().toString(36)}-del-b`;

  beforeAll(async () => {
    w = await world('delcost');
    for (const name of [nsA, nsB]) await w.kube.create(NAMESPACES, undefined, { metadata: { name } });
    // no agent-metrics polling: every API call counted here is the objects'
    op = await startOperator(w.emu, w.ns, ['--namespaces', `${nsA},${nsB}`, '--agent-metrics-interval', '0']);
  });
  afterAll(async () => {
    await op?.kill();
    for (const name of [nsA, nsB]) await w?.kube.delete(NAMESPACES, undefined, name).catch(() => {});
    await w?.close();
  });

  for (const [order, ns] of [
    ['policies first', () => nsA],
    ['rules first', () => nsB],
  ] as const)
    it(`${order}: one DELETE per object, no GET, nothing left`, async () => {
      const n = ns();
      for (let i = 0; i < PAIRS; i++) {
        await w.kube.create(P, n, obj('IPPolicy', n, `p${i}`, {}));
        await w.kube.create(
          R,
          n,
          obj('IPPolicyRule', n, `r${i}`, {
            ipPolicyRef: { name: `p${i}` },
            cidr: `10.0.${i}.0/24`,
            action: 'allow',
          }),
        );
      }
      await waitFor(
        'all Ready',
        async () => {
          const all = [...(await w.kube.list(P, n)).items, ...(await w.kube.list(R, n)).items];
          return all.length === 2 * PAIRS && all.every(ready);
        },
        60_000,
      );
      const before = await apiRequests(op.metricsUrl);
      const kinds = order === 'policies first' ? [P, R] : [R, P];
      for (const r of kinds)
        await Promise.all(
          Array.from({ length: PAIRS }, (_, i) =>
            w.kube.delete(r, n, `${r === P ? 'p' : 'r'}${i}`).catch(() => {}),
          ),
        );
      await waitFor(
        'every object gone',
        async () => (await w.kube.list(P, n)).items.length + (await w.kube.list(R, n)).items.length === 0,
        60_000,
      );
      await new Promise((r) => setTimeout(r, 1000));
      expect(requestsSince(await apiRequests(op.metricsUrl), before)).toEqual({
        'ipPolicies.delete 204': PAIRS,
        'ipPolicyRules.delete 204': PAIRS,
      });
      expect(w.emu.store.all('ipPolicies')).toEqual([]);
      expect(w.emu.store.all('ipPolicyRules')).toEqual([]);
    });
});
