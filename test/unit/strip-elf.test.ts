// The image's Node binary: stripped by scripts/strip-elf.ts (the build stage has no binutils).
// It must stay the same Node, only smaller.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { stripElf } from '../../scripts/strip-elf.ts';

const dir = mkdtempSync(join(tmpdir(), 'strip-elf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it.skipIf(process.platform !== 'linux')(
  'strips Node of its symbols and debug sections, and it runs the same',
  () => {
    const original = readFileSync(process.execPath);
    const stripped = stripElf(original);
    const bin = join(dir, 'node');
    writeFileSync(bin, stripped);
    chmodSync(bin, 0o755);
    const run = (node: string) =>
      execFileSync(
        node,
        [
          '-p',
          "[process.version, require('tls').rootCertificates.length, require('crypto').createHash('sha256').update('x').digest('hex'), new Intl.DateTimeFormat('en', { timeZone: 'Asia/Tokyo', hour: 'numeric', hourCycle: 'h23' }).format(0)].join()",
        ],
        { encoding: 'utf8' },
      );
    expect(run(bin)).toBe(run(process.execPath));
    // Node's official binary carries a symbol table: at least 10 MiB go
    expect(original.length - statSync(bin).size).toBeGreaterThan(10 * 2 ** 20);
    // stripping again changes nothing more
    expect(stripElf(stripped).length).toBe(stripped.length);
  },
);

it('refuses what is not an ELF64 file', () => {
  expect(() => stripElf(Buffer.from('#!/bin/sh\necho hi\n'))).toThrow(/not a little-endian ELF64/);
});
