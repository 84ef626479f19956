import { ValidationError } from '../errors.js';
import { MAX_KEY_BYTES } from '../urn.js';

/**
 * Validates a storage key: non-empty, at most 1,024 UTF-8 bytes (the S3 limit), no empty,
 * `.` or `..` segments, not absolute, no NUL or backslash. Shared by both adapters so they
 * accept exactly the same keys.
 * @throws ValidationError
 */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0)
    throw new ValidationError('storage key must be a non-empty string');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new ValidationError(`storage key over ${MAX_KEY_BYTES} bytes`);
  }
  if (key.includes('\u0000') || key.includes('\\'))
    throw new ValidationError('storage key contains NUL or backslash');
  if (key.startsWith('/')) throw new ValidationError('storage key must not be absolute');
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new ValidationError(`storage key has an empty, "." or ".." segment: ${key.slice(0, 120)}`);
    }
  }
}

/**
 * Compares two keys by UTF-8 bytes, the order S3 `ListObjectsV2` returns. UTF-16 code units
 * order text as UTF-8 bytes do, except a surrogate (a character beyond U+FFFF) against
 * U+E000–U+FFFF: only when the first differing code units include one of those (never in resource
 * keys, which are ASCII) are the strings encoded and compared as bytes.
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 || y >= 0xd800) return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
