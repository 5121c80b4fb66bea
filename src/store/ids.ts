// Public ids: a type prefix and 22 base62 characters of randomness (131 bits).
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomToken(length: number): string {
  const bytes = randomBytes(length * 2);
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
