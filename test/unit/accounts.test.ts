// Which account an object uses, and which URLs an account may use: the pure decisions, by table.
import { describe, expect, it } from 'vitest';
import type { EdgeClient } from '../../src/api/client.ts';
import type { AccountRef } from '../../src/operator/kinds/accounts.ts';
import { accountDeleteStep } from '../../src/operator/runtime/accounts/plan.ts';
import { AccountRegistry } from '../../src/operator/runtime/accounts/registry.ts';
import {
  type AccountFacts,
  accountFlow,
  accountLabel,
  accountRefKey,
  admits,
  describeAccount,
  effectiveAccount,
  holdingAccount,
  INSTALLATION,
  resolveAccount,
  urlAllowed,
} from '../../src/operator/runtime/accounts/resolve.ts';
import { WorkQueue } from '../../src/operator/runtime/scheduler/workqueue.ts';
import { accountRefOf } from '../../src/operator/runtime/state/references.ts';

const facts = (o: {
  installation?: boolean;
  edge?: string[];
  cluster?: Record<string, { namespaces?: string[]; namespaceSelector?: Record<string, unknown> }>;
  labels?: Record<string, Record<string, string>>;
  adoptFrom?: string[];
}): AccountFacts => ({
  installationEnabled: o.installation ?? true,
  edgeAccountExists: (ns, name) => (o.edge ?? []).includes(`${ns}/${name}`),
  clusterAccount: (name) => o.cluster?.[name] as never,
  namespaceLabels: (ns) => o.labels?.[ns] ?? {},
  installationAdoptFrom: o.adoptFrom ?? [],
  operatorNamespace: 'edge-system',
});

describe('resolveAccount: accountRef, else the namespace default, else the installation', () => {
  const shared = {
    byName: { namespaces: ['team-a'] },
    byLabel: { namespaceSelector: { matchLabels: { tier: 'prod' } } },
    byExpr: {
      namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['prod', 'stage'] }] },
    },
    none: {},
  };
  const labels = { 'team-a': {}, 'team-b': { tier: 'prod' }, 'team-c': { tier: 'dev' } };
  const table: [string, string, AccountRef | undefined, Parameters<typeof facts>[0], string][] = [
    ['no ref, no default: the installation', 'team-a', undefined, {}, INSTALLATION],
    [
      'no ref, a default EdgeAccount',
      'team-a',
      undefined,
      { edge: ['team-a/default'] },
      'EdgeAccount/team-a/default',
    ],
    [
      "another namespace's default does not count",
      'team-b',
      undefined,
      { edge: ['team-a/default'] },
      INSTALLATION,
    ],
    ['no ref, installation off', 'team-a', undefined, { installation: false }, 'stalled NoAccount'],
    [
      'no ref, installation off, a default',
      'team-a',
      undefined,
      { installation: false, edge: ['team-a/default'] },
      'EdgeAccount/team-a/default',
    ],
    [
      'EdgeAccount ref',
      'team-a',
      { kind: 'EdgeAccount', name: 'prod' },
      { edge: ['team-a/prod'] },
      'EdgeAccount/team-a/prod',
    ],
    [
      'EdgeAccount ref over a default',
      'team-a',
      { kind: 'EdgeAccount', name: 'prod' },
      { edge: ['team-a/prod', 'team-a/default'] },
      'EdgeAccount/team-a/prod',
    ],
    [
      'EdgeAccount ref: only its own namespace',
      'team-b',
      { kind: 'EdgeAccount', name: 'prod' },
      { edge: ['team-a/prod'] },
      'progressing WaitingForAccount',
    ],
    [
      'EdgeAccount ref not there (yet)',
      'team-a',
      { kind: 'EdgeAccount', name: 'x' },
      {},
      'progressing WaitingForAccount',
    ],
    [
      'ClusterEdgeAccount by name',
      'team-a',
      { kind: 'ClusterEdgeAccount', name: 'byName' },
      { cluster: shared, labels },
      'ClusterEdgeAccount/byName',
    ],
    [
      'ClusterEdgeAccount not naming it',
      'team-b',
      { kind: 'ClusterEdgeAccount', name: 'byName' },
      { cluster: shared, labels },
      'stalled AccountNotAllowed',
    ],
    [
      'ClusterEdgeAccount by label',
      'team-b',
      { kind: 'ClusterEdgeAccount', name: 'byLabel' },
      { cluster: shared, labels },
      'ClusterEdgeAccount/byLabel',
    ],
    [
      'ClusterEdgeAccount label not matching',
      'team-c',
      { kind: 'ClusterEdgeAccount', name: 'byLabel' },
      { cluster: shared, labels },
      'stalled AccountNotAllowed',
    ],
    [
      'ClusterEdgeAccount by expression',
      'team-b',
      { kind: 'ClusterEdgeAccount', name: 'byExpr' },
      { cluster: shared, labels },
      'ClusterEdgeAccount/byExpr',
    ],
    [
      'ClusterEdgeAccount naming none admits none',
      'team-a',
      { kind: 'ClusterEdgeAccount', name: 'none' },
      { cluster: shared, labels },
      'stalled AccountNotAllowed',
    ],
    [
      'ClusterEdgeAccount not there (yet)',
      'team-a',
      { kind: 'ClusterEdgeAccount', name: 'x' },
      { cluster: shared },
      'progressing WaitingForAccount',
    ],
    [
      'a ref is honoured with the installation off',
      'team-a',
      { kind: 'ClusterEdgeAccount', name: 'byName' },
      { installation: false, cluster: shared },
      'ClusterEdgeAccount/byName',
    ],
  ];
  it.each(table)('%s', (_, ns, ref, f, want) => {
    const r = resolveAccount(ns, ref, facts(f));
    expect(r.ok ? r.id : `${r.state} ${r.reason}`).toBe(want);
  });

  it('says what to do, naming the namespace', () => {
    const r = resolveAccount('team-a', undefined, facts({ installation: false }));
    expect(!r.ok && r.message).toMatch(/spec.accountRef.*EdgeAccount named default in namespace team-a/);
    const n = resolveAccount(
      'team-b',
      { kind: 'ClusterEdgeAccount', name: 'byName' },
      facts({ cluster: shared }),
    );
    expect(!n.ok && n.message).toMatch(/ClusterEdgeAccount byName does not admit namespace team-b/);
  });
});

describe('admits: names and/or a selector; with neither, none', () => {
  const expr = (key: string, operator: string, values?: string[]) => ({
    namespaceSelector: { matchExpressions: [{ key, operator, values }] },
  });
  const table: [string, unknown, string, Record<string, string>, boolean][] = [
    ['named', { namespaces: ['a'] }, 'a', {}, true],
    ['not named', { namespaces: ['a'] }, 'b', {}, false],
    [
      'an empty selector admits no namespace (admission refuses it; one stored before does not open the account)',
      { namespaceSelector: {} },
      'b',
      {},
      false,
    ],
    ['neither names nor selector', {}, 'a', { any: 'x' }, false],
    ['Exists', expr('k', 'Exists'), 'a', { k: '' }, true],
    ['DoesNotExist', expr('k', 'DoesNotExist'), 'a', { k: 'v' }, false],
    ['NotIn', expr('k', 'NotIn', ['v']), 'a', { k: 'w' }, true],
    ['NotIn without the label', expr('k', 'NotIn', ['v']), 'a', {}, true],
    ['In without the label', expr('k', 'In', ['v']), 'a', {}, false],
    [
      'labels and expressions both must hold',
      {
        namespaceSelector: { matchLabels: { a: '1' }, matchExpressions: [{ key: 'b', operator: 'Exists' }] },
      },
      'a',
      { a: '1' },
      false,
    ],
    [
      'named or selected',
      { namespaces: ['x'], namespaceSelector: { matchLabels: { t: 'p' } } },
      'a',
      { t: 'p' },
      true,
    ],
  ];
  it.each(table)('%s', (_, account, ns, labels, want) => {
    expect(admits(account as Parameters<typeof admits>[0], ns, labels)).toBe(want);
  });
});

describe('effectiveAccount: a remote resource stays in the account holding it', () => {
  const table: [string, { id?: string; account?: string }, string, string][] = [
    ['no resource yet: the resolution', {}, 'EdgeAccount/ns/a', 'EdgeAccount/ns/a'],
    [
      'held where it resolves',
      { id: 'ipp_1', account: 'EdgeAccount/ns/a' },
      'EdgeAccount/ns/a',
      'EdgeAccount/ns/a',
    ],
    ['made before accounts: the installation', { id: 'ipp_1' }, INSTALLATION, INSTALLATION],
    [
      'made before accounts, now a default appears',
      { id: 'ipp_1' },
      'EdgeAccount/ns/default',
      'stalled AccountChanged',
    ],
    [
      'held elsewhere',
      { id: 'ipp_1', account: INSTALLATION },
      'ClusterEdgeAccount/s',
      'stalled AccountChanged',
    ],
  ];
  it.each(table)('%s', (_, recorded, resolved, want) => {
    const r = effectiveAccount(recorded, { ok: true, id: resolved });
    expect(r.ok ? r.id : `${r.state} ${r.reason}`).toBe(want);
  });
  it('names both accounts', () => {
    const r = effectiveAccount({ id: 'ipp_1' }, { ok: true, id: 'EdgeAccount/ns/default' });
    expect(!r.ok && r.message).toMatch(/ipp_1 is in the installation's account.*EdgeAccount ns\/default/);
  });
});

describe('holdingAccount: the account a delete uses, from status', () => {
  it.each([
    ['no resource: none', {}, undefined],
    ['made before accounts: the installation', { id: 'ipp_1' }, INSTALLATION],
    ['its own namespace’s EdgeAccount', { id: 'ipp_1', account: 'EdgeAccount/ns/a' }, 'EdgeAccount/ns/a'],
    ['a ClusterEdgeAccount', { id: 'ipp_1', account: 'ClusterEdgeAccount/s' }, 'ClusterEdgeAccount/s'],
    [
      'another namespace’s EdgeAccount (a tampered status): resolved instead',
      { id: 'ipp_1', account: 'EdgeAccount/other/a' },
      undefined,
    ],
    [
      'a namespace whose name starts the same: resolved instead',
      { id: 'ipp_1', account: 'EdgeAccount/ns-b/a' },
      undefined,
    ],
  ] as [string, { id?: string; account?: string }, string | undefined][])('%s', (_, recorded, want) => {
    expect(holdingAccount(recorded, 'ns')).toBe(want);
  });
});

describe('urlAllowed: the installation URL and the allow-list, nothing else', () => {
  const table: [string, string[], boolean][] = [
    ['https://api.example.com', [], true],
    ['https://api.example.com/', [], true],
    ['https://other.example.com', [], false],
    ['https://other.example.com', ['https://other.example.com/'], true],
    ['https://other.example.com/v2', ['https://other.example.com'], false],
    ['http://api.example.com', [], false],
    ['https://user:pw@api.example.com', [], false],
    ['https://api.example.com?x=1', [], false],
    ['not a url', [], false],
    ['file:///etc/passwd', ['file:///etc/passwd'], false],
  ];
  it.each(table)('%s with %j', (url, allowed, want) => {
    expect(urlAllowed(url, 'https://api.example.com', allowed)).toBe(want);
  });
});

describe('names of accounts', () => {
  it('for people, for the reverse index and for metrics', () => {
    expect(describeAccount('EdgeAccount/team/default')).toBe('EdgeAccount team/default');
    expect(describeAccount('ClusterEdgeAccount/shared')).toBe('ClusterEdgeAccount shared');
    expect(accountRefKey('ClusterEdgeAccount/shared')).toBe('ClusterEdgeAccount//shared');
    expect(accountRefKey(INSTALLATION)).toBeUndefined();
    expect(accountLabel('EdgeAccount/team/default')).toBe('EdgeAccount/team/default');
    expect(accountLabel(INSTALLATION)).toBe('installation');
    const o = (spec: Record<string, unknown>) => ({ metadata: { name: 'x', namespace: 'team' }, spec });
    expect(accountRefOf(o({}))).toBe('EdgeAccount/team/default');
    expect(accountRefOf(o({ accountRef: { kind: 'ClusterEdgeAccount', name: 's' } }))).toBe(
      accountRefKey('ClusterEdgeAccount/s'),
    );
  });
});

describe('the account queue takes turns by namespace', () => {
  it('one namespace’s thousand accounts do not hold back another namespace’s one, nor a cluster account', async () => {
    const q = new WorkQueue<string>({ name: 'account', flowOf: accountFlow });
    for (let i = 0; i < 1000; i++) q.add(`EdgeAccount/noisy/a${i}`);
    q.add('EdgeAccount/quiet/default');
    q.add('ClusterEdgeAccount/shared');
    const first: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = (await q.get())!;
      first.push(id);
      q.done(id);
    }
    expect(first).toEqual(expect.arrayContaining(['EdgeAccount/quiet/default', 'ClusterEdgeAccount/shared']));
    await q.shutdown(0);
  });
});

describe('AccountRegistry: a client per account, the budget the account’s', () => {
  const made: { url: string; key: string; closed: boolean }[] = [];
  const registry = () =>
    new AccountRegistry({
      client: (a) => {
        const c = { url: a.url, key: a.key, closed: false };
        made.push(c);
        return {
          transport: { budget: a.budget },
          close: async () => {
            c.closed = true;
          },
          // what the registry hands out; requests are counted through onCall
          call: (status: number) =>
            a.onCall({ operation: 'x', method: 'GET', status, durationMs: 1, attempt: 1 }),
        } as unknown as EdgeClient;
      },
    });

  it('waits until checked; a delete takes the last key the API accepted, also after a rotation to a key not accepted yet', async () => {
    const r = registry();
    expect(r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k1', perMinute: 120 })).toBe('new');
    expect('phase' in r.use('EdgeAccount/t/a')).toBe(true);
    expect(r.use('EdgeAccount/t/a', true)).toMatchObject({
      phase: { reason: 'WaitingForAccount', message: expect.stringContaining('EdgeAccount t/a') },
    });
    r.mark('EdgeAccount/t/a', true);
    const first = r.get('EdgeAccount/t/a')!;
    // its Secret went: no new work, but deletes still go
    r.mark('EdgeAccount/t/a', false, { state: 'stalled', reason: 'KeySecretNotFound', message: 'gone' });
    expect('phase' in r.use('EdgeAccount/t/a')).toBe(true);
    expect('client' in r.use('EdgeAccount/t/a', true)).toBe(true);
    const budget = first.budget;
    const accepted = first.client;
    expect(r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k2', perMinute: 120 })).toBe('rotated');
    await new Promise((res) => setImmediate(res));
    expect(r.get('EdgeAccount/t/a')!.budget).toBe(budget);
    // the new key is not accepted yet (or never is: a wrong key): deletes go on with the old one
    r.mark('EdgeAccount/t/a', false, { state: 'stalled', reason: 'KeyRefused', message: '401' });
    expect('phase' in r.use('EdgeAccount/t/a')).toBe(true);
    expect(r.use('EdgeAccount/t/a', true)).toMatchObject({ client: accepted });
    expect(made.at(-2)!.closed).toBe(false);
    // another key, not accepted either: it goes, the accepted one stays
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k3', perMinute: 120 });
    await new Promise((res) => setImmediate(res));
    expect(made.at(-2)!.closed).toBe(true);
    expect(r.use('EdgeAccount/t/a', true)).toMatchObject({ client: accepted });
    // once the API accepts the new key, the old client is closed and the new one serves
    r.mark('EdgeAccount/t/a', true);
    await new Promise((res) => setImmediate(res));
    expect(made.at(-3)!.closed).toBe(true);
    expect(r.use('EdgeAccount/t/a', true)).toMatchObject({ client: r.get('EdgeAccount/t/a')!.client });
    await r.remove('EdgeAccount/t/a');
    expect(made.at(-1)!.closed).toBe(true);
    expect(r.get('EdgeAccount/t/a')).toBeUndefined();
  });

  it('counts the last minute’s requests and 429s of each API account apart (one key, one count)', () => {
    const r = registry();
    r.set('ClusterEdgeAccount/s', { url: 'https://api', key: 'k', perMinute: 120 });
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k2', perMinute: 120 });
    r.set('EdgeAccount/t/b', { url: 'https://api', key: 'k2', perMinute: 120 });
    const call = (id: string, status: number) =>
      (r.get(id)!.client as unknown as { call(s: number): void }).call(status);
    call('ClusterEdgeAccount/s', 200);
    call('ClusterEdgeAccount/s', 429);
    call('EdgeAccount/t/a', 200);
    expect(r.lastMinute('ClusterEdgeAccount/s')).toEqual({ requests: 2, throttled: 1 });
    expect(r.lastMinute('EdgeAccount/t/a')).toEqual({ requests: 1, throttled: 0 });
    expect(r.lastMinute('EdgeAccount/t/b')).toEqual({ requests: 1, throttled: 0 });
    expect(r.lastMinute('ClusterEdgeAccount/s', Date.now() + 61_000)).toEqual({ requests: 0, throttled: 0 });
  });
});

describe('accountDeleteStep: a deleted account goes once nothing holds a resource in it, as every cache shows', () => {
  it.each([
    { holding: 3, caughtUp: true, step: 'keep' },
    { holding: 0, caughtUp: true, step: 'release' },
    // an operator restarted while the namespace terminates lists the accounts before their
    // objects: none counted yet is not none holding (letting go stranded them all)
    { holding: 0, caughtUp: false, step: 'wait-for-caches' },
    { holding: 1, caughtUp: false, step: 'keep' },
  ])('holding $holding, every cache listed $caughtUp: $step', ({ holding, caughtUp, step }) => {
    expect(accountDeleteStep(holding, caughtUp)).toBe(step);
  });
});
