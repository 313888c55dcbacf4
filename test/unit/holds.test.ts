// The operator's holds for a namespace's deletion (holds.ts, access.ts, accounts/key-hold.ts):
// when its finalizer goes on, and comes off, a key Secret and its RoleBinding.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { KeyHolds, keyNeeded } from '../../src/operator/runtime/accounts/key-hold.ts';
import { FINALIZER } from '../../src/operator/runtime/constants.ts';
import { finalizersWith } from '../../src/operator/runtime/kube/finalizer.ts';
import { ACCESS_FINALIZER, KEY_FINALIZER, keepHold } from '../../src/operator/runtime/kube/holds.ts';
import { type Kube, KubeError, type KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { accessNeeded, awaitingIn } from '../../src/operator/runtime/manager/access.ts';

/** One Secret behind an API server that takes a few milliseconds per request, with resourceVersions. */
function oneSecret() {
  let finalizers: string[] = [];
  let rv = 1;
  const tick = () => new Promise((r) => setTimeout(r, 5));
  const kube = {
    get: async () => {
      await tick();
      return { metadata: { name: 'key', namespace: 'team', resourceVersion: String(rv), finalizers } };
    },
    patch: async (_r: unknown, _ns: string, _name: string, body: { metadata: KubeObject['metadata'] }) => {
      await tick();
      if (body.metadata.resourceVersion !== String(rv)) throw new KubeError(409, 'modified', 'Conflict');
      finalizers = body.metadata.finalizers ?? [];
      rv++;
      return {};
    },
  };
  return { kube: kube as unknown as Kube, finalizers: () => finalizers };
}

describe('key holds with accounts looked at by several workers at once', () => {
  it("one account's release decided before another's hold on the same Secret does not land after it", async () => {
    const { kube, finalizers } = oneSecret();
    const holds = new KeyHolds({ kube, log: pino({ level: 'silent' }) });
    const use = (holding: number) => ({ namespace: 'team', secret: 'key', holding });
    await holds.update('EdgeAccount/team/x', use(1), true);
    expect(finalizers()).toEqual([KEY_FINALIZER]);
    // x goes (its release begins), and meanwhile y, on the same Secret, takes its first object
    const x = holds.update('EdgeAccount/team/x', undefined, true);
    await new Promise((r) => setTimeout(r, 1));
    const y = holds.update('EdgeAccount/team/y', use(1), true);
    await Promise.all([x, y]);
    expect(finalizers()).toEqual([KEY_FINALIZER]);
    // and when y lets go too, the Secret is released
    await holds.update('EdgeAccount/team/y', use(0), true);
    expect(finalizers()).toEqual([]);
  });
});

describe('key holds keep nothing for accounts that are gone', () => {
  it('a tenant making and deleting accounts in a loop leaves no entry behind; a held Secret stays known', async () => {
    const { kube, finalizers } = oneSecret();
    const holds = new KeyHolds({ kube, log: pino({ level: 'silent' }) });
    const known = () => (holds.holds as unknown as { known: Map<string, boolean> }).known;
    for (let i = 0; i < 20; i++) {
      await holds.update(
        `EdgeAccount/team/a${i}`,
        { namespace: 'team', secret: `key-${i}`, holding: 0 },
        true,
      );
      await holds.update(`EdgeAccount/team/a${i}`, undefined, true);
    }
    expect(known().size).toBe(0);
    await holds.update('EdgeAccount/team/x', { namespace: 'team', secret: 'key', holding: 1 }, true);
    expect(finalizers()).toEqual([KEY_FINALIZER]);
    expect([...known()]).toEqual([['team/key', true]]);
  });
});

describe('finalizersWith', () => {
  it.each([
    { current: undefined, hold: true, out: [ACCESS_FINALIZER] },
    { current: [], hold: true, out: [ACCESS_FINALIZER] },
    { current: ['other'], hold: true, out: ['other', ACCESS_FINALIZER] },
    { current: ['other', ACCESS_FINALIZER], hold: true, out: undefined },
    { current: ['other', ACCESS_FINALIZER], hold: false, out: ['other'] },
    { current: [ACCESS_FINALIZER], hold: false, out: [] },
    { current: ['other'], hold: false, out: undefined },
    { current: undefined, hold: false, out: undefined },
  ])('$current, hold $hold: $out', ({ current, hold, out }) => {
    expect(finalizersWith(current, ACCESS_FINALIZER, hold)).toEqual(out);
  });
});

describe('keepHold: held while needed; on shutdown only where the namespace is being deleted', () => {
  it.each([
    { needed: true, shuttingDown: false, terminating: false, keep: true },
    { needed: true, shuttingDown: false, terminating: true, keep: true },
    { needed: false, shuttingDown: false, terminating: true, keep: false },
    { needed: false, shuttingDown: false, terminating: false, keep: false },
    // a restart while the namespace terminates: the next operator needs the key and the rights
    { needed: true, shuttingDown: true, terminating: true, keep: true },
    // an uninstall (or a restart) elsewhere: nothing left Terminating on a finalizer of nobody
    { needed: true, shuttingDown: true, terminating: false, keep: false },
    { needed: false, shuttingDown: true, terminating: true, keep: false },
  ])('needed $needed, shutting down $shuttingDown, terminating $terminating: $keep', (c) => {
    expect(keepHold(c)).toBe(c.keep);
  });
});

describe('keyNeeded: a key Secret is held while an account reading it has objects holding remote resources', () => {
  const use = (namespace: string, secret: string, holding: number) => ({ namespace, secret, holding });
  it.each([
    { uses: [], need: false },
    { uses: [use('t', 'key', 0)], need: false },
    { uses: [use('t', 'key', 2)], need: true },
    // two accounts on one Secret: it goes when the last lets go
    { uses: [use('t', 'key', 0), use('t', 'key', 1)], need: true },
    // the same name in another namespace, another Secret of the namespace
    { uses: [use('u', 'key', 3), use('t', 'other', 3)], need: false },
  ])('$uses: $need', ({ uses, need }) => {
    expect(keyNeeded(uses, 't', 'key')).toBe(need);
  });
});

describe('the RoleBinding is held while anything in its namespace awaits the operator', () => {
  const o = (ns: string, finalizers?: string[], deleting = false): KubeObject => ({
    metadata: {
      name: 'x',
      namespace: ns,
      finalizers,
      ...(deleting ? { deletionTimestamp: '2026-11-26T00:00:00Z' } : {}),
    },
  });
  const inf = (...objs: KubeObject[]) => ({ list: () => objs });
  it.each([
    { what: 'nothing', informers: [], key: false, n: 0 },
    {
      what: 'an object without the finalizer',
      informers: [inf(o('t'), o('t', ['other']))],
      key: false,
      n: 0,
    },
    {
      what: 'objects with it, one being deleted',
      informers: [inf(o('t', [FINALIZER]), o('t', [FINALIZER], true))],
      key: false,
      n: 2,
    },
    {
      what: 'an EdgeAccount with it (another informer)',
      informers: [inf(), inf(o('t', [FINALIZER]))],
      key: false,
      n: 1,
    },
    {
      what: 'only objects of other namespaces',
      informers: [inf(o('u', [FINALIZER]), o('', [FINALIZER]))],
      key: false,
      n: 0,
    },
    { what: 'a key Secret it holds there', informers: [], key: true, n: 1 },
  ])('$what: $n', ({ informers, key, n }) => {
    const awaiting = awaitingIn(['t', 'u'], informers, { heldIn: (ns) => key && ns === 't' }).get('t')!;
    expect(awaiting).toBe(n);
    expect(accessNeeded(awaiting)).toBe(n > 0);
  });
});
