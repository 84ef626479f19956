/**
 * compareKeys orders keys as S3 lists them (by UTF-8 bytes), also where UTF-16 code units
 * would not: a character beyond U+FFFF (a surrogate pair) against U+E000–U+FFFF.
 */
import { describe, expect, it } from 'vitest';
import { compareKeys } from '../../shared/storage/keys.js';

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

describe('compareKeys', () => {
  it('orders as UTF-8 bytes where code units disagree (U+1F600 after U+FF21)', () => {
    expect('a\u{1f600}' < 'a\uff21').toBe(true); // code units: the surrogate first
    expect(compareKeys('a\u{1f600}', 'a\uff21')).toBe(1); // bytes: F0 … after EF …
  });

  it('agrees with a byte comparison on mixed keys, prefixes and equal keys', () => {
    const alphabet = ['a', 'b', '/', '-', '_', '.', 'é', '\u4e2d', '\uff21', '\u{1f600}', '\ue000'];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const key = () =>
      Array.from(
        { length: 1 + Math.floor(random() * 4) },
        () => alphabet[Math.floor(random() * alphabet.length)],
      ).join('');
    for (let i = 0; i < 2_000; i++) {
      const a = key();
      const b = random() < 0.2 ? a : random() < 0.2 ? `${a}${key()}` : key();
      expect(Math.sign(compareKeys(a, b))).toBe(Math.sign(byBytes(a, b)));
    }
  });
});
