// A create whose outcome is unknown, as a table: what the memo holds and what the look by the
// owner marker found -> recovered, made anew, or waited for, and the memo's next state
// (plan-create.ts planLostCreate; the look is read.ts's, the memo's write execute.ts's).
import { describe, expect, it } from 'vitest';
import {
  type LostCreate,
  type LostCreateDecision,
  planLostCreate,
} from '../../src/operator/runtime/engine/plan-create.ts';

const T = 1_000_000;
const wait = (ms: number) => ({
  action: 'wait',
  failure: {
    phase: { state: 'progressing', reason: 'CreateUnconfirmed' },
    outcome: { requeueAfterMs: ms },
  },
});

describe('planLostCreate: recovered, made anew, or waited for', () => {
  const rows: [string, LostCreate, number, Record<string, unknown>][] = [
    [
      'not looked for (before the next look): waits until then, the memo as it is',
      { last: { at: T, answered: false, nextLook: T + 4_000 }, looked: false },
      T + 1_000,
      wait(3_000),
    ],
    [
      'found by its marker: its id, and the memo forgets the failed create',
      { last: { at: T, answered: false }, looked: true, found: 'thg_9' },
      T + 100,
      { action: 'recovered', id: 'thg_9', memo: { forget: true } },
    ],
    [
      'found after a restart (nothing remembered): its id',
      { looked: true, found: 'thg_9' },
      T,
      { action: 'recovered', id: 'thg_9', memo: { forget: true } },
    ],
    [
      'not found, the API refused it: made anew',
      { last: { at: T, answered: true }, looked: true },
      T + 100,
      { action: 'create' },
    ],
    [
      'not found, no answer 0.1 s ago: waits, looked for again at 5 s',
      { last: { at: T, answered: false }, looked: true },
      T + 100,
      { ...wait(4_900), memo: { set: { at: T, answered: false, nextLook: T + 5_000 } } },
    ],
    [
      'not found after a restart, the first look: waits 5 s, the memo starts now',
      { looked: true },
      T,
      { ...wait(5_000), memo: { set: { at: T, nextLook: T + 5_000 } } },
    ],
    [
      'not found, no answer 30 s ago: made anew',
      { last: { at: T, answered: false, nextLook: T + 30_000 }, looked: true },
      T + 30_000,
      { action: 'create' },
    ],
  ];
  it.each(rows)('%s', (_what, lost, now, expected) => {
    const d: LostCreateDecision = planLostCreate('Thing', lost, now);
    expect(d).toMatchObject(expected);
    if (d.action === 'create') expect(d).toEqual({ action: 'create' });
  });
  it('the wait names the kind and says nothing is created or let go meanwhile', () => {
    const d = planLostCreate('Thing', { looked: true }, T);
    expect(d.action === 'wait' && d.failure.phase.message).toMatch(
      /^the last create of this Thing got no answer from the API and may still be made/,
    );
  });
});
