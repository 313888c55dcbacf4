// The ids waiting for their annotation: the idle loop asks every second, so the answer must
// hold only those waiting, oldest first, whatever else the memos hold.
import { expect, it } from 'vitest';
import { Memos } from '../../src/operator/runtime/engine/memo.ts';

it('ids to record: only those waiting, oldest first; a changed id keeps its place; written or dropped, gone', () => {
  const m = new Memos();
  for (let i = 0; i < 5; i++) m.of(`ns/settled${i}`).last = { at: i };
  m.recordLater('ns/b', 'ipp_b1', 10);
  m.recordLater('ns/a', 'ipp_a', 20);
  m.recordLater('ns/c', 'ipp_c', 30);
  m.recordLater('ns/b', 'ipp_b2', 40);
  expect(m.idsToRecord()).toEqual([
    ['ns/b', { id: 'ipp_b2', since: 40 }],
    ['ns/a', { id: 'ipp_a', since: 20 }],
    ['ns/c', { id: 'ipp_c', since: 30 }],
  ]);
  // b's first id written after its second came: the second still waits
  m.recorded('ns/b', 'ipp_b1');
  m.recorded('ns/a', 'ipp_a');
  m.drop('ns/c');
  expect(m.idsToRecord()).toEqual([['ns/b', { id: 'ipp_b2', since: 40 }]]);
  m.recorded('ns/b');
  expect(m.idsToRecord()).toEqual([]);
  expect(m.peek('ns/b')?.idToRecord).toBeUndefined();
  // waiting again later: at the back
  m.recordLater('ns/a', 'ipp_a', 50);
  m.recordLater('ns/b', 'ipp_b2', 60);
  expect(m.idsToRecord().map(([k]) => k)).toEqual(['ns/a', 'ns/b']);
});
