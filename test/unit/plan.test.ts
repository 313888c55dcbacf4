// The engine's decisions as a table, without an emulator or an API server: what the spec
// wants, what status knows and what the API shows -> one decision (plan.ts).
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.ts';
import type { AnyBinding } from '../../src/operator/runtime/bindings/binding.ts';
import {
  legacySecretDigest,
  secretDigest,
  unscopedSecretDigest,
} from '../../src/operator/runtime/bindings/module-compare.ts';
import { encodeMetadata, type Owner } from '../../src/operator/runtime/bindings/owner.ts';
import {
  CREATE_PENDING_ANNOTATION,
  FINALIZER,
  FORCE_DELETE_ANNOTATION,
  ID_ANNOTATION,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
} from '../../src/operator/runtime/constants.ts';
import { remoteDigest, statusDigest } from '../../src/operator/runtime/engine/memo.ts';
import {
  finalizerStep,
  needsOwnerState,
  ownership,
  planReconcile,
  planSync,
  priorityOf,
  unchanged,
} from '../../src/operator/runtime/engine/plan.ts';
import {
  digestsOf,
  driftOf,
  moduleChanges,
  modulesEvent,
  planModuleStep,
  planModules,
  planUpdate,
  updateEvent,
} from '../../src/operator/runtime/engine/plan-changes.ts';
import { unfoundCreate } from '../../src/operator/runtime/engine/plan-create.ts';
import {
  deleteFailure,
  deleteGuard,
  deleteTarget,
  planFinalize,
} from '../../src/operator/runtime/engine/plan-delete.ts';
import { observeOnlyId, planObserveOnly } from '../../src/operator/runtime/engine/plan-observe-only.ts';
import type { Remote, Wanted } from '../../src/operator/runtime/engine/types.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { Listed } from '../../src/operator/runtime/state/observer.ts';

const KEY = 'plan-test-key';
const CLUSTER = 'c1';
const UID = 'uid-a';
const NS = 'team';
const SELF: Owner = { cluster: CLUSTER, uid: UID, object: 'Thing/team/a' };
const noop = async () => undefined;

/** A kind with one updatable field, one immutable one, a plain module and one with a secret. */
const THING = {
  kind: 'Thing',
  plural: 'things',
  desired: (s: Record<string, unknown>) => ({ name: s.name, region: s.region }),
  fromRemote: (r: Record<string, unknown>) => ({ name: r.name, region: r.region }),
  updatable: ['name'],
  modules: [
    { name: 'tls', desired: () => null, put: noop, delete: noop },
    { name: 'auth', secretPaths: ['secret'], desired: () => null, put: noop, delete: noop },
  ],
} as unknown as AnyBinding;

type Ann = Record<string, string>;
interface ObjOpts {
  id?: string;
  ann?: Ann;
  gen?: number;
  observedGen?: number;
  finalizers?: string[];
  spec?: Record<string, unknown>;
  digests?: Record<string, string>;
  uid?: string;
}
const obj = (o: ObjOpts = {}): KubeObject => ({
  metadata: {
    name: 'a',
    namespace: 'team',
    uid: o.uid ?? UID,
    generation: o.gen ?? 1,
    finalizers: o.finalizers ?? [FINALIZER],
    ...(o.ann ? { annotations: o.ann } : {}),
  },
  spec: o.spec ?? {},
  status: {
    ...(o.id ? { id: o.id } : {}),
    ...(o.observedGen !== undefined ? { observedGeneration: o.observedGen } : {}),
    ...(o.digests ? { secretDigests: o.digests } : {}),
  },
});
const marker = (o: Partial<Owner> = {}, user = '') => encodeMetadata({ ...SELF, ...o }, user);
const remote = (o: Record<string, unknown> = {}): Remote => ({
  id: 'thg_1',
  name: 'n',
  region: 'eu',
  description: '',
  metadata: marker(),
  tls: null,
  auth: null,
  ...o,
});
const want = (
  o: {
    desired?: Record<string, unknown>;
    tls?: unknown;
    auth?: unknown;
    description?: string;
    user?: string;
  } = {},
): Wanted => ({
  desired: { name: 'n', region: 'eu', ...o.desired },
  modules: new Map([
    ['tls', (o.tls as Record<string, unknown>) ?? null],
    ['auth', (o.auth as Record<string, unknown>) ?? null],
  ]),
  common: { description: o.description ?? '', metadata: marker({}, o.user ?? '') },
});
const found = (r: Remote = remote()) => ({ found: true as const, remote: r });
const sync = (o: {
  obj?: KubeObject;
  want?: Wanted;
  id?: string;
  seen?: ReturnType<typeof found> | { found: false };
  ownerState?: 'live' | 'gone' | 'unknown';
  applied?: Record<string, string>;
}) =>
  planSync({
    binding: THING,
    obj: o.obj ?? obj({ id: 'thg_1' }),
    clusterId: CLUSTER,
    digestKey: KEY,
    want: o.want ?? want(),
    id: 'id' in o ? o.id : 'thg_1',
    seen: 'seen' in o ? o.seen : found(),
    ownerState: o.ownerState,
    applied: o.applied,
  });
const authDigest = (secret: string) => secretDigest({ secret }, ['secret'], KEY, NS)!;

describe('planSync: create, recreate, adopt, update, nothing or stall', () => {
  const cases: [string, Parameters<typeof sync>[0], Record<string, unknown>][] = [
    ['create when there is no id', { obj: obj(), id: undefined, seen: undefined }, { action: 'create' }],
    [
      'create when there is no id, whatever the annotations say otherwise',
      { obj: obj({ ann: { other: 'x' } }), id: undefined, seen: undefined },
      { action: 'create' },
    ],
    [
      'recreate when the resource in status was deleted behind our back',
      { seen: { found: false } },
      { action: 'recreate', gone: 'thg_1' },
    ],
    [
      'AdoptionFailed when the id annotation names nothing',
      { obj: obj({ ann: { [ID_ANNOTATION]: 'thg_9' } }), id: 'thg_9', seen: { found: false } },
      { action: 'stall', reason: 'AdoptionFailed', message: `${ID_ANNOTATION}: thg_9 does not exist` },
    ],
    [
      'AdoptionFailed when the annotation differs from status and names nothing',
      { obj: obj({ id: 'thg_1' }), id: 'thg_2', seen: { found: false } },
      { action: 'stall', reason: 'AdoptionFailed' },
    ],
    [
      'nothing when everything equals the spec',
      {},
      { action: 'nothing', id: 'thg_1', patch: {}, modules: [] },
    ],
    [
      'adopt by annotation: the id annotation written, Adopted recorded',
      { obj: obj({ ann: { [ID_ANNOTATION]: 'thg_1' } }) },
      { action: 'adopt', adopt: { annotate: false, event: true } },
    ],
    [
      'adopt without annotation (an id found otherwise): annotate and record',
      { obj: obj() },
      { action: 'adopt', adopt: { annotate: true, event: true } },
    ],
    [
      'adopt after a crash mid-create: annotate, drop the mark, no Adopted event',
      { obj: obj({ ann: { [CREATE_PENDING_ANNOTATION]: '2026-01-01T00:00:00Z' } }) },
      { action: 'adopt', adopt: { annotate: true, event: false } },
    ],
    [
      'adopting a resource without a marker that equals the spec costs no update',
      { obj: obj({ ann: { [ID_ANNOTATION]: 'thg_1' } }), seen: found(remote({ metadata: '' })) },
      { action: 'adopt', patch: {} },
    ],
    [
      'OwnedElsewhere for another installation (cluster) on the resource',
      { seen: found(remote({ metadata: marker({ cluster: 'c2' }) })) },
      {
        action: 'stall',
        reason: 'OwnedElsewhere',
        message: 'thg_1 belongs to another installation (cluster c2); not taking it over',
      },
    ],
    [
      'OwnedElsewhere for another live object in the namespace, named',
      {
        seen: found(remote({ metadata: marker({ uid: 'u2', object: 'Thing/team/b' }) })),
        ownerState: 'live',
      },
      {
        action: 'stall',
        reason: 'OwnedElsewhere',
        message: 'thg_1 is managed by Thing b; not taking it over',
      },
    ],
    [
      'OwnedElsewhere for a live object in another namespace, not named',
      {
        seen: found(remote({ metadata: marker({ uid: 'u2', object: 'Thing/other/b' }) })),
        ownerState: 'live',
      },
      {
        action: 'stall',
        reason: 'OwnedElsewhere',
        message: 'thg_1 is managed by an object in another namespace; not taking it over',
      },
    ],
    [
      'OwnedElsewhere when the owner cannot be read (unknown)',
      {
        seen: found(remote({ metadata: marker({ uid: 'u2', object: 'Thing/team/b' }) })),
        ownerState: 'unknown',
      },
      { action: 'stall', reason: 'OwnedElsewhere' },
    ],
    [
      'taken over when the marker names an object that is gone',
      {
        seen: found(remote({ metadata: marker({ uid: 'u2', object: 'Thing/team/b' }) })),
        ownerState: 'gone',
      },
      { action: 'update', patch: { metadata: marker() } },
    ],
    [
      'restore by name: same kind/namespace/name under a new uid is ours',
      { seen: found(remote({ metadata: marker({ uid: 'old-uid' }) })) },
      { action: 'update', patch: { metadata: marker() } },
    ],
    [
      'immutable field differs: stall naming the fields',
      { want: want({ desired: { region: 'us' } }) },
      {
        action: 'stall',
        reason: 'ImmutableFieldDiffers',
        message:
          'region of thg_1 differ from the spec and cannot be changed in place: delete and recreate this object',
      },
    ],
    [
      'update patch only for the differing field',
      { want: want({ desired: { name: 'm' } }) },
      { action: 'update', patch: { name: 'm' } },
    ],
    [
      'module put when it differs (after the update)',
      { want: want({ tls: { cert: 'x' } }) },
      { action: 'update', patch: {}, modules: [{ name: 'tls', put: { cert: 'x' } }] },
    ],
    [
      'module delete when the spec drops it',
      { seen: found(remote({ tls: { cert: 'x' } })) },
      { action: 'update', modules: [{ name: 'tls', delete: true }] },
    ],
    [
      'no module put when the secrets digest matches what was applied',
      {
        obj: obj({ id: 'thg_1', digests: { auth: authDigest('s3cret') } }),
        want: want({ auth: { user: 'u', secret: 's3cret' } }),
        seen: found(remote({ auth: { user: 'u' } })),
      },
      { action: 'nothing' },
    ],
    [
      'the digest this process remembers wins over the one in status',
      {
        obj: obj({ id: 'thg_1', digests: { auth: 'k1:stale' } }),
        want: want({ auth: { user: 'u', secret: 's3cret' } }),
        seen: found(remote({ auth: { user: 'u' } })),
        applied: { auth: authDigest('s3cret') },
      },
      { action: 'nothing' },
    ],
  ];
  it.each(cases)('%s', (_what, input, expected) => {
    expect(sync(input)).toMatchObject(expected);
  });
});

describe('planSync: an update says its Event and its second step (modules on what it returned)', () => {
  const cases: [string, Parameters<typeof sync>[0], Record<string, unknown>][] = [
    [
      'a patch: its Event, then the modules planned again',
      { want: want({ desired: { name: 'm' } }) },
      { updated: { reason: 'Updated', message: 'updated name of thg_1' }, next: 'plan-modules' },
    ],
    [
      'a drift put back: DriftCorrected',
      { obj: { ...obj({ id: 'thg_1', observedGen: 1 }) }, want: want({ desired: { name: 'm' } }) },
      { updated: { reason: 'DriftCorrected', message: 'put back out-of-band change to name of thg_1' } },
    ],
  ];
  it.each(cases)('%s', (_what, input, expected) => {
    expect(sync(input)).toMatchObject(expected);
  });
  it('no patch: no Event and no second step (the modules as read serve)', () => {
    const d = sync({ want: want({ tls: { cert: 'x' } }) });
    expect(d).not.toHaveProperty('updated');
    expect(d).not.toHaveProperty('next');
  });
  const moduleStep = (updated: Remote, second = true) =>
    planModuleStep({
      decision: {
        modules: [{ name: 'auth', delete: true }],
        ...(second ? { next: 'plan-modules' as const } : {}),
      },
      binding: THING,
      updated,
      want: want({ tls: { cert: 'x' } }),
      applied: undefined,
      digestKey: KEY,
      obj: obj({ id: 'thg_1' }),
    });
  const rows: [string, Remote, ReturnType<typeof moduleStep>][] = [
    [
      'the update shows the module missing: PUT, with its Event',
      remote(),
      {
        steps: [{ name: 'tls', put: { cert: 'x' } }],
        event: { reason: 'ModulesUpdated', message: 'applied modules of thg_1: tls' },
      },
    ],
    ['the update shows it as wanted: nothing, no Event', remote({ tls: { cert: 'x' } }), { steps: [] }],
  ];
  it.each(rows)('%s', (_what, updated, expected) => {
    expect(moduleStep(updated)).toEqual(expected);
  });
  it('no second step: the steps planned on the resource as read, with their Event', () => {
    expect(moduleStep(remote({ tls: { cert: 'x' } }), false)).toEqual({
      steps: [{ name: 'auth', delete: true }],
      event: { reason: 'ModulesUpdated', message: 'applied modules of thg_1: -auth' },
    });
  });
  it('modulesEvent: none without steps; a DELETE as -name', () => {
    expect(modulesEvent('thg_1', [])).toBeUndefined();
    expect(modulesEvent('thg_1', [{ name: 'tls', delete: true }])?.message).toBe(
      'applied modules of thg_1: -tls',
    );
  });
});

describe('planUpdate: the exact patch', () => {
  const cases: [string, Remote, Wanted, Record<string, unknown>][] = [
    ['nothing differs: empty patch', remote(), want(), { action: 'update', patch: {} }],
    ['an updatable field', remote(), want({ desired: { name: 'm' } }), { patch: { name: 'm' } }],
    [
      'an immutable field stalls even beside an updatable one',
      remote(),
      want({ desired: { name: 'm', region: 'us' } }),
      { action: 'stall', reason: 'ImmutableFieldDiffers' },
    ],
    ['description differs', remote(), want({ description: 'd' }), { patch: { description: 'd' } }],
    ['a missing description counts as empty', remote({ description: undefined }), want(), { patch: {} }],
    [
      'a field change carries the marker along when it differs',
      remote({ metadata: marker({ uid: 'old' }) }),
      want({ desired: { name: 'm' } }),
      { patch: { name: 'm', metadata: marker() } },
    ],
    ['user metadata differs', remote(), want({ user: 'mine' }), { patch: { metadata: marker({}, 'mine') } }],
    [
      'no marker, same user metadata: no write for the marker alone',
      remote({ metadata: 'mine' }),
      want({ user: 'mine' }),
      { patch: {} },
    ],
    [
      'no marker, other user metadata: metadata written',
      remote({ metadata: 'theirs' }),
      want({ user: 'mine' }),
      { patch: { metadata: marker({}, 'mine') } },
    ],
    [
      'no marker and a field change: the marker comes with the write',
      remote({ metadata: '' }),
      want({ desired: { name: 'm' } }),
      { patch: { name: 'm', metadata: marker() } },
    ],
  ];
  it.each(cases)('%s', (_what, r, w, expected) => {
    expect(planUpdate(THING, r, w.desired, w.common)).toMatchObject(expected);
  });
});

describe('updateEvent: drift vs Updated', () => {
  it('the spec did not change (observed generation current): DriftCorrected', () => {
    expect(updateEvent(obj({ gen: 2, observedGen: 2 }), 'thg_1', { name: 'm', description: '' })).toEqual({
      reason: 'DriftCorrected',
      message: 'put back out-of-band change to name, description of thg_1',
    });
  });
  it('a new generation: Updated', () => {
    expect(updateEvent(obj({ gen: 3, observedGen: 2 }), 'thg_1', { name: 'm' })).toEqual({
      reason: 'Updated',
      message: 'updated name of thg_1',
    });
  });
  it('a new object (no observed generation): Updated', () => {
    expect(updateEvent(obj(), 'thg_1', { name: 'm' }).reason).toBe('Updated');
  });
});

describe('planModules: put when differing, delete when dropped, secrets by digest', () => {
  const w = (tls: unknown, auth: unknown) => want({ tls, auth }).modules;
  const legacy = legacySecretDigest({ secret: 's3cret' }, ['secret'], UID)!;
  const unscoped = unscopedSecretDigest({ secret: 's3cret' }, ['secret'], KEY)!;
  const cases: [string, Remote, Wanted['modules'], Record<string, string> | undefined, unknown[]][] = [
    ['nothing wanted, nothing held', remote(), w(null, null), undefined, []],
    [
      'wanted and not held: put',
      remote(),
      w({ cert: 'x' }, null),
      undefined,
      [{ name: 'tls', put: { cert: 'x' } }],
    ],
    [
      'held and not wanted: delete',
      remote({ tls: { cert: 'x' } }),
      w(null, null),
      undefined,
      [{ name: 'tls', delete: true }],
    ],
    ['held as wanted: no put', remote({ tls: { cert: 'x' } }), w({ cert: 'x' }, null), undefined, []],
    [
      'fields the API adds are ignored',
      remote({ tls: { cert: 'x', enabled: true } }),
      w({ cert: 'x' }, null),
      undefined,
      [],
    ],
    [
      'a differing field: put',
      remote({ tls: { cert: 'y' } }),
      w({ cert: 'x' }, null),
      undefined,
      [{ name: 'tls', put: { cert: 'x' } }],
    ],
    [
      'secret digest matches the applied one: no put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      { auth: authDigest('s3cret') },
      [],
    ],
    [
      'secret rotated (digest differs): put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 'new' }),
      { auth: authDigest('s3cret') },
      [{ name: 'auth', put: { user: 'u', secret: 'new' } }],
    ],
    [
      'legacy digest (keyed by uid) accepted: no put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      { auth: legacy },
      [],
    ],
    [
      'legacy digest of another value: put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 'new' }),
      { auth: legacy },
      [{ name: 'auth', put: { user: 'u', secret: 'new' } }],
    ],
    [
      'digest keyed without the namespace (the form before) accepted: no put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      { auth: unscoped },
      [],
    ],
    [
      'digest keyed without the namespace, of another value: put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 'new' }),
      { auth: unscoped },
      [{ name: 'auth', put: { user: 'u', secret: 'new' } }],
    ],
    [
      'the same secret’s digest from another namespace: put',
      remote({ auth: { user: 'u' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      { auth: secretDigest({ secret: 's3cret' }, ['secret'], KEY, 'other-team')! },
      [{ name: 'auth', put: { user: 'u', secret: 's3cret' } }],
    ],
    [
      'no digest yet (adoption): the API’s copy of the secret decides, equal: no put',
      remote({ auth: { user: 'u', secret: 's3cret' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      undefined,
      [],
    ],
    [
      'no digest yet and the API’s copy differs: put',
      remote({ auth: { user: 'u', secret: 'old' } }),
      w(null, { user: 'u', secret: 's3cret' }),
      undefined,
      [{ name: 'auth', put: { user: 'u', secret: 's3cret' } }],
    ],
    [
      'steps in the binding’s order: delete tls, put auth',
      remote({ tls: { cert: 'x' } }),
      w(null, { user: 'u', secret: 's' }),
      undefined,
      [
        { name: 'tls', delete: true },
        { name: 'auth', put: { user: 'u', secret: 's' } },
      ],
    ],
  ];
  it.each(cases)('%s', (_what, r, modules, applied, expected) => {
    expect(planModules(THING, r, modules, applied, KEY, { namespace: NS, uid: UID })).toEqual(expected);
  });
  it('the Event lists a put by name and a delete as -name', () => {
    expect(
      moduleChanges([
        { name: 'tls', delete: true },
        { name: 'auth', put: {} },
      ]),
    ).toEqual(['-tls', 'auth']);
  });
  it('digests only for modules with secrets that are wanted', () => {
    expect(digestsOf(THING, w({ cert: 'x' }, { secret: 's3cret' }), KEY, NS)).toEqual({
      auth: authDigest('s3cret'),
    });
  });
});

describe('observe-only: the id, ownership and drift', () => {
  const observe = (o: {
    seen?: ReturnType<typeof found> | { found: false };
    want?: Wanted;
    ownerState?: 'live' | 'gone';
  }) =>
    planObserveOnly({
      binding: THING,
      obj: obj({ ann: { [ID_ANNOTATION]: 'thg_1' } }),
      clusterId: CLUSTER,
      id: 'thg_1',
      seen: o.seen ?? found(),
      want: o.want ?? want(),
      ownerState: o.ownerState,
    });
  const cases: [string, Parameters<typeof observe>[0], Record<string, unknown>][] = [
    [
      'equal to the spec: Observed',
      {},
      {
        action: 'report',
        drift: [],
        phase: { reason: 'Observed', message: 'thg_1 equals the spec (managementPolicy Observe)' },
      },
    ],
    [
      'a field differs: ObservedWithDrift naming it',
      { want: want({ desired: { region: 'us' } }) },
      {
        drift: ['region'],
        phase: {
          state: 'ready',
          reason: 'ObservedWithDrift',
          message: 'thg_1 differs from the spec in region (managementPolicy Observe: left as it is)',
        },
      },
    ],
    ['description drift', { want: want({ description: 'd' }) }, { drift: ['description'] }],
    ['user metadata drift (the marker is not drift)', { want: want({ user: 'u' }) }, { drift: ['metadata'] }],
    [
      'a module held but not wanted is drift',
      { seen: found(remote({ tls: { cert: 'x' } })) },
      { drift: ['tls'] },
    ],
    ['a module wanted but not held is drift', { want: want({ tls: { cert: 'x' } }) }, { drift: ['tls'] }],
    [
      'a secret value is never drift',
      { want: want({ auth: { user: 'u', secret: 's' } }), seen: found(remote({ auth: { user: 'u' } })) },
      { drift: [] },
    ],
    [
      'not found: stall, nothing is created',
      { seen: { found: false } },
      {
        action: 'stall',
        reason: 'NotFound',
        message: 'thg_1 does not exist (managementPolicy Observe creates nothing)',
      },
    ],
    [
      'another installation’s: not read',
      { seen: found(remote({ metadata: marker({ cluster: 'c2' }) })) },
      {
        action: 'stall',
        reason: 'OwnedElsewhere',
        message: 'thg_1 belongs to another installation (cluster c2); not reading it',
      },
    ],
    [
      'another live object’s: stall',
      {
        seen: found(remote({ metadata: marker({ uid: 'u2', object: 'Thing/team/b' }) })),
        ownerState: 'live',
      },
      { action: 'stall', reason: 'OwnedElsewhere' },
    ],
  ];
  it.each(cases)('%s', (_what, input, expected) => {
    expect(observe(input)).toMatchObject(expected);
  });
  it('no id annotation and no status id: ObserveWithoutID', () => {
    expect(observeOnlyId(obj())).toMatchObject({ action: 'stall', reason: 'ObserveWithoutID' });
  });
  it('the id annotation names the resource', () => {
    expect(observeOnlyId(obj({ ann: { [ID_ANNOTATION]: 'thg_2' }, id: 'thg_1' }))).toEqual({ id: 'thg_2' });
  });
  it('status.id serves without the annotation', () => {
    expect(observeOnlyId(obj({ id: 'thg_1' }))).toEqual({ id: 'thg_1' });
  });
  it('driftOf lists fields, description, metadata and modules in that order', () => {
    expect(
      driftOf(
        THING,
        remote({ tls: { cert: 'x' } }),
        want({ desired: { name: 'm' }, description: 'd', user: 'u' }),
      ),
    ).toEqual(['name', 'description', 'metadata', 'tls']);
  });
});

describe('ownership', () => {
  it('no marker: ours to take', () => {
    expect(ownership('thg_1', undefined, SELF, 'team', undefined, 'taking it over')).toBeUndefined();
  });
  it('our own uid: no owner to ask about', () => {
    expect(needsOwnerState({ ...SELF }, SELF)).toBe(false);
  });
  it('another cluster: no owner to ask about (stalls anyway)', () => {
    expect(needsOwnerState({ ...SELF, cluster: 'c2', uid: 'u2', object: 'Thing/team/b' }, SELF)).toBe(false);
  });
  it('another object of this installation: its state is asked', () => {
    expect(needsOwnerState({ ...SELF, uid: 'u2', object: 'Thing/team/b' }, SELF)).toBe(true);
  });
});

describe('planFinalize: deletion', () => {
  const del = (o: ObjOpts, extra: { id?: string; referrers?: string[]; deletedRemote?: string } = {}) =>
    planFinalize({
      obj: obj(o),
      id: 'id' in extra ? extra.id : 'thg_1',
      referrers: extra.referrers ?? [],
      deletedRemote: extra.deletedRemote,
    });
  const many = Array.from({ length: 12 }, (_, i) => `Thing r${String(i).padStart(2, '0')}`);
  const cases: [string, ReturnType<typeof del>, Record<string, unknown>][] = [
    ['no finalizer of ours: done, nothing to do', del({ finalizers: ['other'] }), { action: 'done' }],
    ['no id: the finalizer goes', del({}, { id: undefined }), { action: 'release' }],
    ['delete the remote resource', del({}), { action: 'delete', id: 'thg_1' }],
    [
      'deletionPolicy Retain: left in place',
      del({ spec: { deletionPolicy: 'Retain' } }),
      { action: 'retain', message: 'left thg_1 in place (deletionPolicy: Retain)' },
    ],
    [
      'managementPolicy Observe: left in place',
      del({ spec: { managementPolicy: 'Observe', deletionPolicy: 'Retain' } }),
      { action: 'retain', message: 'left thg_1 in place (managementPolicy: Observe)' },
    ],
    [
      'still referenced: InUse naming the referrers',
      del({}, { referrers: ['Thing b', 'Thing c'] }),
      {
        action: 'wait',
        reason: 'InUse',
        message: `thg_1 is still referenced by Thing b, Thing c: delete them or remove their references first (or annotate ${FORCE_DELETE_ANNOTATION}=true)`,
      },
    ],
    [
      'InUse lists at most 10 referrers and counts the rest',
      del({}, { referrers: many }),
      { message: expect.stringContaining('Thing r09, and 2 more: delete them') },
    ],
    [
      'the force-delete annotation deletes despite referrers',
      del({ ann: { [FORCE_DELETE_ANNOTATION]: 'true' } }, { referrers: ['Thing b'] }),
      { action: 'delete' },
    ],
    [
      'force-delete other than "true" waits',
      del({ ann: { [FORCE_DELETE_ANNOTATION]: 'yes' } }, { referrers: ['Thing b'] }),
      { action: 'wait' },
    ],
    [
      'Retain wins over referrers',
      del({ spec: { deletionPolicy: 'Retain' } }, { referrers: ['Thing b'] }),
      { action: 'retain' },
    ],
    [
      'already deleted by this process: no second DELETE',
      del({}, { deletedRemote: 'thg_1' }),
      { action: 'already-deleted', id: 'thg_1' },
    ],
    [
      'a different resource deleted earlier: this one is deleted',
      del({}, { deletedRemote: 'thg_0' }),
      { action: 'delete', id: 'thg_1' },
    ],
  ];
  it.each(cases)('%s', (_what, decision, expected) => {
    expect(decision).toMatchObject(expected);
  });
  it('InUse with exactly 10 referrers lists them all', () => {
    const d = del({}, { referrers: many.slice(0, 10) });
    expect(d).toMatchObject({ message: expect.not.stringContaining('more') });
  });
});

describe('deleteGuard: only the resource whose owner marker names this object is deleted', () => {
  const seen = (metadata: string | undefined) => ({ found: true as const, remote: remote({ metadata }) });
  const guard = (evidence: Parameters<typeof deleteGuard>[0]['evidence'], claimedBy?: string) =>
    deleteGuard({ id: 'thg_1', self: SELF, namespace: 'team', evidence, claimedBy });
  const not = 'not deleting it';
  const cases: [string, ReturnType<typeof guard>, ReturnType<typeof guard>][] = [
    ['this process synced it as its own: delete, nothing read', guard('synced'), { action: 'delete' }],
    ['the marker names this object (its uid): delete', guard(seen(marker())), { action: 'delete' }],
    [
      'the marker names this kind/namespace/name under an older uid (a restore): delete',
      guard(seen(marker({ uid: 'uid-old' }))),
      { action: 'delete' },
    ],
    [
      'the API holds nothing under the id: no DELETE, the finalizer goes',
      guard({ found: false }),
      { action: 'gone' },
    ],
    [
      'no marker, no other object holds the id (adopted, unwritten): delete',
      guard(seen(undefined)),
      { action: 'delete' },
    ],
    ['user metadata only (no marker): delete', guard(seen('{"team":"a"}')), { action: 'delete' }],
    [
      'a status.id pointing at another namespace’s resource: not deleted, the other object not named',
      guard(seen(marker({ uid: 'uid-v', object: 'Thing/victim/corp' }))),
      {
        action: 'release',
        reason: 'OwnedElsewhere',
        message: `thg_1 is managed by an object in another namespace; ${not}`,
      },
    ],
    [
      'another object of this namespace: not deleted, named',
      guard(seen(marker({ uid: 'uid-b', object: 'Thing/team/b' }))),
      { action: 'release', reason: 'OwnedElsewhere', message: `thg_1 is managed by Thing b; ${not}` },
    ],
    [
      'another installation’s resource: not deleted',
      guard(seen(marker({ cluster: 'c2', uid: 'uid-x', object: 'Thing/team/a' }))),
      {
        action: 'release',
        reason: 'OwnedElsewhere',
        message: `thg_1 belongs to another installation (cluster c2); ${not}`,
      },
    ],
    [
      'another installation’s marker with this object’s uid: still not ours',
      guard(seen(marker({ cluster: 'c2' }))),
      { action: 'release', reason: 'OwnedElsewhere', message: expect.stringContaining('cluster c2') },
    ],
    [
      'no marker, but another namespace’s object holds the id: not deleted',
      guard(seen(undefined), 'Thing/victim/corp'),
      {
        action: 'release',
        reason: 'OwnedElsewhere',
        message: `thg_1 is managed by an object in another namespace; ${not}`,
      },
    ],
    [
      'a marker naming this object wins over another object claiming the id',
      guard(seen(marker()), 'Thing/victim/corp'),
      { action: 'delete' },
    ],
  ];
  it.each(cases)('%s', (_what, decision, expected) => {
    expect(decision).toEqual(expected);
  });
});

describe('deleteFailure', () => {
  const api = (status: number, msg: string, code?: string) =>
    new ApiError({ status, operation: 'delete', body: { msg, error_code: code } });
  it('not found counts as deleted', () => {
    expect(deleteFailure('thg_1', api(404, 'gone'))).toEqual({ deleted: true });
  });
  it('an unknown path is not "deleted"', () => {
    expect(deleteFailure('thg_1', api(404, 'no such path', 'ERR_NO_SUCH_PATH'))).toMatchObject({
      deleted: false,
    });
  });
  it('any other error waits as DeleteFailed with the API’s message', () => {
    expect(deleteFailure('thg_1', api(400, 'in use by edge'))).toEqual({
      deleted: false,
      phase: { state: 'progressing', reason: 'DeleteFailed', message: 'delete thg_1: in use by edge' },
    });
  });
  it('ids in the message are named', () => {
    const d = deleteFailure('thg_1', api(400, 'used by x'), (t) => `${t} (named)`);
    expect(d).toMatchObject({ phase: { message: 'delete thg_1: used by x (named)' } });
  });
  it('a failure that is not the API’s keeps its message', () => {
    expect(deleteFailure('thg_1', new Error('socket hang up'))).toMatchObject({
      phase: { message: 'delete thg_1: socket hang up' },
    });
  });
});

/** An object as the start of a reconcile sees it: deleting or not, paused, resumed, observe-only. */
const at = (
  o: ObjOpts & { deleting?: boolean; conditions?: unknown[]; handled?: string } = {},
): KubeObject => {
  const x = obj(o);
  if (o.deleting) x.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  if (o.conditions) (x.status as Record<string, unknown>).conditions = o.conditions;
  if (o.handled) (x.status as Record<string, unknown>).lastHandledReconcileAt = o.handled;
  return x;
};
const OBSERVE_ONLY = { managementPolicy: 'Observe' };
const PENDING = { [CREATE_PENDING_ANNOTATION]: '2026-01-01T00:00:00Z' };

describe('finalizerStep: present or absent x deleting or not', () => {
  const cases: [string, KubeObject, string][] = [
    ['deleting, present: finalize', at({ deleting: true, id: 'thg_1' }), 'finalize'],
    ['deleting, present, no id yet: finalize (it may have been created)', at({ deleting: true }), 'finalize'],
    [
      'deleting, absent: release, nothing remains remotely',
      at({ deleting: true, finalizers: [], id: 'thg_1' }),
      'release',
    ],
    ['deleting, only another finalizer: release', at({ deleting: true, finalizers: ['other'] }), 'release'],
    ['not deleting, present: keep', at({ id: 'thg_1' }), 'keep'],
    ['not deleting, absent, an id in status: restore', at({ finalizers: [], id: 'thg_1' }), 'restore'],
    ['not deleting, absent, a create pending: restore', at({ finalizers: [], ann: PENDING }), 'restore'],
    ['not deleting, absent, nothing remote yet: add with the first write', at({ finalizers: [] }), 'add'],
    [
      'not deleting, absent, an id to adopt: add with the first write',
      at({ finalizers: [], ann: { [ID_ANNOTATION]: 'thg_1' } }),
      'add',
    ],
    [
      'not deleting, absent, observe-only: none, it never deletes',
      at({ finalizers: [], id: 'thg_1', spec: OBSERVE_ONLY }),
      'none',
    ],
    [
      'deleting, present, observe-only: finalize (the resource is retained)',
      at({ deleting: true, spec: OBSERVE_ONLY }),
      'finalize',
    ],
  ];
  it.each(cases)('%s', (_what, o, expected) => {
    expect(finalizerStep(o)).toBe(expected);
  });
});

describe('planReconcile: paused, deleting, observe-only or a sync', () => {
  const paused = { [PAUSED_ANNOTATION]: 'true' };
  const pausedCondition = { type: 'Paused', status: 'True', reason: 'ReconcilePaused' };
  const cases: [string, KubeObject, Record<string, unknown>][] = [
    ['paused: say so once', at({ ann: paused, id: 'thg_1' }), { step: { action: 'pause', write: true } }],
    [
      'paused and said: nothing at all',
      at({ ann: paused, conditions: [pausedCondition] }),
      { step: { action: 'pause', write: false } },
    ],
    [
      'paused while deleting: the delete waits',
      at({ ann: paused, deleting: true }),
      { step: { action: 'pause', write: true } },
    ],
    [
      'paused but "false": not paused',
      at({ ann: { [PAUSED_ANNOTATION]: 'false' } }),
      { step: { action: 'sync' } },
    ],
    [
      'resumed: said, and a sync',
      at({ conditions: [pausedCondition] }),
      { step: { action: 'sync' }, resumed: true },
    ],
    ['not paused before: not resumed', at({}), { resumed: false }],
    [
      'deleting without the finalizer: release',
      at({ deleting: true, finalizers: [] }),
      { step: { action: 'release' } },
    ],
    [
      'resumed while deleting without the finalizer: said, then released',
      at({ deleting: true, finalizers: [], conditions: [pausedCondition] }),
      { step: { action: 'release' }, resumed: true },
    ],
    ['deleting with the finalizer: finalize', at({ deleting: true }), { step: { action: 'finalize' } }],
    [
      'deleting an observe-only object: finalize (it retains)',
      at({ deleting: true, spec: OBSERVE_ONLY }),
      { step: { action: 'finalize' } },
    ],
    ['observe-only', at({ spec: OBSERVE_ONLY }), { step: { action: 'observe-only' } }],
    [
      'observe-only without the finalizer: still observe-only',
      at({ spec: OBSERVE_ONLY, finalizers: [] }),
      { step: { action: 'observe-only' } },
    ],
    ['a sync that keeps the finalizer', at({ id: 'thg_1' }), { step: { action: 'sync', finalizer: 'keep' } }],
    [
      'a sync that restores it',
      at({ id: 'thg_1', finalizers: [] }),
      { step: { action: 'sync', finalizer: 'restore' } },
    ],
    [
      'a sync that adds it with the first write',
      at({ finalizers: [] }),
      { step: { action: 'sync', finalizer: 'add' } },
    ],
    [
      'a reconcile asked for',
      at({ ann: { [RECONCILE_REQUESTED_ANNOTATION]: 't2' }, handled: 't1' }),
      { requested: 't2' },
    ],
    [
      'a reconcile asked for and handled: none',
      at({ ann: { [RECONCILE_REQUESTED_ANNOTATION]: 't1' }, handled: 't1' }),
      { requested: undefined },
    ],
  ];
  it.each(cases)('%s', (_what, o, expected) => {
    expect(planReconcile(o)).toMatchObject(expected);
  });
});

describe('priorityOf: one definition, for the queue and the API budget', () => {
  const cases: [string, KubeObject, string | undefined, string][] = [
    ['a create: high', at({}), undefined, 'high'],
    [
      'an edit of something that exists: urgent',
      at({ id: 'thg_1', gen: 2, observedGen: 1 }),
      undefined,
      'urgent',
    ],
    [
      'an edit before the first sync finished (no id): high',
      at({ gen: 2, observedGen: 1 }),
      undefined,
      'high',
    ],
    ['in sync, looked at again: high', at({ id: 'thg_1', gen: 2, observedGen: 2 }), undefined, 'high'],
    ['a delete: urgent', at({ deleting: true }), undefined, 'urgent'],
    ['a reconcile asked for: urgent', at({ gen: 2, observedGen: 2 }), 't2', 'urgent'],
  ];
  it.each(cases)('%s', (_what, o, requested, expected) => {
    expect(priorityOf(o, requested)).toBe(expected);
  });
});

describe('unchanged: whether a sync can be skipped', () => {
  const o = () => {
    const x = at({ id: 'thg_1', gen: 2 });
    x.metadata.resourceVersion = '10';
    return x;
  };
  const last = {
    at: 1000,
    generation: 2,
    id: 'thg_1',
    status: statusDigest(o().status),
    resourceVersion: '10',
  };
  const snapshot = (completedAt: number, pageAt?: number) => ({
    startedAt: completedAt - 10,
    completedAt,
    items: new Map(pageAt === undefined ? [] : [['thg_1', new Listed({ id: 'thg_1', uri: 'u' }, pageAt)]]),
  });
  const base = { obj: o(), last, resyncMs: 1000, now: 1500 };
  const cases: [string, Partial<Parameters<typeof unchanged>[0]>, boolean][] = [
    ['nothing remembered: a sync', { last: undefined }, false],
    ['a reconcile asked for: a sync', { requested: 't' }, false],
    ['a new generation: a sync', { last: { ...last, generation: 1 } }, false],
    [
      'status written by someone else: a sync',
      { last: { ...last, status: statusDigest({ ...o().status, id: 'thg_9' }) } },
      false,
    ],
    [
      'status differs but the cache lags behind this process: unchanged',
      { last: { ...last, status: statusDigest({}), resourceVersion: '11' } },
      true,
    ],
    ['no bulk list, resync not due: unchanged', {}, true],
    ['no bulk list, resync due (80% of the period): a sync', { now: 1800 }, false],
    ['a bulk list on its way: unchanged, wait for it', { bulk: { failing: false } }, true],
    ['the bulk lists fail, resync due: a sync', { bulk: { failing: true }, now: 1900 }, false],
    [
      'a newer list showing the resource after the last write: a sync',
      { bulk: { latest: snapshot(1200, 1195), failing: false }, lastRemoteWrite: 1100 },
      false,
    ],
    [
      'a newer list whose page predates this process’s write: unchanged',
      { bulk: { latest: snapshot(1200, 1050), failing: false }, lastRemoteWrite: 1100 },
      true,
    ],
    [
      'a newer list without the resource, begun after the write: a sync (it may be gone)',
      { bulk: { latest: snapshot(1200), failing: false }, lastRemoteWrite: 1100 },
      false,
    ],
    ['an older list: unchanged', { bulk: { latest: snapshot(900, 895), failing: false } }, true],
    [
      'a newer list showing the resource just as the last sync left it: unchanged',
      {
        bulk: { latest: snapshot(1200, 1195), failing: false },
        lastRemoteWrite: 1100,
        last: { ...last, remote: remoteDigest({ id: 'thg_1', uri: 'u' }) },
      },
      true,
    ],
    [
      'a newer list showing the resource changed since the last sync: a sync',
      {
        bulk: { latest: snapshot(1200, 1195), failing: false },
        lastRemoteWrite: 1100,
        last: { ...last, remote: remoteDigest({ id: 'thg_1', uri: 'elsewhere' }) },
      },
      false,
    ],
    [
      'the same resource, but a new generation: a sync',
      {
        bulk: { latest: snapshot(1200, 1195), failing: false },
        last: { ...last, generation: 1, remote: remoteDigest({ id: 'thg_1', uri: 'u' }) },
      },
      false,
    ],
  ];
  it.each(cases)('%s', (_what, input, expected) => {
    expect(unchanged({ ...base, ...input } as Parameters<typeof unchanged>[0])).toBe(expected);
  });
});

describe('planSync: conflicts and the finalizer', () => {
  /** THING keeping its name unique, as a route keeps its match on an edge. */
  const UNIQUE = {
    ...THING,
    conflict: { key: (d: Record<string, unknown>) => String(d.name), what: 'the name n' },
  } as unknown as AnyBinding;
  const other = (o: { id?: string; ns?: string; name?: string } = {}) => {
    const x = obj({ id: o.id, uid: 'uid-b' });
    x.metadata.name = o.name ?? 'b';
    x.metadata.namespace = o.ns ?? 'team';
    return { key: 'n', obj: x };
  };
  const conflict = (c: Partial<NonNullable<Parameters<typeof planSync>[0]['conflict']>>) => ({
    key: 'n',
    others: [],
    live: { has: () => false },
    remotes: [],
    ...c,
  });
  const plan = (o: Partial<Parameters<typeof planSync>[0]>) =>
    planSync({
      binding: UNIQUE,
      obj: obj(),
      clusterId: CLUSTER,
      digestKey: KEY,
      want: want(),
      ...o,
    });
  const cases: [string, Partial<Parameters<typeof planSync>[0]>, Record<string, unknown>][] = [
    [
      'another object of the namespace holds the key: Conflict naming it, looked at again soon',
      { conflict: conflict({ others: [other({ id: 'thg_2' })] }) },
      {
        action: 'stall',
        reason: 'Conflict',
        message: 'Thing b has the name n: delete one of them, or change this one',
        requeueAfterMs: 15_000,
      },
    ],
    [
      'another namespace’s object: Conflict, not named',
      { conflict: conflict({ others: [other({ id: 'thg_2', ns: 'other' })] }) },
      {
        action: 'stall',
        reason: 'Conflict',
        message: expect.stringContaining('an object in another namespace'),
      },
    ],
    [
      'another object without an id yet: no conflict, a create',
      { conflict: conflict({ others: [other()] }) },
      { action: 'create' },
    ],
    [
      'a listed resource made outside the cluster: Conflict',
      {
        conflict: conflict({ remotes: [{ id: 'thg_7', remote: { id: 'thg_7', name: 'n', metadata: '' } }] }),
      },
      {
        action: 'stall',
        reason: 'Conflict',
        message: expect.stringContaining('thg_7, made outside the cluster'),
      },
    ],
    [
      'the object already holds the key with its own resource: no conflict',
      {
        id: 'thg_1',
        seen: found(),
        conflict: conflict({ others: [other({ id: 'thg_2' })] }),
        obj: obj({ id: 'thg_1' }),
      },
      { action: 'nothing' },
    ],
    ['no candidates: a create', { conflict: conflict({}) }, { action: 'create' }],
    [
      'adopting by annotation without the finalizer: added with the first write',
      {
        obj: obj({ finalizers: [], ann: { [ID_ANNOTATION]: 'thg_1' } }),
        id: 'thg_1',
        seen: found(),
        finalizer: 'add',
      },
      { action: 'adopt', addFinalizer: true },
    ],
    [
      'an update with the finalizer kept: nothing added',
      { obj: obj({ id: 'thg_1' }), id: 'thg_1', seen: found(remote({ name: 'old' })), finalizer: 'keep' },
      { action: 'update', patch: { name: 'n' } },
    ],
  ];
  it.each(cases)('%s', (_what, input, expected) => {
    expect(plan(input)).toMatchObject(expected);
  });
  it('no finalizer step named: none added', () => {
    expect(plan({ obj: obj({ id: 'thg_1' }), id: 'thg_1', seen: found() })).not.toHaveProperty(
      'addFinalizer',
    );
  });
});

describe('observe-only: the DriftObserved Event only when the drift is new or different', () => {
  const readyWith = (message: string) => {
    const o = obj({ ann: { [ID_ANNOTATION]: 'thg_1' } });
    (o.status as Record<string, unknown>).conditions = [{ type: 'Ready', status: 'True', message }];
    return o;
  };
  const drifted = 'thg_1 differs from the spec in region (managementPolicy Observe: left as it is)';
  const observe = (o: KubeObject, w: Wanted) =>
    planObserveOnly({ binding: THING, obj: o, clusterId: CLUSTER, id: 'thg_1', seen: found(), want: w });
  it('new drift: the Event', () => {
    expect(
      observe(
        readyWith('thg_1 equals the spec (managementPolicy Observe)'),
        want({ desired: { region: 'us' } }),
      ),
    ).toMatchObject({
      event: { reason: 'DriftObserved', message: 'thg_1 differs from the spec in region' },
    });
  });
  it('the same drift again: no Event', () => {
    expect(observe(readyWith(drifted), want({ desired: { region: 'us' } }))).not.toHaveProperty('event');
  });
  it('no drift: no Event', () => {
    expect(observe(readyWith(drifted), want())).not.toHaveProperty('event');
  });
});

describe('deleteTarget: which resource a DELETE may take', () => {
  const released = { action: 'release' as const, reason: 'OwnedElsewhere' as const, message: '' };
  const cases: [string, string | undefined, string | undefined][] = [
    ['its own: the id', deleteTarget('thg_1', { action: 'delete' }), 'thg_1'],
    ['gone already: none', deleteTarget('thg_1', { action: 'gone' }), undefined],
    ['another’s, and none of its own: none', deleteTarget('thg_1', released), undefined],
    [
      'another’s, its own found by marker: that one',
      deleteTarget('thg_1', released, { id: 'thg_5' }),
      'thg_5',
    ],
    [
      'another’s, the marker search finds the same id: none',
      deleteTarget('thg_1', released, { id: 'thg_1' }),
      undefined,
    ],
  ];
  it.each(cases)('%s', (_what, target, expected) => {
    expect(target).toBe(expected);
  });
});

describe('a create not found by its marker: made anew, or looked for again while it may still be made', () => {
  const T = 1_000_000;
  it.each([
    ['the API refused it (its own answer)', { at: T, answered: true }, T + 100, { action: 'create' }],
    [
      'no answer, failed 0.1 s ago: looked for again at 5 s',
      { at: T, answered: false },
      T + 100,
      { action: 'wait', ms: 4_900 },
    ],
    [
      'no answer, failed 6 s ago: looked for again at 30 s',
      { at: T, answered: false },
      T + 6_000,
      { action: 'wait', ms: 24_000 },
    ],
    ['no answer, failed 30 s ago: made anew', { at: T, answered: false }, T + 30_000, { action: 'create' }],
    ['after a restart, the first look: looked for again in 5 s', undefined, T, { action: 'wait', ms: 5_000 }],
    [
      'after a restart, looked for once 2 s ago: looked for again at 5 s',
      { at: T },
      T + 2_000,
      { action: 'wait', ms: 3_000 },
    ],
    [
      'after a restart, looked for once 5 s ago: made anew (a crash is no sign of a late commit)',
      { at: T },
      T + 5_000,
      { action: 'create' },
    ],
  ])('%s', (_, last, now, want) => {
    expect(unfoundCreate({ last, now })).toEqual(want);
  });
});
