// The API's messages name remote ids only; the operator adds the object behind each id, and
// only an object the asking namespace may see: a tenant never learns another's object names.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/operator/runtime/kube/kube.ts';
import { ObjectCache } from '../../src/operator/runtime/state/cache.ts';
import { References } from '../../src/operator/runtime/state/references.ts';

const held = (namespace: string, name: string, id: string): KubeObject =>
  ({ metadata: { namespace, name }, status: { id } }) as unknown as KubeObject;

function cache(sharedNamespaces?: string[]) {
  const c = new ObjectCache({
    kube: { get: () => Promise.reject(new Error('not used')) },
    references: new References(),
    sharedNamespaces,
    secrets: () => undefined,
  });
  c.noteIds('HTTPSEdge', 'add', held('team-a', 'shop', 'edghts_1a2b3c4d5e'));
  c.noteIds('IPPolicy', 'add', held('platform', 'corp', 'ipp_9z8y7x6w5v'));
  return c;
}

describe('naming the ids of an API message', () => {
  const msg = 'Route match expression / must be unique across all routes for HTTPS edge edghts_1a2b3c4d5e.';

  it.each([
    ['the namespace that holds it', 'team-a', 'edghts_1a2b3c4d5e (HTTPSEdge team-a/shop)'],
    ['another namespace: not even the id', 'team-b', 'HTTPS edge another resource of the account.'],
  ])('for %s', (_, ns, expected) => {
    expect(cache().nameIds(msg, ns)).toContain(expected);
    if (ns !== 'team-a') expect(cache().nameIds(msg, ns)).not.toMatch(/team-a|edghts_/);
  });

  it("a shared namespace's objects are named to every namespace (their ids are everyone's to use)", () => {
    const text = 'in use: ipp_9z8y7x6w5v';
    expect(cache(['platform']).nameIds(text, 'team-b')).toBe(
      'in use: ipp_9z8y7x6w5v (IPPolicy platform/corp)',
    );
    expect(cache().nameIds(text, 'team-b')).toBe('in use: another resource of the account');
  });

  it('a field name of the shape of an id is left as it is', () => {
    const text = 'The module tls_termination is not supported for TCP edges; idp_metadata_url too';
    expect(cache().nameIds(text, 'team-b')).toBe(text);
  });

  it('an id no object holds (made through the API) is said only to the object that named it', () => {
    const text = 'an IP restriction of type dashboard already exists: ipx_0a1b2c3d4e5f';
    expect(cache().nameIds(text, 'team-b')).toBe(
      'an IP restriction of type dashboard already exists: another resource of the account',
    );
    expect(cache().nameIds(text, 'team-b', new Set(['ipx_0a1b2c3d4e5f']))).toBe(text);
  });
});

describe('the object behind a remote id', () => {
  type Step = ['add' | 'update' | 'delete', string, string, string | undefined, string?];
  // [event, namespace, name, id now, id before] -> the manager named, then the one elsewhere
  const cases: [string, Step[], string | undefined, string | undefined][] = [
    ['one holder', [['add', 'team-a', 'shop', 'edghts_1']], 'team-a/shop', undefined],
    [
      'a second holder (a status someone wrote): both kept, the first named',
      [
        ['add', 'team-a', 'shop', 'edghts_1'],
        ['add', 'team-b', 'copy', 'edghts_1'],
      ],
      'team-a/shop',
      'team-b/copy',
    ],
    [
      'the first lets go: the second is left',
      [
        ['add', 'team-a', 'shop', 'edghts_1'],
        ['add', 'team-b', 'copy', 'edghts_1'],
        ['update', 'team-a', 'shop', 'edghts_2', 'edghts_1'],
      ],
      'team-b/copy',
      'team-b/copy',
    ],
    [
      'an update that leaves the id: still its holder',
      [
        ['add', 'team-a', 'shop', 'edghts_1'],
        ['update', 'team-a', 'shop', 'edghts_1', 'edghts_1'],
      ],
      'team-a/shop',
      undefined,
    ],
    [
      'deleted: no holder',
      [
        ['add', 'team-a', 'shop', 'edghts_1'],
        ['delete', 'team-a', 'shop', 'edghts_1'],
      ],
      undefined,
      undefined,
    ],
  ];
  it.each(cases)('%s', (_, steps, manager, elsewhere) => {
    const c = cache();
    for (const [type, ns, name, id, before] of steps)
      c.noteIds('HTTPSEdge', type, held(ns, name, id!), before ? held(ns, name, before) : undefined);
    const named = (n?: { namespace: string; name: string }) => n && `${n.namespace}/${n.name}`;
    expect(named(c.managerOf('edghts_1'))).toBe(manager);
    expect(named(c.managedElsewhere('edghts_1', 'team-a'))).toBe(elsewhere);
  });
});
