import { describe, expect, it } from 'vitest';
import {
  covers,
  earlierDigestMatches,
  legacySecretDigest,
  outputToInput,
  secretDigest,
  unscopedSecretDigest,
  withoutSecrets,
} from '../../src/operator/runtime/bindings/module-compare.ts';
import { decodeMetadata, encodeMetadata } from '../../src/operator/runtime/bindings/owner.ts';

describe('module comparison', () => {
  it('turns Refs back into the input id fields', () => {
    expect(outputToInput({ enabled: true, backend: { id: 'bkdtg_1', uri: 'u' } })).toEqual({
      enabled: true,
      backend_id: 'bkdtg_1',
    });
    expect(outputToInput({ ip_policies: [{ id: 'ipp_1', uri: 'u' }] })).toEqual({ ip_policy_ids: ['ipp_1'] });
  });

  it('ignores fields the API adds but notices a key dropped from a map', () => {
    expect(covers({ idp_metadata: 'x' }, { idp_metadata: 'x', entity_id: 'added by the API' })).toBe(true);
    expect(covers({ add: { a: '1' } }, { add: { a: '1', b: '2' } })).toBe(false);
  });

  it('strips secrets, also under wildcards, and digests them with a key', () => {
    const body = { provider: { github: { client_id: 'id', client_secret: 's1' } } };
    expect(withoutSecrets(body, ['provider.*.client_secret'])).toEqual({
      provider: { github: { client_id: 'id' } },
    });
    expect(body.provider.github.client_secret).toBe('s1');
    const d1 = secretDigest(body, ['provider.*.client_secret'], 'key-1', 'team');
    const d2 = secretDigest(
      { provider: { github: { client_secret: 's2' } } },
      ['provider.*.client_secret'],
      'key-1',
      'team',
    );
    expect(d1).toMatch(/^k2:[0-9a-f]{32}$/);
    expect(d1).not.toBe(d2);
    expect(d1).not.toBe(secretDigest(body, ['provider.*.client_secret'], 'key-2', 'team'));
    expect(secretDigest({ a: 1 }, ['secret'], 'k', 'team')).toBeUndefined();
  });

  it("one secret digests differently in two namespaces: a tenant cannot compare another namespace's digests with its own", () => {
    const body = { secret: 'hunter2' };
    const mine = secretDigest(body, ['secret'], 'operator-key', 'team-a');
    const theirs = secretDigest(body, ['secret'], 'operator-key', 'team-b');
    expect(mine).not.toBe(theirs);
    // a guess put in team-a's own Secret never matches team-b's digest
    const guesses = ['password', 'hunter2', 'letmein'];
    expect(
      guesses.find((g) => secretDigest({ secret: g }, ['secret'], 'operator-key', 'team-a') === theirs),
    ).toBe(undefined);
    // the form before had no namespace in it: the guess matched
    const unscoped = (v: string) => unscopedSecretDigest({ secret: v }, ['secret'], 'operator-key');
    expect(guesses.find((g) => unscoped(g) === unscoped('hunter2'))).toBe('hunter2');
  });

  it("accepts the digests earlier versions wrote (the object's uid, then the operator's key alone) when the values match", () => {
    const body = { secret: 'hunter2' };
    const key = 'operator-key';
    const byUid = legacySecretDigest(body, ['secret'], 'uid-1')!;
    const unscoped = unscopedSecretDigest(body, ['secret'], key)!;
    expect(unscoped).toMatch(/^k1:/);
    expect(earlierDigestMatches(byUid, body, ['secret'], key, 'uid-1')).toBe(true);
    expect(earlierDigestMatches(unscoped, body, ['secret'], key, 'uid-1')).toBe(true);
    expect(earlierDigestMatches(byUid, { secret: 'other' }, ['secret'], key, 'uid-1')).toBe(false);
    expect(earlierDigestMatches(unscoped, { secret: 'other' }, ['secret'], key, 'uid-1')).toBe(false);
    // a current digest is never "earlier": it compares as itself
    expect(earlierDigestMatches(secretDigest(body, ['secret'], key, 'team')!, body, ['secret'], key)).toBe(
      false,
    );
    // the uid is in the object, so the oldest form is a guessing oracle: the keyed ones are not
    const guesses = ['password', 'hunter2', 'letmein'];
    expect(guesses.find((g) => legacySecretDigest({ secret: g }, ['secret'], 'uid-1') === byUid)).toBe(
      'hunter2',
    );
  });
});

describe('owner marker', () => {
  it('round-trips the owner and the user metadata, and reads foreign metadata as the user part', () => {
    const owner = { cluster: 'c1', uid: 'u1', object: 'IPPolicy/ns/a' };
    expect(decodeMetadata(encodeMetadata(owner, 'hello "world"'))).toEqual({ owner, user: 'hello "world"' });
    expect(decodeMetadata('plain text')).toEqual({ user: 'plain text' });
    expect(decodeMetadata('{"other":1}')).toEqual({ user: '{"other":1}' });
    expect(decodeMetadata(undefined)).toEqual({ user: '' });
  });
});
