/**
 * The console's PKCE helpers (console/src/auth.ts) against RFC 7636's own example (Appendix B):
 * the `S256` challenge of its verifier, and verifiers of the length and alphabet §4.1 requires.
 */
import { describe, expect, it } from 'vitest';
import { base64url, codeChallenge, codeVerifier } from '../../console/src/auth.js';

describe('PKCE (RFC 7636)', () => {
  it('derives the S256 challenge of the RFC’s example verifier', async () => {
    expect(await codeChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('makes 43-character verifiers of unreserved characters, different each time', () => {
    const verifiers = new Set(Array.from({ length: 20 }, () => codeVerifier()));
    expect(verifiers.size).toBe(20);
    for (const verifier of verifiers) expect(verifier).toMatch(/^[A-Za-z0-9\-._~]{43}$/);
  });

  it('encodes base64url without padding', () => {
    expect(base64url(new Uint8Array([0xfb, 0xff]))).toBe('-_8');
  });
});
