// edgectl trace's decisions: which objects hang under which, what counts as Ready, the exit
// code, and the lines and JSON it prints. Pure functions over hand-made objects.
import { describe, expect, it } from 'vitest';
import { CliError, EXIT } from '../../src/cli/io.ts';
import {
  buildTrace,
  nodesOf,
  parseTarget,
  renderJson,
  renderTree,
  secretNamesOf,
  type TraceInput,
  type TraceNode,
  type TraceTunnel,
  toneOf,
  traceExit,
} from '../../src/cli/trace-tree.ts';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();
type Cond = { type: string; status: string; reason: string; message?: string; observedGeneration?: number };
const cond = (type: string, status: string, reason: string): Cond => ({ type, status, reason });
const READY = [cond('Ready', 'True', 'Synced')];

const o = (
  name: string,
  spec: Record<string, unknown>,
  status: Record<string, unknown> = { id: `id_${name}`, conditions: READY },
  meta: Partial<KubeObject['metadata']> = {},
): KubeObject => ({
  metadata: { name, namespace: 'team', creationTimestamp: ago(300), generation: 1, ...meta },
  spec,
  status,
});

/** deploy/examples in miniature: an edge, two routes, a weighted backend over two backends, a policy with two rules. */
const example = (): Record<string, KubeObject[]> => ({
  HTTPSEdge: [o('app', { hostports: ['app.example.com:443'] })],
  HTTPSEdgeRoute: [
    // out of order: children are sorted by name
    o('webhooks', {
      edgeRef: { name: 'app' },
      matchType: 'exact_path',
      match: '/webhooks',
      backend: { backendRef: { kind: 'TunnelGroupBackend', name: 'web' } },
      webhookVerification: { provider: 'stripe', secretRef: { name: 'auth', key: 'stripe' } },
    }),
    o('root', {
      edgeRef: { name: 'app' },
      matchType: 'path_prefix',
      match: '/',
      backend: { backendRef: { kind: 'WeightedBackend', name: 'split' } },
      ipRestriction: { ipPolicyRefs: [{ name: 'corp' }] },
      oidc: {
        issuer: 'https://id.example.com',
        clientID: 'app',
        clientSecretRef: { name: 'auth', key: 'oidc' },
        scopes: ['openid'],
      },
    }),
    o('other-edge', { edgeRef: { name: 'elsewhere' }, matchType: 'path_prefix', match: '/' }),
  ],
  WeightedBackend: [
    o('split', {
      backends: [
        { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 90 },
        { backendRef: { kind: 'TunnelGroupBackend', name: 'canary' }, weight: 10 },
      ],
    }),
  ],
  TunnelGroupBackend: [
    o('web', { labels: { app: 'web' } }, { id: 'bkdtg_web', conditions: READY }),
    o('canary', { labels: { app: 'canary' } }, { id: 'bkdtg_canary', conditions: READY }),
  ],
  IPPolicy: [o('corp', {})],
  IPPolicyRule: [
    o('office', { ipPolicyRef: { name: 'corp' }, cidr: '203.0.113.0/24', action: 'allow' }),
    o('home', { ipPolicyRef: { name: 'corp' }, cidr: '198.51.100.0/24', action: 'allow' }),
    o('elsewhere', { ipPolicyRef: { name: 'other' }, cidr: '192.0.2.0/24', action: 'deny' }),
  ],
  IPRestriction: [o('dashboard', { type: 'dashboard', ipPolicyRefs: [{ name: 'corp' }] })],
});
const input = (objects = example(), more: Partial<TraceInput> = {}): TraceInput => ({
  bindings: BINDINGS,
  namespace: 'team',
  objects,
  secrets: { auth: 'Exists' },
  now: NOW,
  ...more,
});
/** The tree as `Kind/name` strings, nested: the shape at a glance. */
type Shape = string | [string, Shape[]];
const shape = (n: TraceNode): Shape =>
  n.children.length ? [`${n.kind}/${n.name}`, n.children.map(shape)] : `${n.kind}/${n.name}`;
const find = (root: TraceNode, kind: string, name: string) =>
  [...nodesOf(root)].find((n) => n.kind === kind && n.name === name)!;
const trace = (i: TraceInput, kind = 'HTTPSEdge', name = 'app') => buildTrace(i, kind, name)!;
const edit = (objs: Record<string, KubeObject[]>, kind: string, name: string, f: (x: KubeObject) => void) => {
  f(objs[kind]!.find((x) => x.metadata.name === name)!);
  return objs;
};

describe('buildTrace', () => {
  it('an edge: its routes (by edgeRef), their backends, IP policies with their rules, Secrets', () => {
    const root = trace(input());
    expect(shape(root)).toEqual([
      'HTTPSEdge/app',
      [
        [
          'HTTPSEdgeRoute/root',
          [
            ['WeightedBackend/split', ['TunnelGroupBackend/web', 'TunnelGroupBackend/canary']],
            ['IPPolicy/corp', ['IPPolicyRule/home', 'IPPolicyRule/office']],
            'Secret/auth',
          ],
        ],
        ['HTTPSEdgeRoute/webhooks', ['TunnelGroupBackend/web', 'Secret/auth']],
      ],
    ]);
    expect(root).toMatchObject({ ready: true, reason: 'Synced', id: 'id_app', age: '5m' });
    const route = find(root, 'HTTPSEdgeRoute', 'root');
    expect(route.children.map((c) => c.via)).toEqual([
      'spec.backend.backendRef',
      'spec.ipRestriction.ipPolicyRefs[0]',
      'spec.oidc.clientSecretRef',
    ]);
    expect(find(root, 'Secret', 'auth')).toMatchObject({ ready: true, reason: 'Exists', keys: ['oidc'] });
    expect(secretNamesOf(root)).toEqual(['auth']);
    expect(traceExit(root)).toBe(EXIT.ok);
  });

  const cases: [
    string,
    (x: Record<string, KubeObject[]>) => unknown,
    Partial<TraceInput>,
    string,
    string,
    Partial<TraceNode>,
  ][] = [
    [
      'a backend the weighted backend names is missing',
      (x) => {
        x.TunnelGroupBackend = x.TunnelGroupBackend!.filter((b) => b.metadata.name !== 'canary');
      },
      {},
      'TunnelGroupBackend',
      'canary',
      { missing: true, ready: false, reason: 'NotFound', via: 'spec.backends[1].backendRef' },
    ],
    [
      'a referenced Secret is missing',
      () => {},
      { secrets: { auth: 'NotFound' } },
      'Secret',
      'auth',
      { missing: true, ready: false, reason: 'NotFound' },
    ],
    [
      'a Secret that could not be read is not taken as existing',
      () => {},
      { secrets: { auth: 'Forbidden' } },
      'Secret',
      'auth',
      { ready: false, reason: 'Forbidden' },
    ],
    [
      'a Secret not looked up is Unknown',
      () => {},
      { secrets: {} },
      'Secret',
      'auth',
      { ready: false, reason: 'Unknown' },
    ],
    [
      'a stalled route',
      (x) =>
        edit(x, 'HTTPSEdgeRoute', 'root', (r) => {
          r.status!.conditions = [
            cond('Ready', 'False', 'APIRejected'),
            cond('Stalled', 'True', 'APIRejected'),
          ];
        }),
      {},
      'HTTPSEdgeRoute',
      'root',
      { ready: false, reason: 'APIRejected', stalled: true },
    ],
    [
      'a rule waiting for a reference',
      (x) =>
        edit(x, 'IPPolicyRule', 'home', (r) => {
          r.status!.conditions = [
            cond('Ready', 'False', 'WaitingForReference'),
            cond('Reconciling', 'True', 'WaitingForReference'),
          ];
        }),
      {},
      'IPPolicyRule',
      'home',
      { ready: false, reason: 'WaitingForReference', reconciling: true },
    ],
    [
      'a Ready object whose new generation is not reconciled yet is not Ready',
      (x) =>
        edit(x, 'WeightedBackend', 'split', (r) => {
          r.metadata.generation = 3;
          r.status!.conditions = [{ ...cond('Ready', 'True', 'Synced'), observedGeneration: 2 }];
        }),
      {},
      'WeightedBackend',
      'split',
      { ready: false, reason: 'Progressing', reconciling: true },
    ],
    [
      'an object without status (no operator)',
      (x) =>
        edit(x, 'TunnelGroupBackend', 'web', (r) => {
          delete r.status;
        }),
      {},
      'TunnelGroupBackend',
      'web',
      { ready: false, reason: 'Unknown' },
    ],
  ];
  it.each(cases)('%s: the node says so and the exit code is 1', (_what, change, more, kind, name, want) => {
    const objs = example();
    change(objs);
    const root = trace(input(objs, more));
    expect(find(root, kind, name)).toMatchObject(want);
    expect(traceExit(root)).toBe(EXIT.failed);
  });

  it('a paused object that is Ready: marked Paused (yellow), the exit code still 0', () => {
    const objs = edit(example(), 'HTTPSEdgeRoute', 'webhooks', (r) => {
      r.status!.conditions = [...READY, cond('Paused', 'True', 'ReconcilePaused')];
    });
    const root = trace(input(objs));
    const route = find(root, 'HTTPSEdgeRoute', 'webhooks');
    expect(route).toMatchObject({ ready: true, paused: true });
    expect(toneOf(route)).toBe('yellow');
    expect(traceExit(root)).toBe(EXIT.ok);
  });

  it('an object not reconciled yet says how many of its namespace are ahead of it, oldest first', () => {
    const objs = example();
    const waiting = (name: string, s: number) => o(name, {}, {}, { creationTimestamp: ago(s) });
    objs.IPPolicy = [...objs.IPPolicy!, waiting('p1', 40), waiting('p2', 30), waiting('p3', 20)];
    expect(find(trace(input(objs), 'IPPolicy', 'p3'), 'IPPolicy', 'p3').message).toMatch(
      /waiting for its turn behind 2 objects of this namespace .* about 1 s or more/,
    );
    // the first in line has nothing ahead of it: if it still waits, the operator is not serving
    expect(find(trace(input(objs), 'IPPolicy', 'p1'), 'IPPolicy', 'p1').message).toBe(
      'no Ready condition yet: is the operator running?',
    );
  });

  it("the root missing: undefined (exit 4 is the command's)", () => {
    expect(buildTrace(input(), 'HTTPSEdge', 'nope')).toBeUndefined();
    expect(buildTrace(input(), 'NoSuchKind', 'app')).toBeUndefined();
  });

  it('a route as the root: what it uses, not its edge (its parent)', () => {
    expect(shape(trace(input(), 'HTTPSEdgeRoute', 'webhooks'))).toEqual([
      'HTTPSEdgeRoute/webhooks',
      ['TunnelGroupBackend/web', 'Secret/auth'],
    ]);
  });

  it('an IP restriction: its policies and their rules; a rule alone has no children', () => {
    expect(shape(trace(input(), 'IPRestriction', 'dashboard'))).toEqual([
      'IPRestriction/dashboard',
      [['IPPolicy/corp', ['IPPolicyRule/home', 'IPPolicyRule/office']]],
    ]);
    expect(shape(trace(input(), 'IPPolicyRule', 'office'))).toBe('IPPolicyRule/office');
  });

  it('the account: on the traced object, and below it only where it differs (a reference across accounts)', () => {
    const held = (name: string, account: string) =>
      o(name, {}, { id: `id_${name}`, conditions: READY, account });
    const objs: Record<string, KubeObject[]> = {
      IPRestriction: [
        o(
          'dashboard',
          { enforced: true, type: 'dashboard', ipPolicyRefs: [{ name: 'corp' }, { name: 'other' }] },
          { id: 'id_dashboard', conditions: READY, account: 'EdgeAccount/team/default' },
        ),
      ],
      IPPolicy: [held('corp', 'EdgeAccount/team/default'), held('other', 'ClusterEdgeAccount/shared')],
      // not reconciled yet: what its spec names
      IPPolicyRule: [
        o(
          'r',
          {
            ipPolicyRef: { name: 'corp' },
            cidr: '10.0.0.0/8',
            action: 'allow',
            accountRef: { kind: 'EdgeAccount', name: 'x' },
          },
          {},
        ),
      ],
    };
    const root = trace(input(objs), 'IPRestriction', 'dashboard');
    expect(root.account).toBe('EdgeAccount team/default');
    const [corp, other] = root.children;
    expect(corp!.account).toBeUndefined();
    expect(other!.account).toBe('ClusterEdgeAccount shared');
    expect(corp!.children[0]!.account).toBe('EdgeAccount team/x');
    expect(renderTree(root, { tty: false, colour: false })).toContain('account ClusterEdgeAccount shared');
    // the installation's own account, the default, is not noted
    const plain = trace(input({ IPPolicy: [held('solo', 'installation')] }), 'IPPolicy', 'solo');
    expect(plain.account).toBeUndefined();
  });

  it('a reference cycle is shown once and not followed again', () => {
    const objs: Record<string, KubeObject[]> = {
      WeightedBackend: [
        o('a', { backends: [{ backendRef: { kind: 'WeightedBackend', name: 'b' }, weight: 1 }] }),
        o('b', { backends: [{ backendRef: { kind: 'WeightedBackend', name: 'a' }, weight: 1 }] }),
      ],
    };
    const root = trace(input(objs), 'WeightedBackend', 'a');
    expect(shape(root)).toEqual(['WeightedBackend/a', [['WeightedBackend/b', ['WeightedBackend/a']]]]);
    expect(root.children[0]!.children[0]!.cycle).toBe(true);
  });

  it('tunnels from status without the API: under each tunnel-group backend, counts on the lines', () => {
    const objs = edit(example(), 'TunnelGroupBackend', 'web', (r) => {
      r.status!.tunnelsOnline = {
        count: 2,
        tunnels: [
          { id: 'tn_2', region: 'us' },
          { id: 'tn_1', region: 'eu' },
        ],
      };
    });
    edit(objs, 'WeightedBackend', 'split', (r) => {
      r.status!.tunnelsOnline = { count: 2 };
    });
    const root = trace(input(objs));
    const web = find(root, 'TunnelGroupBackend', 'web');
    expect(web.tunnelsOnline).toBe(2);
    expect(web.children.map((t) => [t.name, t.region, t.ready])).toEqual([
      ['tn_1', 'eu', true],
      ['tn_2', 'us', true],
    ]);
    expect(find(root, 'WeightedBackend', 'split').tunnelsOnline).toBe(2);
    expect(find(root, 'TunnelGroupBackend', 'canary').tunnelsOnline).toBeUndefined();
    expect(find(root, 'HTTPSEdge', 'app').tunnelsOnline).toBeUndefined();
  });

  it("live tunnels from the API: filtered by each backend's id, counts added up through the references", () => {
    const tunnels: TraceTunnel[] = [
      { id: 'tn_a', region: 'eu', backends: [{ id: 'bkdtg_web' }], startedAt: ago(7200) },
      { id: 'tn_b', region: 'us', backends: [{ id: 'bkdtg_canary' }] },
      { id: 'tn_c', region: 'eu', backends: [{ id: 'bkdtg_other' }] },
    ];
    // status says otherwise: the live list wins
    const objs = edit(example(), 'TunnelGroupBackend', 'web', (r) => {
      r.status!.tunnelsOnline = { count: 0 };
    });
    const root = trace(input(objs, { tunnels }));
    const web = find(root, 'TunnelGroupBackend', 'web');
    expect(web.tunnelsOnline).toBe(1);
    expect(web.children).toMatchObject([{ kind: 'Tunnel', name: 'tn_a', region: 'eu', age: '2h' }]);
    expect(find(root, 'WeightedBackend', 'split').tunnelsOnline).toBe(2);
    expect(find(root, 'HTTPSEdgeRoute', 'root').tunnelsOnline).toBe(2);
    expect(find(root, 'HTTPSEdgeRoute', 'webhooks').tunnelsOnline).toBe(1);
    // no tunnel online is not "not Ready": GitOps health does not move with agents
    expect(traceExit(trace(input(example(), { tunnels: [] })))).toBe(EXIT.ok);
  });
});

describe('parseTarget', () => {
  it.each([
    ['HTTPSEdge/app', 'HTTPSEdge', 'app'],
    ['httpsedge/app', 'HTTPSEdge', 'app'],
    ['httpsedges/app', 'HTTPSEdge', 'app'],
    ['edgeroute/app-root', 'HTTPSEdgeRoute', 'app-root'],
    ['WB/web-split', 'WeightedBackend', 'web-split'],
    ['tgb/web', 'TunnelGroupBackend', 'web'],
  ])('%s', (arg, kind, name) => {
    const t = parseTarget(arg, BINDINGS);
    expect([t.binding.kind, t.name]).toEqual([kind, name]);
  });

  it.each(['app', 'HTTPSEdge/', '/app', 'Deployment/app'])('%s: a usage error', (arg) => {
    let err: unknown;
    try {
      parseTarget(arg, BINDINGS);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).code).toBe(EXIT.usage);
    expect((err as CliError).message).not.toContain('\n');
  });

  it('an unknown kind: one line naming every kind with its plural and short names', () => {
    expect(() => parseTarget('Deployment/app', BINDINGS)).toThrow(
      /^unknown kind "Deployment": use one of .*WeightedBackend \(weightedbackends, wb\).*HTTPSEdge \(httpsedges, edgehttps\), HTTPSEdgeRoute \(httpsedgeroutes, edgeroute\)/,
    );
  });
});

describe('render', () => {
  const small = () =>
    trace(
      input(
        {
          WeightedBackend: [
            o('split', {
              backends: [
                { backendRef: { kind: 'TunnelGroupBackend', name: 'web' }, weight: 1 },
                { backendRef: { kind: 'TunnelGroupBackend', name: 'gone' }, weight: 1 },
              ],
            }),
          ],
          TunnelGroupBackend: [
            o(
              'web',
              { labels: {} },
              {
                id: 'bkdtg_web',
                conditions: READY,
                tunnelsOnline: { count: 1, tunnels: [{ id: 'tn_1', region: 'eu' }] },
              },
              { creationTimestamp: ago(3 * 86_400) },
            ),
          ],
        },
        {},
      ),
      'WeightedBackend',
      'split',
    );

  it('on a terminal: tree connectors, aligned columns', () => {
    expect(renderTree(small(), { tty: true, colour: false })).toBe(
      [
        'NAME                         READY     REASON     ID          AGE   NOTES',
        'WeightedBackend/split        True      Synced     id_split    5m',
        '├─ TunnelGroupBackend/web    True      Synced     bkdtg_web   3d    TunnelsOnline 1',
        '│  └─ Tunnel/tn_1            True      Online                       region eu',
        '└─ TunnelGroupBackend/gone   Missing   NotFound',
        '',
      ].join('\n'),
    );
  });

  it('not on a terminal: indentation only, no colour', () => {
    const out = renderTree(small(), { tty: false });
    expect(out).not.toMatch(/[├└│]/);
    expect(out).not.toContain('\x1b[');
    expect(out.split('\n')[3]).toMatch(/^ {6}Tunnel\/tn_1 /);
  });

  it('colour on a terminal: green Ready, red missing', () => {
    const lines = renderTree(small(), { tty: true }).split('\n');
    expect(lines[1]).toContain('\x1b[32mTrue');
    expect(lines[4]).toContain('\x1b[31mMissing');
    expect(lines[0]).not.toContain('\x1b[');
  });

  it('JSON: the tree with kind, name, ready, reason, id, age, children', () => {
    const j = JSON.parse(renderJson(small()));
    expect(j).toMatchObject({
      kind: 'WeightedBackend',
      name: 'split',
      ready: true,
      reason: 'Synced',
      id: 'id_split',
      age: '5m',
      children: [
        {
          kind: 'TunnelGroupBackend',
          name: 'web',
          ready: true,
          tunnelsOnline: 1,
          children: [{ kind: 'Tunnel', name: 'tn_1' }],
        },
        {
          kind: 'TunnelGroupBackend',
          name: 'gone',
          ready: false,
          missing: true,
          reason: 'NotFound',
          children: [],
        },
      ],
    });
  });

  it.each([
    [{ ready: true }, 'green'],
    [{ ready: true, reconciling: true }, 'yellow'],
    [{ ready: false, reconciling: true }, 'yellow'],
    [{ ready: false, stalled: true }, 'red'],
    [{ ready: false }, 'red'],
    [{ ready: false, missing: true }, 'red'],
    [{ ready: true, paused: true }, 'yellow'],
  ] as [Partial<TraceNode>, string][])('%o: %s', (n, tone) => {
    expect(toneOf({ kind: 'X', name: 'x', reason: 'R', children: [], ready: false, ...n })).toBe(tone);
  });
});
