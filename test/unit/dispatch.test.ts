// Which informer events re-read an object's references (the reverse index the engines wake
// referrers by): only a change of spec can change them, and a relist can hide one behind an
// unchanged generation when the object was deleted and made again while the watch was away.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { referencesKept } from '../../src/operator/runtime/manager/dispatch.ts';

const obj = (uid: string, generation?: number): KubeObject => ({
  metadata: { name: 'shop', namespace: 'team', uid, ...(generation === undefined ? {} : { generation }) },
  spec: {},
});

describe('references kept across an informer event', () => {
  const cases: [string, 'add' | 'update' | 'delete', KubeObject, KubeObject | undefined, boolean][] = [
    ['a new object: read', 'add', obj('u1', 1), undefined, false],
    [
      'a status or annotation write (same generation, same uid): kept',
      'update',
      obj('u1', 3),
      obj('u1', 3),
      true,
    ],
    ['a spec change (a new generation): read', 'update', obj('u1', 4), obj('u1', 3), false],
    [
      'deleted and made again while the watch was away (same generation, another uid): read',
      'update',
      obj('u2', 1),
      obj('u1', 1),
      false,
    ],
    ['an object without a generation: read', 'update', obj('u1'), obj('u1'), false],
    ['an update without the old version: read', 'update', obj('u1', 1), undefined, false],
    ['deleted: read (to none)', 'delete', obj('u1', 1), obj('u1', 1), false],
  ];
  it.each(cases)('%s', (_, type, now, before, kept) => {
    expect(referencesKept(type, now, before)).toBe(kept);
  });
});
