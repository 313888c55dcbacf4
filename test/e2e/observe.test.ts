// Bulk observation against a real API server, counted by the emulator per operation: an
// idle installation costs one paged list per kind per resync period and no GET per
// object; drift (a resource deleted, a field changed, a module removed behind the
// operator's back) is still put back within about a resync period.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../src/operator/apply.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import {
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

const RESYNC_S = 10;
const N = 20;

describe.skipIf(!!skipReason)('bulk observation', () => {
  let w: World;
  let op: OperatorProcess;
  const status = async (plural: string, name: string) => (await w.kube.get(res(plural), w.ns, name)).status!;
  const calls = (filter: (operation: string) => boolean) =>
    Object.entries(w.emu.counters.snapshot())
      .filter(([k]) => filter(k.split(' ')[0]!))
      .reduce((n, [, v]) => n + v, 0);

  beforeAll(async () => {
    w = await world('observe');
    op = await startOperator(w.emu, w.ns, [
      '--resync-period',
      `${RESYNC_S}s`,
      '--agent-metrics-interval',
      '0',
    ]);
    const objs = [
      ...Array.from({ length: N }, (_, i) => obj('IPPolicy', w.ns, `p${i}`, { description: `policy ${i}` })),
      ...Array.from({ length: N }, (_, i) =>
        obj('IPPolicyRule', w.ns, `r${i}`, {
          ipPolicyRef: { name: `p${i}` },
          cidr: `10.${i}.0.0/16`,
          action: 'allow',
        }),
      ),
      obj('TunnelGroupBackend', w.ns, 'web', { labels: { app: 'web' } }),
      obj('HTTPSEdge', w.ns, 'edge', { hostports: ['observe.example.com:443'] }),
      obj('HTTPSEdgeRoute', w.ns, 'root', {
        edgeRef: { name: 'edge' },
        matchType: 'path_prefix',
        match: '/',
        backend: { backendRef: { kind: 'TunnelGroupBackend', name: 'web' } },
        responseHeaders: { add: { 'x-frame-options': 'DENY' } },
      }),
    ];
    await apply(w.kube, objs, w.ns);
    await waitFor(
      'every object Ready',
      async () => {
        for (const o of objs) {
          const plural = BINDINGS.find((b) => b.kind === o.kind)!.plural;
          if (!ready(await w.kube.get(res(plural), w.ns, o.metadata.name))) return false;
        }
        return true;
      },
      60_000,
    );
  });
  afterAll(async () => {
    await op?.kill();
    await w?.close();
  });

  it('idle, costs a list per kind per resync period and no GET per object', async () => {
    w.emu.counters.reset();
    const periods = 2.5;
    await new Promise((r) => setTimeout(r, periods * RESYNC_S * 1000));
    expect(calls((op) => op.endsWith('.get'))).toBe(0);
    expect(calls((op) => /\.(create|update|put|delete)$/.test(op))).toBe(0);
    // five kinds have objects: each lists about once a period (jittered 0.85..1.15), HTTPSEdge
    // and HTTPSEdgeRoute in one list of edges (it carries the routes)
    for (const kind of ['ipPolicies', 'ipPolicyRules', 'tunnelGroupBackends', 'httpsEdges']) {
      const lists = calls((op) => op === `${kind}.list`);
      expect(lists, kind).toBeGreaterThanOrEqual(1);
      expect(lists, kind).toBeLessThanOrEqual(Math.ceil(periods / 0.85));
    }
    // kinds without objects cost nothing
    expect(calls((op) => op.startsWith('weightedBackends.') || op.startsWith('sshCredentials.'))).toBe(0);
  });

  it('puts back a deleted resource, a changed field and a removed module within about a resync period', async () => {
    const rule = await status('ippolicyrules', 'r3');
    const policy = await status('ippolicies', 'p5');
    const route = await status('httpsedgeroutes', 'root');
    w.emu.counters.reset();
    await w.api.ipPolicyRules.delete(rule.id as string);
    await w.api.ipPolicies.update(policy.id as string, { description: 'changed behind its back' });
    await w.api.httpsEdgeRouteModules.response_headers.delete(route.edgeID as string, route.id as string);

    const deadline = (RESYNC_S * 1.15 + 8) * 1000;
    await waitFor(
      'rule recreated',
      async () => (await status('ippolicyrules', 'r3')).id !== rule.id,
      deadline,
    );
    // read the emulator's store directly: the test's own reads must not count as API calls
    await waitFor(
      'description put back',
      () => w.emu.store.get('ipPolicies', policy.id as string)?.description === 'policy 5',
      deadline,
    );
    await waitFor(
      'module put back',
      () => {
        const m = w.emu.store.get('httpsEdgeRoutes', route.id as string)?.modules as
          | { response_headers?: { add?: Record<string, string> } }
          | undefined;
        return m?.response_headers?.add?.['x-frame-options'] === 'DENY';
      },
      deadline,
    );
    // exactly the writes the drift needs; the only per-object GET confirms the missing rule
    expect(calls((op) => op === 'ipPolicyRules.create')).toBe(1);
    expect(calls((op) => op === 'ipPolicies.update')).toBe(2); // ours above, and the operator's
    expect(calls((op) => op === 'httpsEdgeRouteModules.response_headers.put')).toBe(1);
    expect(calls((op) => op === 'ipPolicyRules.get')).toBe(1);
    expect(calls((op) => op.endsWith('.get') && op !== 'ipPolicyRules.get')).toBe(0);
  });
});
