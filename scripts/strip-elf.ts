// Copies an ELF64 executable without what only a debugger reads: the symbol table, its string
// table and the DWARF sections (Node's official binary carries 18 MiB of them). What the
// loader and the process use is kept byte for byte: every segment, and the headers of every
// section loaded into memory. The image's build stage has no binutils (and no package manager
// to fetch them), hence this; `strip --strip-all` gives the same executable.
// Usage: node scripts/strip-elf.ts <in> <out>
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';

const SHF_ALLOC = 2n;
const SHT_NOBITS = 8;

export function stripElf(elf: Buffer): Buffer {
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1)
    throw new Error('not a little-endian ELF64 file');
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  const shentsize = elf.readUInt16LE(0x3a);
  const shnum = elf.readUInt16LE(0x3c);
  const shstrndx = elf.readUInt16LE(0x3e);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    return {
      at,
      type: elf.readUInt32LE(at + 4),
      flags: elf.readBigUInt64LE(at + 8),
      offset: Number(elf.readBigUInt64LE(at + 0x18)),
      size: Number(elf.readBigUInt64LE(at + 0x20)),
    };
  };
  // kept: index 0 and the sections loaded into memory; they must come first so that no index
  // another header refers to (sh_link, sh_info, symbols' st_shndx) moves
  const loaded: number[] = [];
  for (let i = 1; i < shnum; i++) if (section(i).flags & SHF_ALLOC) loaded.push(i);
  if (loaded.some((i, n) => i !== n + 1))
    throw new Error('a section not loaded into memory comes before a loaded one: not stripped');
  // the file up to the end of what a segment or a kept section holds
  let end = phoff + phnum * phentsize;
  for (let p = 0; p < phnum; p++) {
    const at = phoff + p * phentsize;
    end = Math.max(end, Number(elf.readBigUInt64LE(at + 8) + elf.readBigUInt64LE(at + 0x20)));
  }
  for (const i of loaded) {
    const s = section(i);
    if (s.type !== SHT_NOBITS) end = Math.max(end, s.offset + s.size);
  }
  const names = section(shstrndx);
  const namesAt = end;
  const headersAt = Math.ceil((namesAt + names.size) / 8) * 8;
  const kept = [0, ...loaded, shstrndx];
  const out = Buffer.alloc(headersAt + kept.length * shentsize);
  elf.copy(out, 0, 0, end);
  elf.copy(out, namesAt, names.offset, names.offset + names.size);
  kept.forEach((i, n) => {
    elf.copy(out, headersAt + n * shentsize, section(i).at, section(i).at + shentsize);
  });
  // the section names' header: at its new place in the file, last in the table
  const namesHeader = headersAt + (kept.length - 1) * shentsize;
  out.writeBigUInt64LE(BigInt(namesAt), namesHeader + 0x18);
  out.writeBigUInt64LE(BigInt(headersAt), 0x28);
  out.writeUInt16LE(kept.length, 0x3c);
  out.writeUInt16LE(kept.length - 1, 0x3e);
  return out;
}

if (import.meta.main) {
  const [from, to] = process.argv.slice(2);
  if (!from || !to) {
    process.stderr.write('usage: node scripts/strip-elf.ts <in> <out>\n');
    process.exit(2);
  }
  const before = statSync(from).size;
  const out = stripElf(readFileSync(from));
  writeFileSync(to, out);
  chmodSync(to, statSync(from).mode & 0o7777);
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  process.stdout.write(`strip-elf: ${from} ${mib(before)} -> ${to} ${mib(out.length)}\n`);
}
