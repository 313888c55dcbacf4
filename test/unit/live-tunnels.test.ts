// Which objects an online tunnel serves, from one list of the account's tunnels: a pure
// function, table-tested; the writing around it is the e2e suite's (controls-tunnels).
import { describe, expect, it } from 'vitest';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import {
  type OnlineTunnel,
  tunnelStates,
  tunnelsCondition,
} from '../../src/operator/runtime/manager/live-tunnels.ts';

const binding = (kind: string) => BINDINGS.find((b) => b.kind === kind)!;
const o = (name: string, spec: Record<string, unknown>, id?: string): KubeObject => ({
  metadata: { name, namespace: 'team' },
  spec,
  ...(id ? { status: { id } } : {}),
});
const tunnel = (id: string, backends: string[], region = 'eu'): OnlineTunnel => ({
  id,
  region,
  backends: backends.map((b) => ({ id: b })),
});
const world = (objs: Record<string, KubeObject[]>) =>
  Object.entries(objs).map(([kind, objects]) => ({ binding: binding(kind), objects }));

describe('tunnelStates', () => {
  const tgbA = o('a', { labels: { app: 'a' } }, 'bkdtg_a');
  const tgbB = o('b', { labels: { app: 'b' } }, 'bkdtg_b');
  const split = o('split', {
    backends: [
      { backendRef: { kind: 'TunnelGroupBackend', name: 'a' }, weight: 1 },
      { backendRef: { kind: 'TunnelGroupBackend', name: 'b' }, weight: 1 },
    ],
  });
  const cases: [string, Record<string, KubeObject[]>, OnlineTunnel[], Record<string, number>][] = [
    [
      'a backend counts the tunnels the API lists as serving it',
      { TunnelGroupBackend: [tgbA, tgbB] },
      [tunnel('t1', ['bkdtg_a']), tunnel('t2', ['bkdtg_a'])],
      { 'TunnelGroupBackend/team/a': 2, 'TunnelGroupBackend/team/b': 0 },
    ],
    [
      'no tunnel online: every backend shows zero',
      { TunnelGroupBackend: [tgbA] },
      [],
      { 'TunnelGroupBackend/team/a': 0 },
    ],
    [
      'a backend without an id yet serves nothing',
      { TunnelGroupBackend: [o('new', { labels: { app: 'a' } })] },
      [tunnel('t1', ['bkdtg_a'])],
      { 'TunnelGroupBackend/team/new': 0 },
    ],
    [
      'a weighted backend sums its children, a tunnel serving both counted once',
      { TunnelGroupBackend: [tgbA, tgbB], WeightedBackend: [split] },
      [tunnel('t1', ['bkdtg_a', 'bkdtg_b']), tunnel('t2', ['bkdtg_b'])],
      { 'TunnelGroupBackend/team/a': 1, 'TunnelGroupBackend/team/b': 2, 'WeightedBackend/team/split': 2 },
    ],
    [
      'a route shows its backend’s tunnels',
      {
        TunnelGroupBackend: [tgbA],
        HTTPSEdgeRoute: [
          o('root', {
            edgeRef: { name: 'app' },
            matchType: 'path_prefix',
            match: '/',
            backend: { backendRef: { kind: 'TunnelGroupBackend', name: 'a' } },
          }),
        ],
      },
      [tunnel('t1', ['bkdtg_a'])],
      { 'TunnelGroupBackend/team/a': 1, 'HTTPSEdgeRoute/team/root': 1 },
    ],
    [
      'a route without a backend module shows zero',
      { HTTPSEdgeRoute: [o('r', { edgeRef: { name: 'app' }, matchType: 'path_prefix', match: '/' })] },
      [tunnel('t1', ['bkdtg_a'])],
      { 'HTTPSEdgeRoute/team/r': 0 },
    ],
    [
      'kinds tunnels do not serve get no state',
      { IPPolicy: [o('corp', {}, 'ipp_1')] },
      [tunnel('t1', ['ipp_1'])],
      {},
    ],
    [
      "a route or a weighted backend naming a tunnel group's backend by its id counts its tunnels",
      {
        HTTPSEdgeRoute: [
          o('by-id', {
            edgeRef: { name: 'app' },
            matchType: 'path_prefix',
            match: '/',
            backend: { backendID: 'bkdtg_elsewhere' },
          }),
        ],
        WeightedBackend: [o('w', { backends: [{ backendID: 'bkdtg_elsewhere', weight: 1 }] })],
      },
      [tunnel('t1', ['bkdtg_elsewhere'])],
      { 'HTTPSEdgeRoute/team/by-id': 1, 'WeightedBackend/team/w': 1 },
    ],
    [
      "an id of the cluster's own backend is followed like a reference",
      {
        TunnelGroupBackend: [tgbA],
        TCPEdge: [o('tcp', { backend: { backendID: 'bkdtg_a' } })],
        WeightedBackend: [
          o('w', { backends: [{ backendID: 'bkdwd_split', weight: 1 }] }),
          { ...split, status: { id: 'bkdwd_split' } },
        ],
      },
      [tunnel('t1', ['bkdtg_a'])],
      {
        'TunnelGroupBackend/team/a': 1,
        'TCPEdge/team/tcp': 1,
        'WeightedBackend/team/w': 1,
        'WeightedBackend/team/split': 1,
      },
    ],
    [
      "a backend of nothing the cluster holds that is no tunnel group (an HTTP response backend, another account's weighted one) gets no state: neither zero nor an alert",
      {
        HTTPSEdgeRoute: [
          o('static', {
            edgeRef: { name: 'app' },
            matchType: 'path_prefix',
            match: '/',
            backend: { backendID: 'bkdhr_teapot' },
          }),
        ],
      },
      [tunnel('t1', ['bkdtg_a'])],
      {},
    ],
    [
      "another namespace's backend named by its id is not followed: its tunnels are that tenant's to see",
      {
        TunnelGroupBackend: [{ ...tgbA, metadata: { name: 'a', namespace: 'other-team' } }],
        TCPEdge: [o('peek', { backend: { backendID: 'bkdtg_a' } }, 'edgtcp_1')],
      },
      [tunnel('t1', ['bkdtg_a'])],
      { 'TunnelGroupBackend/other-team/a': 1 },
    ],
    [
      'a reference to a missing backend counts nothing',
      { WeightedBackend: [split] },
      [tunnel('t1', ['bkdtg_a'])],
      { 'WeightedBackend/team/split': 0 },
    ],
  ];
  for (const [what, objs, tunnels, want] of cases)
    it(what, () => {
      const got = Object.fromEntries([...tunnelStates(world(objs), tunnels)].map(([k, v]) => [k, v.count]));
      expect(got).toEqual(want);
    });

  it('a cycle of weighted backends counts nothing twice and ends', () => {
    const x = o('x', {
      backends: [
        { backendRef: { kind: 'WeightedBackend', name: 'y' }, weight: 1 },
        { backendRef: { kind: 'TunnelGroupBackend', name: 'a' }, weight: 1 },
      ],
    });
    const y = o('y', { backends: [{ backendRef: { kind: 'WeightedBackend', name: 'x' }, weight: 1 }] });
    const s = tunnelStates(world({ TunnelGroupBackend: [tgbA], WeightedBackend: [x, y] }), [
      tunnel('t1', ['bkdtg_a']),
    ]);
    expect(s.get('WeightedBackend/team/x')?.count).toBe(1);
  });

  it('status lists at most 10 tunnels with their regions; the count is all of them', () => {
    const many = Array.from({ length: 25 }, (_, i) => tunnel(`t${i}`, ['bkdtg_a'], i % 2 ? 'us' : 'eu'));
    const s = tunnelStates(world({ TunnelGroupBackend: [tgbA] }), many).get('TunnelGroupBackend/team/a')!;
    expect(s.count).toBe(25);
    expect(s.tunnels).toHaveLength(10);
    expect(tunnelsCondition(s, 1)).toMatchObject({
      status: 'True',
      reason: 'TunnelsOnline',
      message: '25 online tunnels serve it (eu, us)',
    });
    expect(tunnelsCondition({ count: 0 }, 1)).toMatchObject({ status: 'False', reason: 'NoTunnelsOnline' });
  });
});
