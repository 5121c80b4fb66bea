// Public ids: a type prefix and 22 base62 characters of randomness (131 bits).
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from a pool filled 8 KiB at a time: a request takes several ids, and a
// call into the CSPRNG for each few bytes cost more than the rest of making them.
const POOL = Buffer.alloc(8192);
let used = POOL.length;

/** `n` (≤ 8 KiB) fresh random bytes; the returned buffer is a copy the caller owns. */
export function randomBytesPooled(n: number): Buffer {
  if (n > POOL.length) throw new RangeError(`at most ${POOL.length} pooled random bytes at once`);
  if (used + n > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  const out = Buffer.from(POOL.subarray(used, used + n));
  used += n;
  return out;
}

export function randomToken(length: number): string {
  const bytes = randomBytesPooled(length * 2);
  let out = '';
  for (let i = 0; out.length < length && i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 248) out += ALPHABET[b % 62]; // 248 = 4 × 62: no modulo bias
  }
  return out.length === length ? out : out + randomToken(length - out.length);
}

export type IdPrefix = 'acct' | 'key' | 'conv' | 'file' | 'upl' | 'wh' | 'evt' | 'job';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomToken(22)}`;
}
