import { NotFoundError, ValidationError } from '../../shared/errors.js';
import { assertValidKey, compareKeys } from '../../shared/storage/keys.js';
import type { FindOptions, PutResult, StorageInterface } from '../../shared/storage/port.js';

/**
 * A scratch in-memory storage for benchmarks (issue 16: "an in-memory storage variant"): the
 * objects in a Map, and for each folder (a key up to its last `/`) the keys and sub-folders in
 * it, so a put is O(1) and a prefix listing walks only the folder it names, as the filesystem
 * adapter does. Create-only like the real adapters; not for production (no durability, one
 * process).
 */
export class MemoryStorage implements StorageInterface {
  private readonly objects = new Map<string, Buffer>();
  /** Folder → keys directly in it; folder → its sub-folders. */
  private readonly files = new Map<string, Set<string>>();
  private readonly folders = new Map<string, Set<string>>();

  async get(key: string): Promise<Buffer> {
    assertValidKey(key);
    const data = this.objects.get(key);
    if (!data) throw new NotFoundError(`no object at ${key}`);
    return data;
  }

  async getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    for (const key of keys) assertValidKey(key);
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
    let folder = folderOf(key);
    add(this.files, folder, key);
    while (folder !== '') {
      const parent = folderOf(folder);
      if (this.folders.get(parent)?.has(folder)) break;
      add(this.folders, parent, folder);
      folder = parent;
    }
    return { created: true };
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    if (this.objects.delete(key)) this.files.get(folderOf(key))?.delete(key);
  }

  /** With `delimiter`, only the keys directly in the prefix's folder (S3's delimited `Contents`). */
  async findByPrefix(prefix: string, options: FindOptions = {}): Promise<string[]> {
    const folder = folderOf(prefix);
    if (folder !== '') assertValidKey(folder); // as the filesystem adapter
    const keys: string[] = [];
    if (options.delimiter === '/') {
      for (const key of this.files.get(folderOf(prefix)) ?? []) if (key.startsWith(prefix)) keys.push(key);
      return keys.sort(compareKeys);
    }
    const walk = (folder: string) => {
      for (const key of this.files.get(folder) ?? []) if (key.startsWith(prefix)) keys.push(key);
      for (const sub of this.folders.get(folder) ?? []) walk(sub);
    };
    walk(folderOf(prefix));
    return keys.sort(compareKeys);
  }

  async findByExtension(extension: string): Promise<string[]> {
    return [...this.objects.keys()].filter((key) => key.endsWith(extension)).sort(compareKeys);
  }
}

/** The folder of a key or prefix: up to its last `/` (`''` at the top). */
function folderOf(key: string): string {
  const slash = key.lastIndexOf('/');
  return slash === -1 ? '' : key.slice(0, slash);
}

function add(map: Map<string, Set<string>>, folder: string, item: string): void {
  let set = map.get(folder);
  if (!set) {
    set = new Set();
    map.set(folder, set);
  }
  set.add(item);
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

  findByPrefix(prefix: string, options?: FindOptions): Promise<string[]> {
    this.listings++;
    return this.inner.findByPrefix(prefix, options);
  }

  findByExtension(extension: string): Promise<string[]> {
    this.listings++;
    return this.inner.findByExtension(extension);
  }
}
