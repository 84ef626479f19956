import { randomUUID } from 'node:crypto';
import {
  type Dirent,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { NotFoundError, ValidationError } from '../errors.js';
import { assertValidKey, compareKeys } from './keys.js';
import type { FindOptions, PutResult, StorageInterface } from './port.js';

const TMP_DIR = '.tmp';

/** Files `getMany` reads between two turns of the event loop (one file is open at a time). */
export const READS_PER_TURN = 256;

/**
 * Filesystem adapter (the embedded default). Keys map to paths under `root`; a key's `/`
 * becomes a directory separator. Creates are atomic and exclusive: the data is written to a
 * temporary file, then hard-linked to its final name (`link(2)` fails with `EEXIST` when the
 * key exists), so a crash never leaves a half-written object and a second create never
 * overwrites. Unlike S3, a filesystem cannot hold both `a` and `a/b`: such a collision (never
 * produced by resource keys, which all end in `.json`) is rejected with a ValidationError, and
 * the `.tmp/` prefix is reserved. Each directory is created at most once per instance (a
 * vanished one is created again).
 *
 * Gets and puts make their few system calls synchronously (a put: write, link, unlink; a get:
 * one read; a delimited listing: one `readdir` of a folder), each a few microseconds on a local disk: Node's asynchronous `fs` costs several
 * times more CPU per call (a thread-pool round trip, a `FileHandle`, promises) than the call
 * itself, about 1 ms of CPU per put against 0.1 ms (issue 16). One file is open at a time, so a
 * `getMany` of any size never runs out of descriptors; it lets the event loop turn every
 * {@link READS_PER_TURN} files. Listings of a whole subtree and deletes stay asynchronous.
 */
export class FilesystemStorage implements StorageInterface {
  readonly root: string;
  /** Directories this instance created or found (a put makes each at most once, not per put). */
  private readonly dirs = new Set<string>();

  /** @param root directory holding the objects; created on first put. */
  constructor(root: string) {
    this.root = root;
  }

  async get(key: string): Promise<Buffer> {
    assertValidKey(key);
    const data = this.read(key);
    if (data === undefined) throw new NotFoundError(`no object at ${key}`);
    return data;
  }

  /** Reads one file at a time, letting the event loop turn every {@link READS_PER_TURN} files. */
  async getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    for (const key of keys) assertValidKey(key);
    const found = new Map<string, Buffer>();
    for (let i = 0; i < keys.length; i++) {
      if (i > 0 && i % READS_PER_TURN === 0) await yieldToEventLoop();
      const key = keys[i] as string;
      const data = this.read(key);
      if (data !== undefined) found.set(key, data);
    }
    return found;
  }

  /** The object's bytes, or undefined when there is none (no file, or a folder of other keys). */
  private read(key: string): Buffer | undefined {
    try {
      return readFileSync(this.pathOf(key));
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'EISDIR')) return undefined;
      throw error;
    }
  }

  async put(key: string, data: Buffer | string): Promise<PutResult> {
    assertValidKey(key);
    if (key === TMP_DIR || key.startsWith(`${TMP_DIR}/`))
      throw new ValidationError(`key prefix ${TMP_DIR}/ is reserved`);
    const target = this.pathOf(key);
    const tmpDir = join(this.root, TMP_DIR);
    const tmp = join(tmpDir, randomUUID());
    this.ensureDir(tmpDir);
    try {
      this.ensureDir(dirname(target));
    } catch (error) {
      if (isCode(error, 'ENOTDIR') || isCode(error, 'EEXIST')) {
        throw new ValidationError(`key ${key} lies under an existing object on the filesystem`);
      }
      throw error;
    }
    try {
      writeFileSync(tmp, data);
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw error;
      // The folder was removed behind this instance's back: forget what it knew and retry once.
      this.dirs.clear();
      this.ensureDir(tmpDir);
      this.ensureDir(dirname(target));
      writeFileSync(tmp, data);
    }
    try {
      try {
        linkSync(tmp, target);
      } catch (error) {
        if (!isCode(error, 'ENOENT')) throw error;
        this.dirs.delete(dirname(target));
        this.ensureDir(dirname(target));
        linkSync(tmp, target);
      }
      return { created: true };
    } catch (error) {
      if (isCode(error, 'EEXIST')) {
        // A directory at the target means the key is a prefix of other keys, not an object.
        const existing = lstatSync(target);
        if (existing.isDirectory())
          throw new ValidationError(`key ${key} names a folder of other keys on the filesystem`);
        return { created: false };
      }
      if (isCode(error, 'ENOTDIR') || isCode(error, 'EEXIST')) {
        throw new ValidationError(`key ${key} lies under an existing object on the filesystem`);
      }
      throw error;
    } finally {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone: nothing to clean
      }
    }
  }

  /**
   * Removes the temporary files of creates that never finished (a process killed between the
   * write of the data and its link): `.tmp/` holds nothing else, and an object is visible only
   * once linked. Call it when no create is running (at start, before the runtime takes work).
   * @returns how many files were removed
   */
  async cleanTemp(): Promise<number> {
    const dir = join(this.root, TMP_DIR);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isCode(error, 'ENOENT')) return 0;
      throw error;
    }
    await Promise.all(names.map((name) => rm(join(dir, name), { force: true, recursive: true })));
    return names.length;
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await rm(this.pathOf(key), { force: true });
  }

  /** With `delimiter`, reads only the prefix's folder (S3's `Contents` of a delimited listing). */
  async findByPrefix(prefix: string, options: FindOptions = {}): Promise<string[]> {
    const slash = prefix.lastIndexOf('/');
    const base = slash === -1 ? '' : prefix.slice(0, slash);
    if (base !== '') assertValidKey(base);
    const keys = options.delimiter === '/' ? this.files(base) : await this.walk(base);
    return keys.filter((key) => key.startsWith(prefix)).sort(compareKeys);
  }

  async findByExtension(extension: string): Promise<string[]> {
    const keys = await this.walk('');
    return keys.filter((key) => key.endsWith(extension)).sort(compareKeys);
  }

  /** `mkdir -p` once per directory and instance. */
  private ensureDir(dir: string): void {
    if (this.dirs.has(dir)) return;
    mkdirSync(dir, { recursive: true });
    this.dirs.add(dir);
  }

  private pathOf(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  /** Keys of the files directly in folder `base` (not below it): one synchronous `readdir`. */
  private files(base: string): string[] {
    let entries: Dirent[];
    try {
      entries = readdirSync(base === '' ? this.root : this.pathOf(base), { withFileTypes: true });
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return [];
      throw error;
    }
    const folder = base === '' ? '' : `${base}/`;
    return entries.filter((entry) => entry.isFile()).map((entry) => `${folder}${entry.name}`);
  }

  private async walk(base: string): Promise<string[]> {
    const dir = base === '' ? this.root : this.pathOf(base);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true, recursive: true });
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return [];
      throw error;
    }
    const keys: string[] = [];
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const full = join(entry.parentPath, entry.name);
      const relative = full
        .slice(this.root.length + 1)
        .split(sep)
        .join('/');
      if (relative.startsWith(`${TMP_DIR}/`)) continue;
      keys.push(relative);
    }
    return keys;
  }
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
