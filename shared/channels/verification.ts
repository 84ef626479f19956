import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signature verification with the algorithms the platforms document, compared in
 * constant time (`crypto.timingSafeEqual`).
 */

/** Outcome of a verification: `reason` says what failed (safe to return to the caller). */
export type Verification = { ok: true } | { ok: false; reason: string };

/** Slack's replay window: requests more than this many seconds from now are rejected. */
export const SLACK_TOLERANCE_SECONDS = 300;

/**
 * Verifies a Slack request (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `X-Slack-Signature` must be `v0=` + hex HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{raw body}`
 * keyed with the app's signing secret, and the timestamp within {@link SLACK_TOLERANCE_SECONDS}
 * of `now` (either way).
 */
export function verifySlackSignature(input: {
  signingSecret: string;
  signature: string | undefined;
  timestamp: string | undefined;
  body: Buffer;
  now?: Date;
}): Verification {
  const { signature, timestamp } = input;
  if (!signature || !timestamp) return fail('missing X-Slack-Signature or X-Slack-Request-Timestamp header');
  if (!/^\d{1,12}$/.test(timestamp)) return fail('malformed X-Slack-Request-Timestamp');
  const now = Math.floor((input.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - Number(timestamp)) > SLACK_TOLERANCE_SECONDS)
    return fail('X-Slack-Request-Timestamp is more than 5 minutes from now');
  const match = /^v0=([0-9a-f]{64})$/.exec(signature);
  if (!match) return fail('malformed X-Slack-Signature');
  const expected = createHmac('sha256', input.signingSecret)
    .update(`v0:${timestamp}:`)
    .update(input.body)
    .digest();
  return timingSafeEqual(expected, Buffer.from(match[1] as string, 'hex'))
    ? { ok: true }
    : fail('X-Slack-Signature does not match');
}

/**
 * Verifies a Teams outgoing-webhook request
 * (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook):
 * `Authorization: HMAC <base64>` must be the base64 HMAC-SHA256 of the raw body bytes keyed with
 * the base64-decoded security token.
 * @param secret the security token, already base64-decoded
 */
export function verifyTeamsSignature(input: {
  secret: Buffer;
  authorization: string | undefined;
  body: Buffer;
}): Verification {
  if (!input.authorization) return fail('missing Authorization header');
  const match = /^HMAC ([A-Za-z0-9+/]+={0,2})$/.exec(input.authorization.trim());
  if (!match) return fail('Authorization is not "HMAC <base64>"');
  const given = Buffer.from(match[1] as string, 'base64');
  const expected = createHmac('sha256', input.secret).update(input.body).digest();
  if (given.length !== expected.length) return fail('HMAC does not match');
  return timingSafeEqual(expected, given) ? { ok: true } : fail('HMAC does not match');
}

function fail(reason: string): Verification {
  return { ok: false, reason };
}
