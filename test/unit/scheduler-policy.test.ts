// The scheduler's decisions as tables (src/operator/runtime/scheduler/policy.ts): whether an item may
// begin, how many callers a budget lets wait, how many workers one account holds, and whether a
// run waiting for its budget lets its worker go.
import { describe, expect, it } from 'vitest';
import {
  type AdmissionFacts,
  accountCap,
  admission,
  type Deferral,
  LET_GO_MS,
  letsGo,
  roomOf,
  THROTTLE_MS,
  throttles,
} from '../../src/operator/runtime/scheduler/policy.ts';

const base: AdmissionFacts = {
  priority: 'high',
  accountStarting: false,
  kindListing: false,
  hasId: false,
  throttled: false,
  waiting: 0,
  room: 4,
  newcomer: false,
};

const rows: [string, Partial<AdmissionFacts>, Deferral][] = [
  ['an idle budget: it begins', {}, false],
  ['its account not checked yet after a start: kept for the start', { accountStarting: true }, 'start'],
  ['the account starting keeps an edit back too', { accountStarting: true, priority: 'urgent' }, 'start'],
  ['a newcomer waits for its account start like anyone', { accountStarting: true, newcomer: true }, 'start'],
  [
    'its kind being listed, and a remote resource to compare: waits for the list',
    { kindListing: true, hasId: true },
    'start',
  ],
  [
    'its kind being listed, but nothing made yet: nothing to compare, it begins',
    { kindListing: true },
    false,
  ],
  [
    'an edit reads its own resource: it does not wait for the list',
    { kindListing: true, hasId: true, priority: 'urgent' },
    false,
  ],
  ['observation waits for the list too', { kindListing: true, hasId: true, priority: 'low' }, 'start'],
  ["a 429's wait not over: kept for the budget", { throttled: true }, 'budget'],
  ["a 429's wait holds a newcomer back too", { throttled: true, newcomer: true }, 'budget'],
  ['fewer callers waiting than a moment serves: it begins', { waiting: 3 }, false],
  ['a moment of callers waiting: kept for the budget', { waiting: 4 }, 'budget'],
  ["a newcomer has a moment's room of its own", { waiting: 4, newcomer: true }, false],
  ['a newcomer past both: kept', { waiting: 8, newcomer: true }, 'budget'],
  ['a room of one (a slow account): the second caller waits queued', { waiting: 1, room: 1 }, 'budget'],
  ['no limit: never kept for the budget', { waiting: 1_000, room: Number.POSITIVE_INFINITY }, false],
];

describe('admission: whether an item may begin now', () => {
  for (const [name, facts, want] of rows) it(name, () => expect(admission({ ...base, ...facts })).toBe(want));
});

describe('room: callers a budget lets wait before it counts as backed up', () => {
  const table: [number, number][] = [
    // requests a minute, room in 2 s
    [120, 4],
    [600, 20],
    [3, 1],
    [1, 1],
  ];
  for (const [perMinute, want] of table)
    it(`${perMinute} a minute: ${want}`, () => expect(roomOf((perMinute - 2) / 60_000, 2_000)).toBe(want));
});

describe('cap: the workers one account may hold', () => {
  const table: [number, number, number][] = [
    [4, 1, Number.POSITIVE_INFINITY],
    [4, 2, 3],
    [4, 50, 3],
    [1, 2, 1],
  ];
  for (const [workers, accounts, want] of table)
    it(`${workers} workers, ${accounts} accounts: ${want}`, () =>
      expect(accountCap(workers, accounts)).toBe(want));
});

describe('letting a worker go while a run waits for its budget', () => {
  it('a wait of a few milliseconds keeps the worker: handing it on costs more', () =>
    expect([letsGo(0), letsGo(5), letsGo(LET_GO_MS - 1)]).toEqual([false, false, false]));
  it("a wait of a token's interval or more lets it go", () =>
    expect([letsGo(LET_GO_MS), letsGo(508), letsGo(60_000)]).toEqual([true, true, true]));
});

describe("a 429's Retry-After", () => {
  it("holds the account's work not begun from two seconds on; the API's usual second only its own call", () =>
    expect([throttles(1_000), throttles(THROTTLE_MS - 1), throttles(THROTTLE_MS), throttles(30_000)]).toEqual(
      [false, false, true, true],
    ));
});
