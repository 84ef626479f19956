/**
 * Storage port (seed roadmap-v1 step 04, `libstorage`): a flat key space of immutable
 * objects. Resources use the keys of shared/urn.ts `keyOf` (`cld/<path>_<shape>.json`); listing
 * `keyPrefixOf(urn)` returns a subtree.
 */

/** Result of a create-only put. */
export interface PutResult {
  /** True when this call created the object; false when the key already existed (nothing written). */
  created: boolean;
}

/** Options of {@link StorageInterface.findByPrefix}. */
export interface FindOptions {
  /**
   * `'/'`: only the keys with no `/` after the prefix, as the `Contents` of an S3
   * `ListObjectsV2` with `Delimiter: '/'` (its `CommonPrefixes`, the "folders" below, are not
   * returned). Listing `keyPrefixOf(urn)` so gives the keys of the URN's direct children only.
   */
  delimiter?: '/';
}

/** The storage contract both adapters (filesystem, S3) pass (test/storage/contract.ts). */
export interface StorageInterface {
  /**
   * Reads one object.
   * @throws NotFoundError when the key does not exist.
   */
  get(key: string): Promise<Buffer>;
  /** Reads several objects; keys that do not exist are absent from the returned map. */
  getMany(keys: readonly string[]): Promise<Map<string, Buffer>>;
  /**
   * Creates an object if and only if the key does not exist yet (`If-None-Match: *` on S3,
   * an exclusive create on the filesystem). A second create of the same key writes nothing
   * and returns `{ created: false }`; it never overwrites.
   */
  put(key: string, data: Buffer | string): Promise<PutResult>;
  /** Deletes an object; deleting a missing key is not an error. */
  delete(key: string): Promise<void>;
  /**
   * All keys starting with `prefix` (with `delimiter`: only those with no `/` after it), sorted by
   * UTF-8 byte order (as S3 lists them).
   */
  findByPrefix(prefix: string, options?: FindOptions): Promise<string[]>;
  /** All keys ending with `extension` (for example `.json`), sorted. */
  findByExtension(extension: string): Promise<string[]>;
}

/**
 * Validates a storage key: non-empty, at most 1,024 UTF-8 bytes, no empty, `.` or `..`
 * segments, not absolute, no NUL or backslash.
 * @throws ValidationError
 */
export { assertValidKey } from './keys.js';
