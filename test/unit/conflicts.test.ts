// Conflicts between objects, decided without a server: which object keeps what the API keeps
// unique, what the other is told, and what is never a conflict.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { BINDINGS } from '../../src/operator/kinds/index.ts';
import { encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { remoteDigest } from '../../src/operator/runtime/engine/memo.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { ConflictKeys, findConflict, listedConflictKey } from '../../src/operator/runtime/state/conflicts.ts';
import { idsUnder, Observer } from '../../src/operator/runtime/state/observer.ts';

const RULE = BINDINGS.find((b) => b.kind === 'IPPolicyRule')!;
const CLUSTER = 'c1';
let n = 0;
const rule = (
  name: string,
  cidr: string,
  o: { ns?: string; id?: string; at?: string; policy?: string } = {},
): KubeObject => ({
  metadata: {
    name,
    namespace: o.ns ?? 'team',
    uid: `uid-${name}-${o.ns ?? 'team'}`,
    resourceVersion: String(++n),
    creationTimestamp: o.at ?? '2026-11-24T00:00:00Z',
  },
  spec: { ipPolicyID: o.policy ?? 'ipp_1', cidr, action: 'allow' },
  ...(o.id ? { status: { id: o.id } } : {}),
});
const remote = (id: string, cidr: string, owner?: { uid: string; object: string; cluster?: string }) => ({
  id,
  remote: {
    id,
    cidr,
    action: 'allow',
    ip_policy: { id: 'ipp_1' },
    metadata: owner
      ? encodeMetadata({ cluster: owner.cluster ?? CLUSTER, uid: owner.uid, object: owner.object }, '')
      : '',
  },
});

function check(
  self: KubeObject,
  others: KubeObject[],
  remotes: ReturnType<typeof remote>[] = [],
  holds?: string,
  mayAdopt?: boolean,
) {
  const all = [self, ...others];
  const key = RULE.conflict!.key(RULE.desired(self.spec as never, () => ''));
  return findConflict({
    binding: RULE,
    self,
    key,
    holds,
    selfId: (self.status as { id?: string } | undefined)?.id,
    mayAdopt,
    others: new ConflictKeys(RULE).of(all, () => () => 'unused').holding(key, () => () => 'unused'),
    live: new Set(all.map((o) => o.metadata.uid!)),
    remotes,
    clusterId: CLUSTER,
  });
}

describe('findConflict', () => {
  const cases: [string, () => ReturnType<typeof check>, string | undefined][] = [
    ['no other object, no remote: none', () => check(rule('a', '10.0.0.0/8'), []), undefined],
    [
      'another CIDR in the same policy: none',
      () => check(rule('a', '10.0.0.0/8'), [rule('b', '10.1.0.0/16', { id: 'ipr_b' })]),
      undefined,
    ],
    [
      'the same CIDR in another policy: none',
      () => check(rule('a', '10.0.0.0/8'), [rule('b', '10.0.0.0/8', { id: 'ipr_b', policy: 'ipp_2' })]),
      undefined,
    ],
    [
      'the same CIDR, the other already created: named',
      () => check(rule('a', '10.0.0.0/8'), [rule('b', '10.0.0.0/8', { id: 'ipr_b' })]),
      'IPPolicyRule b has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'the same CIDR, the other new too: none (the API refuses the second create)',
      () => check(rule('a', '10.0.0.0/8'), [rule('b', '10.0.0.0/8')]),
      undefined,
    ],
    [
      'this one holds the key already: none, whoever else wants it',
      () =>
        check(
          rule('a', '10.0.0.0/8', { id: 'ipr_a' }),
          [rule('b', '10.0.0.0/8', { id: 'ipr_b' })],
          [],
          'ipr_a',
        ),
      undefined,
    ],
    [
      'another namespace’s object is not named',
      () => check(rule('a', '10.0.0.0/8'), [rule('b', '10.0.0.0/8', { id: 'ipr_b', ns: 'other' })]),
      'an object in another namespace has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'a remote made outside the cluster',
      () => check(rule('a', '10.0.0.0/8'), [], [remote('ipr_x', '10.0.0.0/8')]),
      'ipr_x, made outside the cluster, has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'a remote made outside the cluster, to a namespace that may not adopt it: not even its id',
      () => check(rule('a', '10.0.0.0/8'), [], [remote('ipr_x', '10.0.0.0/8')], undefined, false),
      'another resource of the account, made outside the cluster, has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'a remote of another installation, to a namespace that may not adopt it',
      () =>
        check(
          rule('a', '10.0.0.0/8'),
          [],
          [remote('ipr_x', '10.0.0.0/8', { uid: 'u9', object: 'IPPolicyRule/team/z', cluster: 'c2' })],
          undefined,
          false,
        ),
      'a resource of another installation has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'a remote of another namespace’s object: neither its name nor its id',
      () =>
        check(
          rule('a', '10.0.0.0/8'),
          [rule('z', '10.9.0.0/16', { ns: 'other', id: 'ipr_z' })],
          [remote('ipr_x', '10.0.0.0/8', { uid: 'uid-z-other', object: 'IPPolicyRule/other/z' })],
        ),
      'a resource of an object in another namespace has the same CIDR in the same IP policy: delete one of them, or change this one',
    ],
    [
      'a remote of another installation',
      () =>
        check(
          rule('a', '10.0.0.0/8'),
          [],
          [remote('ipr_x', '10.0.0.0/8', { uid: 'u9', object: 'IPPolicyRule/team/z', cluster: 'c2' })],
        ),
      "ipr_x, another installation's, has the same CIDR in the same IP policy: delete one of them, or change this one",
    ],
    [
      'its own remote (after a crash before the id was recorded): none',
      () =>
        check(
          rule('a', '10.0.0.0/8'),
          [],
          [remote('ipr_a', '10.0.0.0/8', { uid: 'uid-a-team', object: 'IPPolicyRule/team/a' })],
        ),
      undefined,
    ],
    [
      'a remote whose object is gone (deleted since the list): none',
      () =>
        check(
          rule('a', '10.0.0.0/8'),
          [],
          [remote('ipr_old', '10.0.0.0/8', { uid: 'uid-gone', object: 'IPPolicyRule/team/gone' })],
        ),
      undefined,
    ],
    [
      'the remote it is adopting: none',
      () => check(rule('a', '10.0.0.0/8', { id: 'ipr_x' }), [], [remote('ipr_x', '10.0.0.0/8')]),
      undefined,
    ],
    [
      'a remote with another CIDR: none',
      () => check(rule('a', '10.0.0.0/8'), [], [remote('ipr_x', '192.0.2.0/24')]),
      undefined,
    ],
  ];
  for (const [what, run, message] of cases) it(what, () => expect(run()?.message).toBe(message));

  it('keys are recomputed only for objects that changed', () => {
    let calls = 0;
    const counting = {
      ...RULE,
      desired: (s: never, r: never) => {
        calls++;
        return RULE.desired(s, r);
      },
    };
    const keys = new ConflictKeys(counting as typeof RULE);
    const objs = [rule('a', '10.0.0.0/8', { id: 'ipr_a' }), rule('b', '10.1.0.0/16', { id: 'ipr_b' })];
    keys.of(objs, () => () => '');
    keys.of(objs, () => () => '');
    expect(calls).toBe(2);
  });

  it('kept current from the changed keys alone: a new holder, a changed spec, an object gone', () => {
    const keys = new ConflictKeys(RULE);
    const byKey = new Map<string, KubeObject>();
    const put = (o: KubeObject) => byKey.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    const keyOf = (cidr: string) =>
      RULE.conflict!.key(RULE.desired({ ipPolicyID: 'ipp_1', cidr, action: 'allow' } as never, () => ''));
    const a = rule('a', '10.0.0.0/8', { id: 'ipr_a' });
    put(a);
    keys.of([...byKey.values()], () => () => '');
    const b = rule('b', '10.0.0.0/8', { id: 'ipr_b' });
    put(b);
    keys.update(
      ['team/b'],
      (k) => byKey.get(k),
      () => () => '',
    );
    expect(
      keys
        .holding(keyOf('10.0.0.0/8'), () => () => '')
        .map((c) => c.obj.metadata.name)
        .sort(),
    ).toEqual(['a', 'b']);
    put({ ...b, metadata: { ...b.metadata, generation: 2 }, spec: { ...b.spec, cidr: '10.2.0.0/16' } });
    keys.update(
      ['team/b'],
      (k) => byKey.get(k),
      () => () => '',
    );
    expect(keys.holding(keyOf('10.0.0.0/8'), () => () => '').map((c) => c.obj.metadata.name)).toEqual(['a']);
    expect(keys.holding(keyOf('10.2.0.0/16'), () => () => '').map((c) => c.obj.metadata.name)).toEqual(['b']);
    expect(keys.live.has(a.metadata.uid!)).toBe(true);
    byKey.delete('team/a');
    keys.update(
      ['team/a'],
      (k) => byKey.get(k),
      () => () => '',
    );
    expect(keys.holding(keyOf('10.0.0.0/8'), () => () => '')).toEqual([]);
    expect(keys.live.has(a.metadata.uid!)).toBe(false);
  });

  it('a holder whose key changed with what it references is no candidate for its old key', () => {
    // the rules name their policy; the policy was made again under a new id, the rules not yet synced
    const byRef = (name: string, cidr: string): KubeObject => {
      const o = rule(name, cidr, { id: `ipr_${name}` });
      o.spec = { ipPolicyRef: { name: 'office' }, cidr, action: 'allow' };
      return o;
    };
    const keys = new ConflictKeys(RULE).of([byRef('a', '10.0.0.0/8')], () => () => 'ipp_old');
    const key = (policy: string) =>
      RULE.conflict!.key(
        RULE.desired({ ipPolicyID: policy, cidr: '10.0.0.0/8', action: 'allow' } as never, () => ''),
      );
    expect(keys.holding(key('ipp_old'), () => () => 'ipp_old').map((c) => c.obj.metadata.name)).toEqual([
      'a',
    ]);
    expect(keys.holding(key('ipp_old'), () => () => 'ipp_new')).toEqual([]);
  });

  it('names the object as the cache holds it now, not as it was when its key was computed', () => {
    const keys = new ConflictKeys(RULE);
    const cache = new Map<string, KubeObject>();
    const a = rule('a', '10.0.0.0/8', { id: 'ipr_a' });
    cache.set('team/a', a);
    keys.update(
      ['team/a'],
      (k) => cache.get(k),
      () => () => '',
    );
    // a status write of the same generation: no new key, and no older copy kept
    const later = {
      ...a,
      metadata: { ...a.metadata, resourceVersion: '99' },
      status: { id: 'ipr_a', ready: 1 },
    };
    cache.set('team/a', later);
    const key = RULE.conflict!.key(RULE.desired(a.spec as never, () => ''));
    expect(keys.holding(key, () => () => '').map((c) => c.obj)).toEqual([later]);
  });
});

describe('a bulk list indexed by what the API keeps unique', () => {
  it('finds the listed resources under a key, parsed as listed, with the fingerprint of a sync', async () => {
    const listed = [
      remote('ipr_1', '10.0.0.0/8').remote,
      remote('ipr_2', '10.0.0.0/8').remote,
      remote('ipr_3', '10.9.0.0/16').remote,
    ];
    const observer = new Observer({
      kind: RULE.kind,
      list: async function* () {
        yield* listed as never[];
      },
      conflictKey: listedConflictKey(RULE),
      log: pino({ level: 'silent' }),
    });
    const snapshot = (await observer.refresh())!;
    const key = (cidr: string) =>
      RULE.conflict!.key(RULE.desired({ ipPolicyID: 'ipp_1', cidr, action: 'allow' } as never, () => ''));
    expect([...idsUnder(snapshot, key('10.0.0.0/8'))]).toEqual(['ipr_1', 'ipr_2']);
    expect([...idsUnder(snapshot, key('10.9.0.0/16'))]).toEqual(['ipr_3']);
    expect([...idsUnder(snapshot, key('10.1.0.0/16'))]).toEqual([]);
    const one = snapshot.items.get('ipr_2')!;
    expect(one.remote).toEqual(listed[1]);
    expect(one.digest).toBe(remoteDigest(listed[1]));
    // each read is a copy: a plan that changes what it read changes nothing listed
    (one.remote as Record<string, unknown>).cidr = '0.0.0.0/0';
    expect(one.remote.cidr).toBe('10.0.0.0/8');
  });
});
