// A Secret's value at a key a user names (an object's secretKeyRef, an account's apiKeySecretRef):
// only the Secret's own keys count, whatever the name.
import { describe, expect, it } from 'vitest';
import { secretValue } from '../../src/operator/runtime/kube/secrets.ts';

const secret = { metadata: { name: 's' }, data: JSON.parse('{"token":"dG9rZW4=","__proto__":"cA=="}') };

describe('secretValue', () => {
  it.each([
    { key: 'token', out: 'dG9rZW4=' },
    // a key in the data named like a property of every object is the data's
    { key: '__proto__', out: 'cA==' },
    // valid Secret key names that the data does not hold: no key, not Object.prototype's
    { key: 'constructor', out: undefined },
    { key: 'toString', out: undefined },
    { key: 'hasOwnProperty', out: undefined },
    { key: 'missing', out: undefined },
  ])('$key: $out', ({ key, out }) => {
    expect(secretValue(secret, key)).toBe(out);
  });

  it('a Secret without data, or none at all, has no key', () => {
    expect(secretValue({ metadata: { name: 's' } }, 'constructor')).toBeUndefined();
    expect(secretValue(undefined, 'token')).toBeUndefined();
  });
});
