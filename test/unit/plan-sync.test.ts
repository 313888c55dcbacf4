// A sync's plan from the one value its gather returns, as a table: a want that fails, a
// create whose outcome is unknown (recovered, made anew, waited for), a read that failed, a
// stall, or the writes (plan-sync.ts planGatheredSync, planGatheredObserve).
import { describe, expect, it } from 'vitest';
import type { AnyBinding } from '../../src/operator/runtime/bindings/binding.ts';
import { encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';
import { CREATE_PENDING_ANNOTATION, FINALIZER, ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import { stalled } from '../../src/operator/runtime/engine/failure.ts';
import {
  type Gathered,
  planGatheredObserve,
  planGatheredSync,
} from '../../src/operator/runtime/engine/plan-sync.ts';
import type { Remote, Wanted } from '../../src/operator/runtime/engine/types.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

const T = 1_000_000;
const SELF = { cluster: 'c1', uid: 'u1', object: 'Thing/team/a' };
const THING = {
  kind: 'Thing',
  fromRemote: (r: Record<string, unknown>) => ({ name: r.name }),
  updatable: ['name'],
} as unknown as AnyBinding;
const obj = (
  o: { id?: string; ann?: Record<string, string>; spec?: Record<string, unknown> } = {},
): KubeObject => ({
  metadata: {
    name: 'a',
    namespace: 'team',
    uid: 'u1',
    generation: 1,
    finalizers: [FINALIZER],
    ...(o.ann ? { annotations: o.ann } : {}),
  },
  spec: o.spec ?? {},
  status: o.id ? { id: o.id } : {},
});
const want: Wanted = {
  desired: { name: 'n' },
  modules: new Map(),
  common: { description: '', metadata: encodeMetadata(SELF, '') },
};
const remote = (o: Record<string, unknown> = {}): Remote => ({
  id: 'thg_1',
  name: 'n',
  description: '',
  metadata: encodeMetadata(SELF, ''),
  ...o,
});
const pending = { [CREATE_PENDING_ANNOTATION]: '2026-01-01T00:00:00Z' };
const refused = stalled('DuplicateReference', 'twice');
const unavailable = {
  failed: true as const,
  phase: { state: 'progressing' as const, reason: 'APIUnavailable', message: 'get thg_1: down' },
  outcome: { retry: true },
  quietMs: 5000,
};
const plan = (o: KubeObject, g: Gathered) =>
  planGatheredSync(g, { binding: THING, obj: o, clusterId: 'c1', digestKey: 'k', finalizer: 'keep', now: T });

describe('planGatheredSync: in order, from the gathered value', () => {
  const rows: [string, KubeObject, Gathered, Record<string, unknown>][] = [
    [
      'the want fails: that failure, nothing else',
      obj(),
      { want: refused },
      { decision: { phase: { reason: 'DuplicateReference' } } },
    ],
    ['no id, no create pending: create', obj(), { want }, { decision: { action: 'create' } }],
    [
      'an id, the resource as wanted: nothing',
      obj({ id: 'thg_1' }),
      { want, id: 'thg_1', seen: { found: true, remote: remote() } },
      { decision: { action: 'nothing', id: 'thg_1' } },
    ],
    [
      'the read failed: that failure',
      obj({ id: 'thg_1' }),
      { want, id: 'thg_1', seen: unavailable },
      { decision: { phase: { reason: 'APIUnavailable' } } },
    ],
    [
      'a lost create found by its marker: recovered, the memo forgets, adopted',
      obj({ ann: pending }),
      { want, lost: { looked: true, found: 'thg_1' }, seen: { found: true, remote: remote() } },
      {
        lostCreate: { forget: true },
        recovered: 'thg_1',
        decision: { action: 'adopt', adopt: { annotate: true, event: false } },
      },
    ],
    [
      'recovered, then the read failed: recovered and the memo forgets all the same, then the failure',
      obj({ ann: pending }),
      { want, lost: { looked: true, found: 'thg_1' }, seen: unavailable },
      { lostCreate: { forget: true }, recovered: 'thg_1', decision: { phase: { reason: 'APIUnavailable' } } },
    ],
    [
      'a lost create not found that may still be made: waits, the memo says when to look next',
      obj({ ann: pending }),
      { want, lost: { looked: true } },
      {
        lostCreate: { set: { at: T, nextLook: T + 5_000 } },
        decision: { phase: { reason: 'CreateUnconfirmed' } },
      },
    ],
    [
      'a lost create not found, the API refused it: create',
      obj({ ann: pending }),
      { want, lost: { last: { at: T, answered: true }, looked: true } },
      { decision: { action: 'create' } },
    ],
    [
      'a stall of the plan: as a failure to report',
      obj({ ann: { [ID_ANNOTATION]: 'thg_9' } }),
      { want, id: 'thg_9', seen: { found: false } },
      { decision: { phase: { state: 'stalled', reason: 'AdoptionFailed' } } },
    ],
  ];
  it.each(rows)('%s', (_what, o, g, expected) => {
    expect(plan(o, g)).toMatchObject(expected);
  });
  it('the secret digests compared: this process’s, else status’s', () => {
    const o = { ...obj({ id: 'thg_1' }), status: { id: 'thg_1', secretDigests: { auth: 's' } } };
    const seen = { found: true as const, remote: remote() };
    expect(plan(o, { want, id: 'thg_1', seen }).applied).toEqual({ auth: 's' });
    expect(plan(o, { want, id: 'thg_1', seen, applied: { auth: 'm' } }).applied).toEqual({ auth: 'm' });
  });
});

describe('planGatheredObserve: the report, or the failure', () => {
  const observe = (g: Parameters<typeof planGatheredObserve>[0]) =>
    planGatheredObserve(g, {
      binding: THING,
      obj: obj({ spec: { managementPolicy: 'Observe' } }),
      clusterId: 'c1',
      id: 'thg_1',
    });
  it.each([
    ['the want fails', { want: refused }, { phase: { reason: 'DuplicateReference' } }],
    ['the read failed', { want, seen: unavailable }, { phase: { reason: 'APIUnavailable' } }],
    [
      'not found: NotFound, a stall',
      { want, seen: { found: false as const } },
      { phase: { state: 'stalled', reason: 'NotFound' } },
    ],
    [
      'found as wanted: Observed',
      { want, seen: { found: true as const, remote: remote() } },
      { action: 'report', phase: { reason: 'Observed' } },
    ],
  ])('%s', (_what, g, expected) => {
    expect(observe(g)).toMatchObject(expected);
  });
});
