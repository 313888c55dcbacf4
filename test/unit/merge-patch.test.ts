import { describe, expect, it } from 'vitest';
import { mergePatch } from '../../src/operator/runtime/merge-patch.ts';

/** RFC 7386 applied, to check that the patch turns `from` into `to`. */
function applyPatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyPatch(out[k], v);
  }
  return out;
}

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
