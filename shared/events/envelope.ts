import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { typeOf, urnOfKey } from '../urn.js';

/**
 * Events. S3 emits an EventBridge "Object Created" event for every create
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html); handlers normalise
 * it into the seeds' `RESOURCE_PUT` envelope (seed roadmap-v1 step 08 `event.proto`).
 */

/** The S3 "Object Created" EventBridge event, as S3 sends it (validated, extra fields kept). */
export const S3ObjectCreatedEventSchema = z.looseObject({
  version: z.string(),
  id: z.string().min(1),
  'detail-type': z.literal('Object Created'),
  source: z.literal('aws.s3'),
  account: z.string(),
  time: z.string(),
  region: z.string(),
  resources: z.array(z.string()),
  detail: z.looseObject({
    version: z.string(),
    bucket: z.looseObject({ name: z.string().min(1) }),
    object: z.looseObject({
      key: z.string().min(1),
      size: z.number().int().nonnegative().optional(),
      etag: z.string().optional(),
      sequencer: z.string().optional(),
    }),
    'request-id': z.string().optional(),
    requester: z.string().optional(),
    reason: z.string().optional(),
  }),
});
export type S3ObjectCreatedEvent = z.infer<typeof S3ObjectCreatedEventSchema>;

/** Normalised `RESOURCE_PUT` (seed `event.Event` with `DetailType.RESOURCE_PUT`). */
export interface ResourcePutEvent {
  /** Event id (EventBridge `id`); duplicates of one delivery share it. */
  id: string;
  detailType: 'RESOURCE_PUT';
  /** `aws.s3`, or `cld` for the sweeper's re-emitted events */
  source: string;
  /** ISO 8601 */
  time: string;
  bucket: string;
  key: string;
  /** URN of the created resource. */
  urn: string;
  /** `namespace.Name` of the resource. */
  type: string;
}

/** Source of the events the sweeper puts on the bus (shared/events/redrive.ts). */
export const REDRIVE_SOURCE = 'cld';

/** Detail type of the sweeper's events: the seeds' `RESOURCE_PUT`. */
export const REDRIVE_DETAIL_TYPE = 'RESOURCE_PUT';

/**
 * A `RESOURCE_PUT` the sweeper re-emits for a stored resource whose effect is missing
 * (shared/domain/sweep.ts), as EventBridge delivers an event put with `PutEvents` (`Source`
 * `cld`, `DetailType` `RESOURCE_PUT`): the detail names the bucket and the key as S3's events do
 * (so the routing table's patterns match both) and the URN.
 */
export const RedriveEventSchema = z.looseObject({
  version: z.string(),
  id: z.string().min(1),
  'detail-type': z.literal(REDRIVE_DETAIL_TYPE),
  source: z.literal(REDRIVE_SOURCE),
  account: z.string(),
  time: z.string(),
  region: z.string(),
  resources: z.array(z.string()),
  detail: z.looseObject({
    bucket: z.looseObject({ name: z.string().min(1) }),
    object: z.looseObject({ key: z.string().min(1) }),
    urn: z.string().min(1),
    /** Why it was emitted: `redrive` (a stalled conversation) or `resume` (a restarted runtime). */
    reason: z.string().optional(),
  }),
});
export type RedriveEvent = z.infer<typeof RedriveEventSchema>;

/** An event the steps take: S3's "Object Created" or the sweeper's `RESOURCE_PUT`. */
export type ResourceEvent = S3ObjectCreatedEvent | RedriveEvent;

/**
 * Validates an S3 "Object Created" event, or the sweeper's `RESOURCE_PUT` (source `cld`), and
 * normalises it to `RESOURCE_PUT`. S3 URL-encodes the key in event notifications (form encoding:
 * space → `+`, `:` → `%3A`); resource keys consist of characters it never escapes (shared/urn.ts
 * `keyOf`), so the key is used as sent, and only a key that is not a resource key as sent is
 * decoded ({@link decodeS3EventKey}) and tried again. `key` is the decoded key.
 * @throws ValidationError for a malformed event, a key that is not a resource key
 *   (`cld/<path>_<shape>.json`, raw or decoded), or a sweeper event whose URN is not the one its
 *   key stores
 */
export function toResourcePut(event: unknown): ResourcePutEvent {
  if ((event as { source?: unknown } | null)?.source === REDRIVE_SOURCE) return fromRedrive(event);
  const parsed = S3ObjectCreatedEventSchema.safeParse(event);
  if (!parsed.success)
    throw new ValidationError(`not an S3 Object Created event: ${z.prettifyError(parsed.error)}`);
  const { detail } = parsed.data;
  let key = detail.object.key;
  let urn = urnOfKey(key);
  if (urn === undefined && /[%+]/.test(key)) {
    try {
      key = decodeS3EventKey(key);
      urn = urnOfKey(key);
    } catch {
      urn = undefined;
    }
  }
  if (urn === undefined) throw new ValidationError(`object key is not a resource key: ${key.slice(0, 200)}`);
  return {
    id: parsed.data.id,
    detailType: 'RESOURCE_PUT',
    source: parsed.data.source,
    time: parsed.data.time,
    bucket: detail.bucket.name,
    key,
    urn,
    type: typeOf(urn),
  };
}

function fromRedrive(event: unknown): ResourcePutEvent {
  const parsed = RedriveEventSchema.safeParse(event);
  if (!parsed.success)
    throw new ValidationError(`not a cld RESOURCE_PUT event: ${z.prettifyError(parsed.error)}`);
  const { detail } = parsed.data;
  const urn = urnOfKey(detail.object.key);
  if (urn === undefined)
    throw new ValidationError(`object key is not a resource key: ${detail.object.key.slice(0, 200)}`);
  if (urn !== detail.urn)
    throw new ValidationError(`RESOURCE_PUT names ${detail.urn.slice(0, 200)}, but its key stores ${urn}`);
  return {
    id: parsed.data.id,
    detailType: 'RESOURCE_PUT',
    source: parsed.data.source,
    time: parsed.data.time,
    bucket: detail.bucket.name,
    key: detail.object.key,
    urn,
    type: typeOf(urn),
  };
}

/**
 * The key as S3 writes it into an event notification: URL-encoded as a form value
 * (`application/x-www-form-urlencoded`: space → `+`, every character other than letters, digits,
 * `-_.*` and `/` → `%XX` of its UTF-8 bytes). Resource keys come out unchanged.
 */
export function encodeS3EventKey(key: string): string {
  if (UNESCAPED_KEY.test(key)) return key; // every resource key (shared/urn.ts keyOf)
  return encodeURIComponent(key)
    .replace(/%2F/g, '/')
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A key of only the characters form encoding leaves alone: letters, digits, `-`, `_`, `.`, `*` and `/`. */
const UNESCAPED_KEY = /^[A-Za-z0-9_.*/-]*$/;

/**
 * Decodes a key from an event notification ({@link encodeS3EventKey}'s inverse: `+` → space,
 * `%XX` → bytes). @throws URIError for a malformed `%` sequence
 */
export function decodeS3EventKey(key: string): string {
  return decodeURIComponent(key.replace(/\+/g, ' '));
}

/**
 * Builds the event S3 sends for a created object: what the filesystem storage emits locally,
 * so the same handlers see the same input everywhere.
 */
export function s3ObjectCreatedEvent(
  bucket: string,
  key: string,
  size: number,
  now: Date = new Date(),
): S3ObjectCreatedEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Object Created',
    source: 'aws.s3',
    account: '000000000000',
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'local',
    resources: [`arn:aws:s3:::${bucket}`],
    detail: {
      version: '0',
      bucket: { name: bucket },
      object: {
        key: encodeS3EventKey(key),
        size,
        sequencer: now.getTime().toString(16).toUpperCase().padStart(18, '0'),
      },
      'request-id': randomUUID(),
      requester: '000000000000',
      reason: 'PutObject',
    },
  };
}
