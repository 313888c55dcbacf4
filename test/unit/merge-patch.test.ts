import { describe, expect, it } from 'vitest';
import { mergePatch } from '../../src/operator/runtime/kube/merge-patch.ts';
import { applyMergePatch as applyPatch } from '../support/fake-kube.ts';

describe('status merge patch', () => {
  it('removes what a kind no longer reports, at any depth, and names only what changed', () => {
    const from = {
      id: 'rt_1',
      saml: { entityID: 'e', idpMetadataURL: 'u' },
      secretDigests: { oidc: 'k1:a', oauth: 'k1:b' },
      conditions: [{ type: 'Ready', status: 'True' }],
    };
    const to = {
      id: 'rt_1',
      saml: { entityID: 'e' },
      secretDigests: { oidc: 'k1:a' },
      conditions: [{ type: 'Ready', status: 'False' }],
    };
    const patch = mergePatch(from, to);
    expect(patch).toEqual({
      saml: { idpMetadataURL: null },
      secretDigests: { oauth: null },
      conditions: [{ type: 'Ready', status: 'False' }],
    });
    expect(applyPatch(from, patch)).toEqual(to);
    expect(applyPatch(from, mergePatch(from, { id: 'rt_1' }))).toEqual({ id: 'rt_1' });
    expect(mergePatch(to, to)).toEqual({});
  });
});
