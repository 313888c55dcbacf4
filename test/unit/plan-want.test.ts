// What an object wants, as tables: what the caches say of its raw ids, the id it names for
// adoption and its references -> a refusal, a wait, or each reference's id; then its Secrets'
// values and owner marker -> what it asks the API for (plan-want.ts).
import { describe, expect, it } from 'vitest';
import type { AnyBinding } from '../../src/operator/runtime/bindings/binding.ts';
import { ID_ANNOTATION } from '../../src/operator/runtime/constants.ts';
import { adoptedId } from '../../src/operator/runtime/engine/facts.ts';
import { QUIET_WAIT_FOR_PROGRESS_MS, QUIET_WAIT_MS } from '../../src/operator/runtime/engine/failure.ts';
import {
  type Held,
  METADATA_MAX,
  planReferences,
  planWanted,
  type SecretFacts,
  type WantFacts,
} from '../../src/operator/runtime/engine/plan-want.ts';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';

const obj = (
  o: { ann?: Record<string, string>; id?: string; spec?: Record<string, unknown> } = {},
): KubeObject => ({
  metadata: { name: 'r', namespace: 'team', uid: 'u1', ...(o.ann ? { annotations: o.ann } : {}) },
  spec: o.spec ?? {},
  status: o.id ? { id: o.id } : {},
});
const facts = (o: Partial<WantFacts> = {}): WantFacts => ({ rawIds: [], references: [], ...o });
const backend = (o: Partial<Held> = {}): Held => ({
  kind: 'Backend',
  name: 'b',
  namespace: 'team',
  id: 'bkd_1',
  confirmed: 'bkd_1',
  checks: true,
  ...o,
});
const ref = (o: { target?: Held; cycle?: string[]; path?: string; name?: string } = {}) => ({
  kind: 'Backend',
  name: o.name ?? 'b',
  path: o.path ?? 'spec.backend',
  ...('target' in o ? (o.target ? { target: o.target } : {}) : { target: backend() }),
  ...(o.cycle ? { cycle: o.cycle } : {}),
});

describe('planReferences: refused, waiting, or each reference’s id', () => {
  const rows: [string, KubeObject, WantFacts, Record<string, unknown>][] = [
    [
      'a raw id another namespace manages: ReferenceNotAllowed',
      obj(),
      facts({ rawIds: [{ path: 'spec.ipPolicyID', id: 'ipp_1', elsewhere: true }] }),
      { phase: { state: 'stalled', reason: 'ReferenceNotAllowed' } },
    ],
    [
      'a raw id whose holder no sync here checked: waits quietly, looked at again in 2 s',
      obj(),
      facts({
        rawIds: [
          {
            path: 'spec.backendID',
            id: 'bkd_1',
            elsewhere: false,
            holder: backend({ confirmed: undefined }),
          },
        ],
      }),
      {
        phase: { state: 'progressing', reason: 'WaitingForReference' },
        outcome: { requeueAfterMs: 2000 },
        quietMs: QUIET_WAIT_FOR_PROGRESS_MS,
        quietWhenReady: true,
      },
    ],
    [
      'a raw id no object here holds, from a namespace that may not adopt: AdoptionNotAllowed',
      obj(),
      facts({ mayAdopt: false, rawIds: [{ path: 'spec.ipPolicyID', id: 'ipp_2abc', elsewhere: false }] }),
      { phase: { state: 'stalled', reason: 'AdoptionNotAllowed' } },
    ],
    [
      'a raw id held in another account: AccountMismatch',
      obj(),
      facts({
        account: 'EdgeAccount/team/a',
        rawIds: [
          {
            path: 'spec.backendID',
            id: 'bkd_1',
            elsewhere: false,
            holder: backend({ account: 'EdgeAccount/team/b' }),
          },
        ],
      }),
      { phase: { state: 'stalled', reason: 'AccountMismatch' } },
    ],
    [
      'the id named for adoption is held in another namespace: OwnedElsewhere',
      obj(),
      facts({ adopted: { id: 'rt_1', holder: 'other' } }),
      {
        phase: {
          reason: 'OwnedElsewhere',
          message: 'rt_1 is managed by an object in another namespace; not taking it over',
        },
      },
    ],
    [
      'a reference listed twice: DuplicateReference',
      obj(),
      facts({ references: [ref({ path: 'spec.a' }), ref({ path: 'spec.b' })] }),
      {
        phase: {
          reason: 'DuplicateReference',
          message: 'spec.b and spec.a both reference Backend b: list each once',
        },
      },
    ],
    [
      'a reference in another account: AccountMismatch',
      obj(),
      facts({
        account: 'EdgeAccount/team/a',
        references: [ref({ target: backend({ account: 'EdgeAccount/team/b' }) })],
      }),
      { phase: { reason: 'AccountMismatch' } },
    ],
    [
      'a reference whose id no sync here checked: waits',
      obj(),
      facts({ references: [ref({ target: backend({ confirmed: 'bkd_0' }) })] }),
      { phase: { reason: 'WaitingForReference' }, outcome: { requeueAfterMs: 2000 } },
    ],
    [
      'a reference without an id, in a cycle: ReferenceCycle with its members',
      obj(),
      facts({
        references: [ref({ target: backend({ id: undefined }), cycle: ['Route r', 'Backend b', 'Route r'] })],
      }),
      {
        phase: {
          reason: 'ReferenceCycle',
          message: 'references form a cycle: Route r -> Backend b -> Route r; break it to continue',
        },
      },
    ],
    [
      'a reference to an object on its way: waits, quietly for long',
      obj(),
      facts({ references: [ref({ target: backend({ id: undefined }) })] }),
      {
        phase: {
          reason: 'WaitingForReference',
          message: 'waiting for Backend b (spec.backend) to have an id',
        },
        quietMs: QUIET_WAIT_FOR_PROGRESS_MS,
      },
    ],
    [
      'a reference to an object that is stalled: waits, said soon',
      obj(),
      facts({ references: [ref({ target: backend({ id: undefined, stalled: true }) })] }),
      { phase: { reason: 'WaitingForReference' }, quietMs: QUIET_WAIT_MS },
    ],
    [
      'a reference to an object that does not exist: waits, said soon',
      obj(),
      facts({ references: [ref({ target: undefined })] }),
      { phase: { reason: 'WaitingForReference' }, quietMs: QUIET_WAIT_MS },
    ],
  ];
  it.each(rows)('%s', (_what, o, f, expected) => {
    expect(planReferences(o, f)).toMatchObject(expected);
  });
  it('every reference checked: their ids by Kind/name', () => {
    const ids = planReferences(
      obj(),
      facts({
        references: [
          ref(),
          ref({ name: 'c', target: backend({ name: 'c', id: 'bkd_2', confirmed: 'bkd_2' }) }),
        ],
      }),
    );
    expect(ids).toEqual(
      new Map([
        ['Backend/b', 'bkd_1'],
        ['Backend/c', 'bkd_2'],
      ]),
    );
  });
  it('the id named for adoption held in this namespace: no refusal', () => {
    expect(planReferences(obj(), facts({ adopted: { id: 'rt_1', holder: 'team' } }))).toEqual(new Map());
  });
});

describe('adoptedId: the id the annotation names to adopt or read', () => {
  const rows: [string, KubeObject, string | undefined][] = [
    ['no annotation: none', obj(), undefined],
    ['annotated, no id in status: it', obj({ ann: { [ID_ANNOTATION]: 'rt_1' } }), 'rt_1'],
    [
      'annotated, status holds another: status decides',
      obj({ ann: { [ID_ANNOTATION]: 'rt_1' }, id: 'rt_2' }),
      undefined,
    ],
    [
      'observe-only: the annotation, whatever status holds',
      obj({ ann: { [ID_ANNOTATION]: 'rt_1' }, id: 'rt_2', spec: { managementPolicy: 'Observe' } }),
      'rt_1',
    ],
    [
      'the same as status: its own',
      obj({ ann: { [ID_ANNOTATION]: 'rt_1' }, id: 'rt_1', spec: { managementPolicy: 'Observe' } }),
      undefined,
    ],
  ];
  it.each(rows)('%s', (_what, o, expected) => {
    expect(adoptedId(o)).toBe(expected);
  });
});

const THING = {
  kind: 'Thing',
  desired: (s: Record<string, unknown>, ref: (k: string, n: string) => string) => ({
    name: s.name,
    backend: ref('Backend', 'b'),
  }),
  modules: [
    {
      name: 'auth',
      desired: (_s: unknown, _r: unknown, secret: (n: string, k: string) => string) => ({
        secret: secret('s', 'k'),
      }),
    },
  ],
} as unknown as AnyBinding;
const want = (secrets: SecretFacts[], spec: Record<string, unknown> = { name: 'n' }) =>
  planWanted({
    binding: THING,
    obj: obj({ spec }),
    clusterId: 'c1',
    ids: new Map([['Backend/b', 'bkd_1']]),
    secrets,
  });

describe('planWanted: what the object asks the API for, or why not', () => {
  const rows: [string, ReturnType<typeof want>, Record<string, unknown>][] = [
    [
      'a Secret without the key: waits',
      want([{ name: 's', key: 'k', path: 'spec.auth.secret', value: undefined }]),
      { phase: { reason: 'WaitingForSecret', message: 'Secret s has no key k (spec.auth.secret)' } },
    ],
    [
      'no Secret: waits',
      want([{ name: 's', key: 'k', path: 'spec.auth.secret', value: null }]),
      { phase: { reason: 'WaitingForSecret', message: 'Secret s not found (spec.auth.secret)' } },
    ],
    [
      'metadata too long with the owner marker: MetadataTooLong',
      want([{ name: 's', key: 'k', path: 'p', value: 'eA==' }], {
        name: 'n',
        metadata: 'x'.repeat(METADATA_MAX),
      }),
      { phase: { state: 'stalled', reason: 'MetadataTooLong' } },
    ],
    [
      'the desired fields with the references’ ids, the modules with the Secrets’ values',
      want([{ name: 's', key: 'k', path: 'p', value: Buffer.from('pw').toString('base64') }]),
      {
        desired: { name: 'n', backend: 'bkd_1' },
        modules: new Map([['auth', { secret: 'pw' }]]),
        common: { description: '' },
      },
    ],
  ];
  it.each(rows)('%s', (_what, got, expected) => {
    expect(got).toMatchObject(expected);
  });
});
