// The rules docs/architecture.md states, as a test beside CI's `npm run check:architecture`:
// the import rules of .dependency-cruiser.cjs (layers, the runtime knows no kind, the engine
// through its facade, no circle with type imports) and no source file over 400 lines.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importBreaches, MAX_LINES, oversized } from '../../scripts/check-architecture.ts';

describe('the architecture', () => {
  it('every import rule holds', async () => {
    expect(await importBreaches()).toEqual([]);
  }, 60_000);

  it(`no source file is over ${MAX_LINES} lines`, () => {
    expect(oversized()).toEqual([]);
  });

  it('a file over the bound is found, naming its length', () => {
    const dir = mkdtempSync(join(tmpdir(), 'arch-'));
    writeFileSync(join(dir, 'big.ts'), 'x;\n'.repeat(MAX_LINES + 1));
    writeFileSync(join(dir, 'fine.ts'), 'x;\n'.repeat(MAX_LINES));
    expect(oversized(dir).map((o) => [o.file.split('/').pop(), o.lines])).toEqual([
      ['big.ts', MAX_LINES + 1],
    ]);
  });
});
