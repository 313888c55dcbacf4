// The index entry that is one key while one object holds it: adding, removing and reading back
// give what a Set would, whichever form the entry has.
import { describe, expect, it } from 'vitest';
import {
  type Holders,
  holdersOf,
  withHolder,
  withoutHolder,
} from '../../src/operator/runtime/state/holders.ts';

const add = (...ks: string[]) => ks.reduce<Holders | undefined>((h, k) => withHolder(h, k), undefined);
const read = (h: Holders | undefined) => [...holdersOf(h)];

describe('holders', () => {
  const cases: [string, () => Holders | undefined, string[]][] = [
    ['none', () => undefined, []],
    ['one: the key itself, no Set', () => add('a'), ['a']],
    ['the same key twice: still one', () => add('a', 'a'), ['a']],
    ['two, in the order added', () => add('b', 'a'), ['b', 'a']],
    ['three less the middle one', () => withoutHolder(add('a', 'b', 'c'), 'b'), ['a', 'c']],
    ['two less one: the one left', () => withoutHolder(add('a', 'b'), 'a'), ['b']],
    ['one less itself: none', () => withoutHolder(add('a'), 'a'), []],
    ['one less another: unchanged', () => withoutHolder(add('a'), 'b'), ['a']],
    ['none less one: none', () => withoutHolder(undefined, 'a'), []],
    [
      'back to one, then a second again',
      () => withHolder(withoutHolder(add('a', 'b'), 'a'), 'c'),
      ['b', 'c'],
    ],
  ];
  for (const [what, run, want] of cases) it(what, () => expect(read(run())).toEqual(want));

  it('keeps one holder as the string, not a Set', () => {
    expect(add('a')).toBe('a');
    expect(withoutHolder(add('a', 'b'), 'b')).toBe('a');
  });
});
