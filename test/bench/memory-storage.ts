import { NotFoundError, ValidationError } from '../../shared/errors.js';
import { assertValidKey, compareKeys } from '../../shared/storage/keys.js';
import type { PutResult, StorageInterface } from '../../shared/storage/port.js';

/**
 * A scratch in-memory storage for benchmarks (issue 16: "an in-memory storage variant"): the
 * objects in a Map, the keys in an array kept sorted by UTF-8 byte order, so a prefix listing is
 * two binary searches and a slice. Create-only like the real adapters; not for production (no
 * durability, one process).
 */
export class MemoryStorage implements StorageInterface {
  private readonly objects = new Map<string, Buffer>();
  private readonly keys: string[] = [];

  async get(key: string): Promise<Buffer> {
    assertValidKey(key);
    const data = this.objects.get(key);
    if (!data) throw new NotFoundError(`no object at ${key}`);
    return data;
  }

  async getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>();
    for (const key of keys) {
      const data = this.objects.get(key);
      if (data) found.set(key, data);
    }
    return found;
  }

  async put(key: string, data: Buffer | string): Promise<PutResult> {
    assertValidKey(key);
    if (this.objects.has(key)) return { created: false };
    if (typeof data !== 'string' && !Buffer.isBuffer(data))
      throw new ValidationError('data must be a string or Buffer');
    this.objects.set(key, Buffer.from(data));
    this.keys.splice(this.lowerBound(key), 0, key);
    return { created: true };
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    if (!this.objects.delete(key)) return;
    this.keys.splice(this.lowerBound(key), 1);
  }

  async findByPrefix(prefix: string): Promise<string[]> {
    const from = this.lowerBound(prefix);
    let to = from;
    while (to < this.keys.length && (this.keys[to] as string).startsWith(prefix)) to++;
    return this.keys.slice(from, to);
  }

  async findByExtension(extension: string): Promise<string[]> {
    return this.keys.filter((key) => key.endsWith(extension));
  }

  /** Index of the first key not below `key` (UTF-8 byte order). */
  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.keys[mid] as string, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** Counts what a storage is asked: object reads (a `getMany` counts each key) and listings. */
export class CountingStorage implements StorageInterface {
  reads = 0;
  listings = 0;
  puts = 0;

  constructor(private readonly inner: StorageInterface) {}

  get(key: string): Promise<Buffer> {
    this.reads++;
    return this.inner.get(key);
  }

  getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    this.reads += keys.length;
    return this.inner.getMany(keys);
  }

  put(key: string, data: Buffer | string): Promise<PutResult> {
    this.puts++;
    return this.inner.put(key, data);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  findByPrefix(prefix: string): Promise<string[]> {
    this.listings++;
    return this.inner.findByPrefix(prefix);
  }

  findByExtension(extension: string): Promise<string[]> {
    this.listings++;
    return this.inner.findByExtension(extension);
  }
}
