import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifySlackSignature, verifyTeamsSignature } from '../../shared/channels/verification.js';
import { slackSignature, teamsAuthorization } from './helpers.js';

// Slack's published example (api.slack.com "Verifying requests from Slack"): public documentation values.
const DOC_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const DOC_TIMESTAMP = '1531420618';
const DOC_BODY =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V' +
  '&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=' +
  '&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN' +
  '&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
const DOC_SIGNATURE = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
const DOC_NOW = new Date(Number(DOC_TIMESTAMP) * 1000);

describe('verifySlackSignature', () => {
  it('accepts the example of Slack’s documentation', () => {
    expect(
      verifySlackSignature({
        signingSecret: DOC_SECRET,
        signature: DOC_SIGNATURE,
        timestamp: DOC_TIMESTAMP,
        body: Buffer.from(DOC_BODY),
        now: DOC_NOW,
      }),
    ).toEqual({ ok: true });
  });

  it('agrees with the test signer on the documented example (so the e2e signatures are Slack’s)', () => {
    expect(slackSignature(DOC_SECRET, DOC_TIMESTAMP, DOC_BODY)).toBe(DOC_SIGNATURE);
  });

  it('verifies the raw bytes: a UTF-8 body is accepted as signed, not as re-serialised', () => {
    const body = Buffer.from('{"text":"予算 🎉","n":1}');
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = slackSignature('s3cret', timestamp, body);
    expect(verifySlackSignature({ signingSecret: 's3cret', signature, timestamp, body })).toEqual({
      ok: true,
    });
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1));
    expect(
      verifySlackSignature({ signingSecret: 's3cret', signature, timestamp, body: reserialised }).ok,
    ).toBe(false);
  });

  it.each<[string, Partial<Parameters<typeof verifySlackSignature>[0]>, RegExp]>([
    ['a signature made with another secret', { signingSecret: 'another-secret' }, /does not match/],
    ['a body altered after signing', { body: Buffer.from(`${DOC_BODY}&text=rm`) }, /does not match/],
    ['a replayed request (6 minutes old)', { now: new Date(DOC_NOW.getTime() + 360_000) }, /5 minutes/],
    ['a timestamp 6 minutes in the future', { now: new Date(DOC_NOW.getTime() - 360_000) }, /5 minutes/],
    ['a missing signature header', { signature: undefined }, /missing/],
    ['a missing timestamp header', { timestamp: undefined }, /missing/],
    ['a timestamp that is not a number', { timestamp: '1531420618.5' }, /malformed/],
    ['a signature of another version', { signature: DOC_SIGNATURE.replace('v0=', 'v1=') }, /malformed/],
    ['a truncated signature', { signature: DOC_SIGNATURE.slice(0, -2) }, /malformed/],
    [
      'a signature with one hex digit changed',
      { signature: `${DOC_SIGNATURE.slice(0, -1)}4` },
      /does not match/,
    ],
  ])('rejects %s', (_label, change, reason) => {
    const result = verifySlackSignature({
      signingSecret: DOC_SECRET,
      signature: DOC_SIGNATURE,
      timestamp: DOC_TIMESTAMP,
      body: Buffer.from(DOC_BODY),
      now: DOC_NOW,
      ...change,
    });
    expect(result.ok).toBe(false);
    expect(result.ok === false && result.reason).toMatch(reason);
  });

  /** The documented example verified at `DOC_NOW` + `offsetMs` (negative: a timestamp in the future). */
  function verifyAt(offsetMs: number) {
    return verifySlackSignature({
      signingSecret: DOC_SECRET,
      signature: DOC_SIGNATURE,
      timestamp: DOC_TIMESTAMP,
      body: Buffer.from(DOC_BODY),
      now: new Date(DOC_NOW.getTime() + offsetMs),
    });
  }

  it.each([
    ['exactly 300 s old', 300_000],
    ['300.999 s old (whole seconds, as Slack sends them)', 300_999],
    ['exactly 300 s in the future', -300_000],
  ])('accepts a request %s: the 5-minute window includes its boundary', (_label, offsetMs) => {
    expect(verifyAt(offsetMs)).toEqual({ ok: true });
  });

  it.each([
    ['301 s old', 301_000],
    ['301 s in the future', -301_000],
    ['351 s old', 351_000],
  ])('rejects a request %s: one second past the 5-minute window', (_label, offsetMs) => {
    expect(verifyAt(offsetMs)).toEqual({
      ok: false,
      reason: 'X-Slack-Request-Timestamp is more than 5 minutes from now',
    });
  });

  it('accepts a request 4 minutes old (inside the window)', () => {
    const result = verifySlackSignature({
      signingSecret: DOC_SECRET,
      signature: DOC_SIGNATURE,
      timestamp: DOC_TIMESTAMP,
      body: Buffer.from(DOC_BODY),
      now: new Date(DOC_NOW.getTime() + 240_000),
    });
    expect(result).toEqual({ ok: true });
  });
});

describe('verifyTeamsSignature', () => {
  const token = randomBytes(32).toString('base64');
  const body = Buffer.from(JSON.stringify({ type: 'message', id: '1', text: '<at>cld</at> hello' }));

  it('accepts the HMAC of the raw body keyed with the base64-decoded security token', () => {
    expect(
      verifyTeamsSignature({
        secret: Buffer.from(token, 'base64'),
        authorization: teamsAuthorization(token, body),
        body,
      }),
    ).toEqual({ ok: true });
  });

  it.each<[string, () => { secret?: Buffer; authorization?: string | undefined; body?: Buffer }, RegExp]>([
    ['a missing Authorization header', () => ({ authorization: undefined }), /missing/],
    ['a Bearer token instead of HMAC', () => ({ authorization: 'Bearer abc' }), /HMAC <base64>/],
    ['a body altered after signing', () => ({ body: Buffer.from(`${body.toString()} `) }), /does not match/],
    [
      'an HMAC keyed with the token text instead of its decoded bytes',
      () => ({ authorization: `HMAC ${createHmac('sha256', token).update(body).digest('base64')}` }),
      /does not match/,
    ],
    [
      'a truncated HMAC',
      () => ({ authorization: teamsAuthorization(token, body).slice(0, 20) }),
      /does not match/,
    ],
    [
      'an HMAC made with another token',
      () => ({ authorization: teamsAuthorization(randomBytes(32).toString('base64'), body) }),
      /does not match/,
    ],
  ])('rejects %s', (_label, change, reason) => {
    const result = verifyTeamsSignature({
      secret: Buffer.from(token, 'base64'),
      authorization: teamsAuthorization(token, body),
      body,
      ...change(),
    });
    expect(result.ok).toBe(false);
    expect(result.ok === false && result.reason).toMatch(reason);
  });
});
