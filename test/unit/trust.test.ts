// A shared account is one trust domain: who may take, read or delete what no object of its
// namespace made, which accounts a namespace may use (status.account is checked against it),
// and the bounds on the accounts tenants make. Tables of the pure decisions.
import { describe, expect, it } from 'vitest';
import type { EdgeClient } from '../../src/api/client.ts';
import { isReachableId } from '../../src/api/limits.ts';
import { edgeAccountRefusal } from '../../src/operator/runtime/accounts/limits.ts';
import { AccountRegistry } from '../../src/operator/runtime/accounts/registry.ts';
import {
  type AccountFacts,
  admits,
  effectiveAccount,
  forgedAccount,
  holdingAccount,
  INSTALLATION,
  mayAdopt,
  mayHold,
  mayUse,
} from '../../src/operator/runtime/accounts/resolve.ts';
import { encodeMetadata, type Owner } from '../../src/operator/runtime/bindings/owner.ts';
import { adoptionRefused } from '../../src/operator/runtime/engine/plan.ts';
import { deleteGuard } from '../../src/operator/runtime/engine/plan-delete.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

const facts = (o: { installation?: boolean; adoptFrom?: string[] } = {}): AccountFacts => ({
  installationEnabled: o.installation ?? true,
  installationAdoptFrom: o.adoptFrom ?? [],
  operatorNamespace: 'edge-system',
  edgeAccountExists: (ns, name) => `${ns}/${name}` === 'team-a/default',
  clusterAccount: (name) =>
    name === 'b-only'
      ? { namespaces: ['team-b'], adoptFrom: ['team-b'] }
      : name === 'shared'
        ? { namespaces: ['team-a', 'team-b'] }
        : undefined,
  namespaceLabels: () => ({}),
});

describe('mayUse: the accounts a namespace may use (what status.account may name)', () => {
  const table: [string, string, string, boolean, ReturnType<typeof facts>][] = [
    ['the installation, on', INSTALLATION, 'team-a', true, facts()],
    ['the installation, off', INSTALLATION, 'team-a', false, facts({ installation: false })],
    ['its own EdgeAccount', 'EdgeAccount/team-a/default', 'team-a', true, facts()],
    ["another namespace's EdgeAccount", 'EdgeAccount/team-a/default', 'team-b', false, facts()],
    ['an EdgeAccount that does not exist', 'EdgeAccount/team-a/other', 'team-a', false, facts()],
    ['a ClusterEdgeAccount that admits it', 'ClusterEdgeAccount/b-only', 'team-b', true, facts()],
    ['a ClusterEdgeAccount that does not', 'ClusterEdgeAccount/b-only', 'team-a', false, facts()],
    ['a ClusterEdgeAccount that does not exist', 'ClusterEdgeAccount/gone', 'team-a', false, facts()],
    ['nonsense', 'Secret/x', 'team-a', false, facts()],
  ];
  it.each(table)('%s', (_, id, ns, expected, f) => expect(mayUse(id, ns, f)).toBe(expected));
});

describe('mayAdopt: who may reach what no object of theirs made', () => {
  const table: [string, string, string, boolean, ReturnType<typeof facts>][] = [
    ['installation, default: the operator namespace', INSTALLATION, 'edge-system', true, facts()],
    ['installation, default: not a tenant', INSTALLATION, 'team-a', false, facts()],
    ['installation, listed', INSTALLATION, 'team-a', true, facts({ adoptFrom: ['team-a'] })],
    [
      'installation, a list without the operator namespace',
      INSTALLATION,
      'edge-system',
      false,
      facts({ adoptFrom: ['team-a'] }),
    ],
    ['installation, every namespace', INSTALLATION, 'team-z', true, facts({ adoptFrom: ['*'] })],
    ['its own EdgeAccount: its own key', 'EdgeAccount/team-a/default', 'team-a', true, facts()],
    ["another namespace's EdgeAccount", 'EdgeAccount/team-a/default', 'team-b', false, facts()],
    ['a ClusterEdgeAccount, listed', 'ClusterEdgeAccount/b-only', 'team-b', true, facts()],
    ['a ClusterEdgeAccount, not listed', 'ClusterEdgeAccount/shared', 'team-a', false, facts()],
    ['a ClusterEdgeAccount, the platform', 'ClusterEdgeAccount/shared', 'edge-system', true, facts()],
  ];
  it.each(table)('%s', (_, id, ns, expected, f) => expect(mayAdopt(id, ns, f)).toBe(expected));
});

describe('status.account is not an authority', () => {
  const usable = (id: string) => mayUse(id, 'team-a', facts());
  it('a delete goes to the holding account only when the namespace may use it', () => {
    expect(holdingAccount({ id: 'ipp_1', account: 'ClusterEdgeAccount/shared' }, 'team-a', usable)).toBe(
      'ClusterEdgeAccount/shared',
    );
    expect(holdingAccount({ id: 'ipp_1', account: 'ClusterEdgeAccount/b-only' }, 'team-a', usable)).toBe(
      undefined,
    );
    expect(forgedAccount({ id: 'ipp_1', account: 'ClusterEdgeAccount/b-only' }, usable)).toBe(
      'ClusterEdgeAccount/b-only',
    );
    expect(forgedAccount({ id: 'ipp_1', account: INSTALLATION }, usable)).toBe(undefined);
  });
  it('a forged account is not "AccountChanged": the object works in the account it resolves to', () => {
    const resolved = { ok: true as const, id: INSTALLATION };
    expect(effectiveAccount({ id: 'ipp_1', account: 'ClusterEdgeAccount/b-only' }, resolved, usable)).toEqual(
      resolved,
    );
    const held = effectiveAccount({ id: 'ipp_1', account: 'ClusterEdgeAccount/shared' }, resolved, usable);
    expect(held.ok ? held.id : held.reason).toBe('AccountChanged');
  });
});

describe('adoptionRefused: a resource no object of the namespace made', () => {
  const self: Owner = { cluster: 'c1', uid: 'u1', object: 'IPPolicy/team-a/office' };
  const table: [string, Owner | undefined, boolean | undefined, string | undefined][] = [
    ['unmarked, the namespace may adopt', undefined, true, undefined],
    ['unmarked, it may not', undefined, false, 'AdoptionNotAllowed'],
    ['its own (uid)', { ...self, object: 'IPPolicy/team-a/renamed' }, false, undefined],
    ['its own after a restore (name)', { ...self, uid: 'u0' }, false, undefined],
    [
      'an object of its namespace made it',
      { cluster: 'c1', uid: 'u9', object: 'IPPolicy/team-a/x' },
      false,
      undefined,
    ],
    [
      'an object of another namespace made it',
      { cluster: 'c1', uid: 'u9', object: 'IPPolicy/platform/x' },
      false,
      'AdoptionNotAllowed',
    ],
    [
      'another installation made it',
      { cluster: 'c2', uid: 'u1', object: 'IPPolicy/team-a/office' },
      false,
      'AdoptionNotAllowed',
    ],
    ['no account check (no accounts)', undefined, undefined, undefined],
  ];
  it.each(table)('%s', (_, marker, may, reason) => {
    const r = adoptionRefused('ipp_1', marker, self, 'team-a', may, 'taking it over');
    expect(r?.reason).toBe(reason);
    if (r) expect(r.message).toContain('spec.adoptFrom');
  });

  it('the delete guard keeps an unmarked resource the namespace may not adopt', () => {
    const seen = { found: true as const, remote: { id: 'ipp_1', metadata: '' } as never };
    const g = (mayAdopt: boolean) =>
      deleteGuard({ id: 'ipp_1', self, namespace: 'team-a', evidence: seen, mayAdopt }).action;
    expect(g(false)).toBe('release');
    expect(g(true)).toBe('delete');
    const mine = {
      found: true as const,
      remote: { id: 'ipp_1', metadata: encodeMetadata(self, '') } as never,
    };
    expect(
      deleteGuard({ id: 'ipp_1', self, namespace: 'team-a', evidence: mine, mayAdopt: false }).action,
    ).toBe('delete');
  });
});

describe('isReachableId: the ids that reach into an account', () => {
  it.each([
    ['ipp_2Ab', true],
    ['bkdtg_x1', true],
    ['edghtsrt_9', true],
    ['ca_1', false],
    ['usr_1', false],
    ['my-oauth-client-ID', false],
    ['ipp_', false],
  ])('%s: %s', (id, expected) => expect(isReachableId(id)).toBe(expected));
});

describe('edgeAccountRefusal: the bounds on the accounts tenants make', () => {
  const limits = { maxPerNamespace: 2, maxRatePerMinute: 120 };
  const acct = (name: string, at: string, o: { rate?: number; deleting?: boolean } = {}): KubeObject => ({
    metadata: {
      name,
      namespace: 'team-a',
      uid: `uid-${name}`,
      creationTimestamp: at,
      ...(o.deleting ? { deletionTimestamp: at } : {}),
    },
    spec: { ...(o.rate ? { rateLimitPerMinute: o.rate } : {}) },
  });
  const a = acct('a', '2026-01-01T00:00:01Z');
  const b = acct('b', '2026-01-01T00:00:02Z');
  const c = acct('c', '2026-01-01T00:00:03Z');
  it('the oldest are served; a newer one is AccountLimit', () => {
    expect(edgeAccountRefusal(a, [c, b, a], limits)).toBeUndefined();
    expect(edgeAccountRefusal(b, [c, b, a], limits)).toBeUndefined();
    expect(edgeAccountRefusal(c, [c, b, a], limits)?.reason).toBe('AccountLimit');
  });
  it('one being deleted frees its place', () => {
    const gone = acct('a', '2026-01-01T00:00:01Z', { deleting: true });
    expect(edgeAccountRefusal(c, [c, b, gone], limits)).toBeUndefined();
  });
  it('a budget above the installation bound is refused, naming the field', () => {
    const r = edgeAccountRefusal(acct('a', '2026-01-01T00:00:01Z', { rate: 1_000_000 }), [a], limits);
    expect(r?.reason).toBe('RateLimitNotAllowed');
    expect(r?.message).toContain('spec.rateLimitPerMinute 1000000');
    expect(edgeAccountRefusal(acct('a', '2026-01-01T00:00:01Z', { rate: 120 }), [a], limits)).toBeUndefined();
  });
});

describe('admits: an empty namespaceSelector admits no namespace', () => {
  it.each([
    [{ namespaceSelector: {} }, false],
    [{ namespaceSelector: { matchLabels: {} } }, false],
    [{ namespaceSelector: { matchExpressions: [] } }, false],
    [{ namespaceSelector: { matchLabels: { team: 'a' } } }, true],
    [{ namespaces: ['team-a'], namespaceSelector: {} }, true],
  ])('%j: %s', (account, expected) => expect(admits(account, 'team-a', { team: 'a' })).toBe(expected));
});

describe('AccountRegistry: account objects on one key share one client, one budget, one observation', () => {
  const clients: { key: string; closed: boolean }[] = [];
  const registry = () =>
    new AccountRegistry({
      client: (a) => {
        const c = { key: a.key, closed: false };
        clients.push(c);
        return {
          transport: { budget: a.budget },
          close: async () => {
            c.closed = true;
          },
        } as unknown as EdgeClient;
      },
    });
  const A = 'EdgeAccount/t/a';
  const B = 'EdgeAccount/t/b';
  const C = 'EdgeAccount/u/c';

  it('a second account on the same URL and key takes no client of its own', () => {
    const r = registry();
    const before = clients.length;
    expect(r.set(A, { url: 'https://api', key: 'k1', perMinute: 60 })).toBe('new');
    expect(r.set(B, { url: 'https://api', key: 'k1', perMinute: 60 })).toBe('same');
    expect(r.set(C, { url: 'https://api', key: 'k1', perMinute: 600 })).toBe('same');
    expect(clients.length - before).toBe(1);
    expect(r.size).toBe(1);
    expect(r.get(B)).toBe(r.get(A));
    // the key's budget is one, whatever each object says
    expect(r.get(C)!.budget.perMinute).toBe(60);
    r.mark(B, true);
    expect('client' in r.use(A)).toBe(true);
    // another URL is another API account
    expect(r.set('EdgeAccount/t/d', { url: 'https://other', key: 'k1', perMinute: 60 })).toBe('new');
    expect(r.size).toBe(2);
  });

  it('the holder going or changing key leaves the others to make their own, told to onUnshared', async () => {
    const r = registry();
    const told: string[] = [];
    r.onUnshared = (ids) => told.push(...ids);
    r.set(A, { url: 'https://api', key: 'k1', perMinute: 60 });
    r.set(B, { url: 'https://api', key: 'k1', perMinute: 60 });
    r.set(C, { url: 'https://api', key: 'k1', perMinute: 60 });
    // an alias that goes takes nothing with it
    await r.remove(C);
    expect(r.get(A)).toBeDefined();
    expect(told).toEqual([]);
    // the holder rotates its key: B keeps the old one, so B is on its own again
    expect(r.set(A, { url: 'https://api', key: 'k2', perMinute: 60 })).toBe('rotated');
    expect(told).toEqual([B]);
    expect(r.get(B)).toBeUndefined();
    expect(r.set(B, { url: 'https://api', key: 'k1', perMinute: 60 })).toBe('new');
    expect(r.get(B)).not.toBe(r.get(A));
    // and the other way round: an alias changing its key leaves the holder as it was
    r.set(C, { url: 'https://api', key: 'k2', perMinute: 60 });
    expect(r.get(C)).toBe(r.get(A));
    expect(r.set(C, { url: 'https://api', key: 'k3', perMinute: 60 })).toBe('new');
    expect(r.get(A)!.keyDigest).not.toBe(r.get(C)!.keyDigest);
    await r.remove(A);
    expect(r.get(A)).toBeUndefined();
  });
});

describe('AccountRegistry: an account refused before it holds a client says why to its objects', () => {
  it('AccountLimit reaches the objects waiting for it, and goes with the account', async () => {
    const r = new AccountRegistry({ client: () => ({}) as never });
    const id = 'EdgeAccount/t/a4';
    expect(r.use(id)).toMatchObject({ phase: { message: expect.stringContaining('not checked yet') } });
    r.mark(id, false, {
      state: 'stalled',
      reason: 'AccountLimit',
      message: 'namespace t has 5 EdgeAccounts',
    });
    expect(r.use(id)).toMatchObject({
      phase: {
        reason: 'WaitingForAccount',
        message: expect.stringContaining('AccountLimit: namespace t has 5'),
      },
    });
    await r.remove(id);
    expect(r.use(id)).toMatchObject({ phase: { message: expect.stringContaining('not checked yet') } });
  });
});

describe('AccountRegistry: every change that can let kept-back work go says so (onRoom)', () => {
  it('an entry removed, its budget replaced, or an alias unshared', async () => {
    const r = new AccountRegistry({
      client: (a) => ({ transport: { budget: a.budget }, close: async () => {} }) as unknown as EdgeClient,
    });
    const told: string[] = [];
    r.onRoom = (id) => told.push(id);
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k', perMinute: 60 });
    r.set('EdgeAccount/t/b', { url: 'https://api', key: 'k', perMinute: 60 });
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k', perMinute: 120 });
    await new Promise((res) => queueMicrotask(() => res(undefined)));
    expect(told).toContain('EdgeAccount/t/a');
    told.length = 0;
    await r.remove('EdgeAccount/t/a');
    expect(told.sort()).toEqual(['EdgeAccount/t/a', 'EdgeAccount/t/b']);
  });
});

describe('mayHold: what status.account may name', () => {
  const ref = { kind: 'ClusterEdgeAccount' as const, name: 'b-only' };
  it.each([
    ['an account the namespace may use', 'ClusterEdgeAccount/b-only', 'team-b', undefined, true],
    [
      'one that no longer admits it, named by its accountRef (its deletes still go there)',
      'ClusterEdgeAccount/b-only',
      'team-a',
      ref,
      true,
    ],
    [
      'one that does not admit it, named by status alone',
      'ClusterEdgeAccount/b-only',
      'team-a',
      undefined,
      false,
    ],
    [
      'its accountRef names an account that is gone',
      'ClusterEdgeAccount/gone',
      'team-a',
      { ...ref, name: 'gone' },
      false,
    ],
  ] as const)('%s', (_, id, ns, r, expected) => expect(mayHold(id, ns, r, facts())).toBe(expected));
});

describe('AccountRegistry: an account sharing another entry decides nothing for it', () => {
  it('refused (its limit, its Secret), it stops sharing; the holder serves on', () => {
    const r = new AccountRegistry({
      client: (a) => ({ transport: { budget: a.budget }, close: async () => {} }) as unknown as EdgeClient,
    });
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k', perMinute: 60 });
    r.mark('EdgeAccount/t/a', true);
    r.set('EdgeAccount/u/b', { url: 'https://api', key: 'k', perMinute: 60 });
    r.mark('EdgeAccount/u/b', false, {
      state: 'stalled',
      reason: 'RateLimitNotAllowed',
      message: 'too high',
    });
    expect('client' in r.use('EdgeAccount/t/a')).toBe(true);
    expect(r.use('EdgeAccount/u/b')).toMatchObject({
      phase: { message: expect.stringContaining('RateLimitNotAllowed') },
    });
  });
});

describe('the bounds never keep an account being deleted from serving its deletes', () => {
  it('one over the rate bound, being deleted, is served', () => {
    const deleting: KubeObject = {
      metadata: { name: 'a', namespace: 't', uid: 'u', deletionTimestamp: '2026-01-01T00:00:00Z' },
      spec: { rateLimitPerMinute: 1_000_000 },
    };
    expect(
      edgeAccountRefusal(deleting, [deleting], { maxPerNamespace: 1, maxRatePerMinute: 120 }),
    ).toBeUndefined();
  });
});

describe('AccountRegistry: a holder refused for its own reasons leaves the others to go their own way', () => {
  it('the others are told to set their own entry', () => {
    const r = new AccountRegistry({
      client: (a) => ({ transport: { budget: a.budget }, close: async () => {} }) as unknown as EdgeClient,
    });
    const told: string[] = [];
    r.onUnshared = (ids) => told.push(...ids);
    r.set('EdgeAccount/t/a', { url: 'https://api', key: 'k', perMinute: 60 });
    r.set('EdgeAccount/u/b', { url: 'https://api', key: 'k', perMinute: 60 });
    r.mark('EdgeAccount/t/a', false, { state: 'stalled', reason: 'AccountLimit', message: 'over' });
    expect(told).toEqual(['EdgeAccount/u/b']);
    expect(r.get('EdgeAccount/u/b')).toBeUndefined();
  });
});
