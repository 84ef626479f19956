import { setTimeout as sleep } from 'node:timers/promises';
import type * as S3Sdk from '@aws-sdk/client-s3';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import pLimit from 'p-limit';
import { HAS_REQUIRE, requireSdk } from '../aws/sdk.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { MAX_KEY_BYTES } from '../urn.js';
import { assertValidKey, compareKeys } from './keys.js';
import type { FindOptions, PutResult, StorageInterface } from './port.js';

let loaded: typeof S3Sdk | undefined;

/** `@aws-sdk/client-s3`, loaded at its first use with `require` (shared/aws/sdk.ts). */
function s3Sdk(): typeof S3Sdk {
  loaded ??= (HAS_REQUIRE ? require('@aws-sdk/client-s3') : requireSdk('@aws-sdk/client-s3')) as typeof S3Sdk;
  return loaded;
}

/** How many `GetObject` calls {@link S3Storage.getMany} keeps in flight at once. */
export const GET_MANY_CONCURRENCY = 16;

/** How many times {@link S3Storage.put} retries after an HTTP 409 `ConditionalRequestConflict`. */
export const CONFLICT_RETRIES = 3;

/** Base delay of the exponential backoff between those retries, in milliseconds. */
const CONFLICT_BACKOFF_MS = 25;

/** Constructor options of {@link S3Storage}. */
export interface S3StorageOptions {
  /** The SDK client (module scope, built once per cold start; see {@link createS3Client}). */
  client: S3Client;
  /** Bucket holding the objects. */
  bucket: string;
  /**
   * Prepended verbatim to every key (so it usually ends with `/`, for example `tenant-a/`) and
   * stripped from listings. Defaults to `''`.
   */
  prefix?: string;
  /**
   * `MaxKeys` of each `ListObjectsV2` page (1–1,000). Defaults to S3's own default of 1,000;
   * tests set it small to exercise pagination without writing thousands of objects.
   */
  pageSize?: number;
}

/**
 * S3 adapter of {@link StorageInterface}: a key is the object key `prefix + key` in `bucket`.
 *
 * AWS APIs: `GetObject` (get, getMany), `PutObject` with `If-None-Match: *` (put; S3 conditional
 * writes), `HeadObject` (put, only after repeated 409 conflicts), `DeleteObject` (delete) and
 * `ListObjectsV2` paginated with continuation tokens (findByPrefix, findByExtension). The role
 * needs `s3:GetObject`, `s3:PutObject`, `s3:DeleteObject` and `s3:ListBucket` on the prefix:
 * without `s3:ListBucket`, S3 answers a missing key with 403 AccessDenied instead of 404
 * NoSuchKey, and `get` would throw that instead of {@link NotFoundError}.
 *
 * Keys are validated with {@link assertValidKey} (the same rules as the filesystem adapter); SDK
 * errors other than the ones mapped below propagate unchanged (`S3ServiceException` subclasses).
 */
export class S3Storage implements StorageInterface {
  /** Bucket holding the objects. */
  readonly bucket: string;
  /** Prepended to every key; `''` when none. */
  readonly prefix: string;
  private readonly client: S3Client;
  private readonly pageSize: number | undefined;

  /** @throws ValidationError when `pageSize` is not an integer between 1 and 1,000. */
  constructor(options: S3StorageOptions) {
    const { pageSize } = options;
    if (pageSize !== undefined && !(Number.isInteger(pageSize) && pageSize >= 1 && pageSize <= 1000)) {
      throw new ValidationError(`pageSize must be an integer from 1 to 1000, got ${pageSize}`);
    }
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? '';
    this.pageSize = pageSize;
  }

  /**
   * Reads one object with `GetObject`.
   * @throws ValidationError for an invalid key.
   * @throws NotFoundError when S3 answers 404 `NoSuchKey`.
   */
  async get(key: string): Promise<Buffer> {
    const objectKey = this.objectKey(key);
    try {
      const output = await this.client.send(
        new (s3Sdk().GetObjectCommand)({ Bucket: this.bucket, Key: objectKey }),
      );
      if (output.Body === undefined) return Buffer.alloc(0);
      return Buffer.from(await output.Body.transformToByteArray());
    } catch (error) {
      if (isMissingObject(error)) throw new NotFoundError(`no object at ${key}`, { cause: error });
      throw error;
    }
  }

  /**
   * Reads several objects with `GetObject`, at most {@link GET_MANY_CONCURRENCY} in flight.
   * Returns a map from key to bytes; missing keys are absent. Duplicate keys are read once.
   * @throws ValidationError when any key is invalid (before any request is sent).
   */
  async getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    for (const key of keys) this.objectKey(key); // validate all before sending anything
    const found = new Map<string, Buffer>();
    const limit = pLimit(GET_MANY_CONCURRENCY);
    await Promise.all(
      [...new Set(keys)].map((key) =>
        limit(async () => {
          try {
            found.set(key, await this.get(key));
          } catch (error) {
            if (!(error instanceof NotFoundError)) throw error;
          }
        }),
      ),
    );
    return found;
  }

  /**
   * Creates the object with `PutObject` and `If-None-Match: *` (S3 conditional writes): S3
   * answers 412 `PreconditionFailed` when the key exists, and this returns `{ created: false }`
   * without writing. An HTTP 409 `ConditionalRequestConflict` (a concurrent conditional write
   * to the same key was in progress) is retried {@link CONFLICT_RETRIES} times with backoff;
   * if it still conflicts, `HeadObject` decides: the key exists → `{ created: false }`.
   *
   * `created: false` means "this call did not prove it created the object": if a first attempt
   * wrote the object but its response was lost (timeout, 5xx) and the SDK's retry then got 412,
   * the result is `false` although the bytes are this call's.
   * @throws ValidationError for an invalid key.
   * @throws the last 409 `S3ServiceException` when conflicts persist and the key still does not exist.
   */
  async put(key: string, data: Buffer | string): Promise<PutResult> {
    const objectKey = this.objectKey(key);
    const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let conflict: unknown;
    for (let attempt = 0; attempt <= CONFLICT_RETRIES; attempt += 1) {
      if (attempt > 0) await sleep(CONFLICT_BACKOFF_MS * 2 ** (attempt - 1) * (0.5 + Math.random() / 2));
      try {
        await this.client.send(
          new (s3Sdk().PutObjectCommand)({
            Bucket: this.bucket,
            Key: objectKey,
            Body: body,
            IfNoneMatch: '*',
          }),
        );
        return { created: true };
      } catch (error) {
        if (isPreconditionFailed(error)) return { created: false };
        if (!isConditionalConflict(error)) throw error;
        conflict = error;
      }
    }
    if (await this.exists(objectKey)) return { created: false };
    throw conflict;
  }

  /**
   * Deletes the object with `DeleteObject`; S3 answers 204 for a missing key too.
   * @throws ValidationError for an invalid key.
   */
  async delete(key: string): Promise<void> {
    await this.client.send(
      new (s3Sdk().DeleteObjectCommand)({ Bucket: this.bucket, Key: this.objectKey(key) }),
    );
  }

  /**
   * Keys starting with `prefix` (a plain string prefix, as S3's `Prefix`: `cld/x.c1` also
   * matches `cld/x.c10`; append `/` to list only a subtree), from `ListObjectsV2` followed
   * through every continuation token, sorted with {@link compareKeys}.
   * @throws ValidationError when the part of `prefix` before its last `/` is not a valid key
   *   (the filesystem adapter's rule).
   */
  async findByPrefix(prefix: string, options: FindOptions = {}): Promise<string[]> {
    const slash = prefix.lastIndexOf('/');
    if (slash > 0) assertValidKey(prefix.slice(0, slash));
    return (await this.list(prefix, options.delimiter)).sort(compareKeys);
  }

  /**
   * Keys ending with `extension` (for example `.json`): lists every key under the adapter's
   * prefix with `ListObjectsV2` and filters by suffix, sorted with {@link compareKeys}.
   */
  async findByExtension(extension: string): Promise<string[]> {
    return (await this.list('')).filter((key) => key.endsWith(extension)).sort(compareKeys);
  }

  /** Validates `key` and returns its object key; the whole object key must fit S3's limit too. */
  private objectKey(key: string): string {
    assertValidKey(key);
    const objectKey = `${this.prefix}${key}`;
    if (Buffer.byteLength(objectKey, 'utf8') > MAX_KEY_BYTES) {
      throw new ValidationError(`storage key plus prefix over ${MAX_KEY_BYTES} bytes`);
    }
    return objectKey;
  }

  /**
   * Keys (prefix stripped) under `prefix`, all pages (with `delimiter`, the pages' `Contents`
   * only); object keys that are not valid storage keys are skipped.
   */
  private async list(prefix: string, delimiter?: '/'): Promise<string[]> {
    const listPrefix = `${this.prefix}${prefix}`;
    const paginator = s3Sdk().paginateListObjectsV2(
      { client: this.client, ...(this.pageSize === undefined ? {} : { pageSize: this.pageSize }) },
      {
        Bucket: this.bucket,
        ...(listPrefix === '' ? {} : { Prefix: listPrefix }),
        ...(delimiter ? { Delimiter: delimiter } : {}),
      },
    );
    const keys: string[] = [];
    for await (const page of paginator) {
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || !object.Key.startsWith(this.prefix)) continue;
        const key = object.Key.slice(this.prefix.length);
        if (isValidKey(key)) keys.push(key);
      }
    }
    return keys;
  }

  private async exists(objectKey: string): Promise<boolean> {
    try {
      await this.client.send(new (s3Sdk().HeadObjectCommand)({ Bucket: this.bucket, Key: objectKey }));
      return true;
    } catch (error) {
      if (isMissingObject(error)) return false;
      throw error;
    }
  }
}

/** Options of {@link createS3Client}. */
export interface CreateS3ClientOptions {
  /** AWS region; defaults to the SDK's resolution (`AWS_REGION`, profile). */
  region?: string;
  /** Endpoint URL of an S3-compatible server (for example `http://127.0.0.1:4568`); omit for AWS. */
  endpoint?: string;
  /** Path-style addressing (`endpoint/bucket/key`), which most local servers require. */
  forcePathStyle?: boolean;
  /** Static credentials or a provider; defaults to the SDK's default chain. */
  credentials?: S3ClientConfig['credentials'];
}

/**
 * Builds the `S3Client` for {@link S3Storage}; call it once per process (module scope).
 *
 * When `endpoint` is given (a local S3-compatible server such as s3rver or an older MinIO), it
 * also sets `requestChecksumCalculation` and `responseChecksumValidation` to `'WHEN_REQUIRED'`.
 * Since the SDK's default integrity protection (`'WHEN_SUPPORTED'`, early 2025) every
 * `PutObject` carries a CRC32 checksum, and a streaming body is sent `aws-chunked` with the
 * checksum in a trailer; servers that predate this store the chunk framing as object bytes
 * (s3rver 3.7.1 does) or reject the request, and `GetObject` asks for checksums they do not
 * return. Against AWS itself the defaults stay: S3 verifies the checksums.
 */
export function createS3Client(options: CreateS3ClientOptions = {}): S3Client {
  const config: S3ClientConfig = {};
  if (options.region !== undefined) config.region = options.region;
  if (options.forcePathStyle !== undefined) config.forcePathStyle = options.forcePathStyle;
  if (options.credentials !== undefined) config.credentials = options.credentials;
  if (options.endpoint !== undefined) {
    config.endpoint = options.endpoint;
    config.requestChecksumCalculation = 'WHEN_REQUIRED';
    config.responseChecksumValidation = 'WHEN_REQUIRED';
  }
  return new (s3Sdk().S3Client)(config);
}

interface SdkErrorShape {
  name?: unknown;
  $metadata?: { httpStatusCode?: number };
}

function sdkError(error: unknown): { name: unknown; status: number | undefined } {
  if (typeof error !== 'object' || error === null) return { name: undefined, status: undefined };
  const shape = error as SdkErrorShape;
  return { name: shape.name, status: shape.$metadata?.httpStatusCode };
}

/** 404 for an object (`NoSuchKey` from GetObject, body-less `NotFound` from HeadObject), not for a bucket. */
function isMissingObject(error: unknown): boolean {
  const { name, status } = sdkError(error);
  return name === 'NoSuchKey' || (status === 404 && name !== 'NoSuchBucket');
}

function isPreconditionFailed(error: unknown): boolean {
  const { name, status } = sdkError(error);
  return status === 412 || name === 'PreconditionFailed';
}

function isConditionalConflict(error: unknown): boolean {
  const { name, status } = sdkError(error);
  return status === 409 || name === 'ConditionalRequestConflict';
}

function isValidKey(key: string): boolean {
  try {
    assertValidKey(key);
    return true;
  } catch {
    return false;
  }
}
