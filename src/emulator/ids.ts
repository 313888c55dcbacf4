// Ids: the kind prefix + 27 base62 characters, time-ordered (48-bit milliseconds, a
// 16-bit sequence within the millisecond, then random bits), so sorting ids sorts by age.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
let lastMs = 0;
let seq = 0;

export function base62(bytes: Uint8Array, width: number): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width, '0');
}

export function newId(prefix: string, now = Date.now()): string {
  if (now <= lastMs) {
    seq++;
    now = lastMs;
  } else {
    lastMs = now;
    seq = 0;
  }
  const b = Buffer.alloc(20);
  b.writeUIntBE(now, 0, 6);
  b.writeUInt16BE(seq & 0xffff, 6);
  randomBytes(12).copy(b, 8);
  return `${prefix}_${base62(b, 27)}`;
}
