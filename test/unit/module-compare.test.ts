import { describe, expect, it } from 'vitest';
import {
  covers,
  isLegacyDigest,
  legacySecretDigest,
  outputToInput,
  secretDigest,
  withoutSecrets,
} from '../../src/operator/runtime/module-compare.ts';
import { decodeMetadata, encodeMetadata } from '../../src/operator/runtime/owner.ts';

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
    const d1 = secretDigest(body, ['provider.*.client_secret'], 'uid-1');
    const d2 = secretDigest(
      { provider: { github: { client_secret: 's2' } } },
      ['provider.*.client_secret'],
      'uid-1',
    );
    expect(d1).toMatch(/^k1:[0-9a-f]{32}$/);
    expect(d1).not.toBe(d2);
    expect(d1).not.toBe(secretDigest(body, ['provider.*.client_secret'], 'uid-2'));
    expect(secretDigest({ a: 1 }, ['secret'], 'k')).toBeUndefined();
  });

  it('tells digests keyed by the object uid (readable by anyone) from keyed ones, for migration', () => {
    const body = { secret: 'hunter2' };
    const legacy = legacySecretDigest(body, ['secret'], 'uid-1')!;
    expect(isLegacyDigest(legacy)).toBe(true);
    expect(isLegacyDigest(secretDigest(body, ['secret'], 'operator-key')!)).toBe(false);
    // the uid is in the object, so a legacy digest is a guessing oracle: the keyed one is not
    const guesses = ['password', 'hunter2', 'letmein'];
    expect(guesses.find((g) => legacySecretDigest({ secret: g }, ['secret'], 'uid-1') === legacy)).toBe(
      'hunter2',
    );
    const keyed = secretDigest(body, ['secret'], 'operator-key');
    expect(guesses.find((g) => secretDigest({ secret: g }, ['secret'], 'uid-1') === keyed)).toBeUndefined();
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
