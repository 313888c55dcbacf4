// What edgectl prints of data it does not control: an API field missing, or holding control
// characters, is neither a crash nor an escape sequence the terminal acts on.
import { describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/io.ts';
import { render } from '../../src/cli/output.ts';

describe('printed data', () => {
  it('a missing field prints empty; control characters print as escapes', () => {
    const rows = [{ id: 'ts_1', os: undefined as unknown as string, note: 'a\u001b[2Jb\nc' }];
    const out = render(
      rows,
      [
        { name: 'ID', value: (r) => r.id },
        { name: 'OS', value: (r) => r.os },
        { name: 'NOTE', value: (r) => r.note },
      ],
      'table',
      'rows',
    );
    expect(out.split('\n').filter(Boolean)).toHaveLength(2);
    expect(out).toContain('a\\x1b[2Jb\\x0ac');
    expect(out).not.toContain('undefined');
    expect(printable(undefined)).toBe('');
  });
});
