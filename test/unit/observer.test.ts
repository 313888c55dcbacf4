// The kind's bulk list, list after list: what each item says of its resource (as listed, its
// fingerprint, the time of its page) whether or not the resource changed since the last list.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { remoteDigest } from '../../src/operator/runtime/engine/memo.ts';
import { Observer } from '../../src/operator/runtime/observer.ts';

describe('a bulk list after another', () => {
  it('shows each resource as this list found it, changed or not, with its own page time', async () => {
    let resources = [
      { id: 'ipp_1', uri: 'u1', description: 'one' },
      { id: 'ipp_2', uri: 'u2', description: 'two' },
    ];
    let page = 1000;
    const observer = new Observer({
      kind: 'IPPolicy',
      list: async function* (onPage) {
        onPage(++page);
        yield* resources.map((r) => ({ ...r }));
      },
      log: pino({ level: 'silent' }),
    });
    const first = (await observer.refresh())!;
    resources = [
      { ...resources[0]!, description: 'changed' },
      resources[1]!,
      { id: 'ipp_3', uri: 'u3', description: 'new' },
    ];
    const second = (await observer.refresh())!;

    expect([...second.items.keys()]).toEqual(['ipp_1', 'ipp_2', 'ipp_3']);
    for (const r of resources) {
      const listed = second.items.get(r.id)!;
      expect(listed.remote).toEqual(r);
      expect(listed.digest).toBe(remoteDigest(r));
      expect(listed.at).toBe(1002);
    }
    // the last list's snapshot is as it was
    expect(first.items.get('ipp_1')!.remote.description).toBe('one');
    expect(first.items.get('ipp_2')!.at).toBe(1001);
    expect(first.items.has('ipp_3')).toBe(false);
    expect(second.items.get('ipp_2')!.digest).toBe(first.items.get('ipp_2')!.digest);
    expect(second.items.get('ipp_1')!.digest).not.toBe(first.items.get('ipp_1')!.digest);
  });
});
