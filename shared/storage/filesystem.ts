import { randomUUID } from 'node:crypto';
import { link, lstat, mkdir, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import pLimit from 'p-limit';
import { NotFoundError, ValidationError } from '../errors.js';
import { assertValidKey, compareKeys } from './keys.js';
import type { PutResult, StorageInterface } from './port.js';

const TMP_DIR = '.tmp';

/** Files one instance reads at once in `getMany` (far below the usual 1,024 descriptors). */
export const READ_CONCURRENCY = 64;

/**
 * Filesystem adapter (the embedded default). Keys map to paths under `root`; a key's `/`
 * becomes a directory separator. Creates are atomic and exclusive: the data is written to a
 * temporary file, then hard-linked to its final name (`link(2)` fails with `EEXIST` when the
 * key exists), so a crash never leaves a half-written object and a second create never
 * overwrites. Unlike S3, a filesystem cannot hold both `a` and `a/b`: such a collision (never
 * produced by resource keys, which all end in `.json`) is rejected with a ValidationError, and
 * the `.tmp/` prefix is reserved. Each directory is created at most once per instance (a
 * vanished one is created again), and `getMany` reads at most {@link READ_CONCURRENCY} files
 * at once.
 */
export class FilesystemStorage implements StorageInterface {
  readonly root: string;
  /** Directories this instance created or found (a put makes each at most once, not per put). */
  private readonly dirs = new Set<string>();
  /** Bounds the files open at once across `getMany` calls (EMFILE on large listings otherwise). */
  private readonly reads = pLimit(READ_CONCURRENCY);

  /** @param root directory holding the objects; created on first put. */
  constructor(root: string) {
    this.root = root;
  }

  async get(key: string): Promise<Buffer> {
    assertValidKey(key);
    try {
      return await readFile(this.pathOf(key));
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'EISDIR')) throw new NotFoundError(`no object at ${key}`);
      throw error;
    }
  }

  /** Reads at most {@link READ_CONCURRENCY} files at once (per instance), whatever the number of keys. */
  async getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>();
    await Promise.all(
      keys.map((key) =>
        this.reads(async () => {
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

  async put(key: string, data: Buffer | string): Promise<PutResult> {
    assertValidKey(key);
    if (key === TMP_DIR || key.startsWith(`${TMP_DIR}/`))
      throw new ValidationError(`key prefix ${TMP_DIR}/ is reserved`);
    const target = this.pathOf(key);
    const tmpDir = join(this.root, TMP_DIR);
    const tmp = join(tmpDir, randomUUID());
    await this.ensureDir(tmpDir);
    try {
      await this.ensureDir(dirname(target));
    } catch (error) {
      if (isCode(error, 'ENOTDIR') || isCode(error, 'EEXIST')) {
        throw new ValidationError(`key ${key} lies under an existing object on the filesystem`);
      }
      throw error;
    }
    try {
      await writeFile(tmp, data);
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw error;
      // The folder was removed behind this instance's back: forget what it knew and retry once.
      this.dirs.clear();
      await this.ensureDir(tmpDir);
      await this.ensureDir(dirname(target));
      await writeFile(tmp, data);
    }
    try {
      try {
        await link(tmp, target);
      } catch (error) {
        if (!isCode(error, 'ENOENT')) throw error;
        this.dirs.delete(dirname(target));
        await this.ensureDir(dirname(target));
        await link(tmp, target);
      }
      return { created: true };
    } catch (error) {
      if (isCode(error, 'EEXIST')) {
        // A directory at the target means the key is a prefix of other keys, not an object.
        const existing = await lstat(target);
        if (existing.isDirectory())
          throw new ValidationError(`key ${key} names a folder of other keys on the filesystem`);
        return { created: false };
      }
      if (isCode(error, 'ENOTDIR') || isCode(error, 'EEXIST')) {
        throw new ValidationError(`key ${key} lies under an existing object on the filesystem`);
      }
      throw error;
    } finally {
      await unlink(tmp).catch(() => undefined);
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

  async findByPrefix(prefix: string): Promise<string[]> {
    const slash = prefix.lastIndexOf('/');
    const base = slash === -1 ? '' : prefix.slice(0, slash);
    if (base !== '') assertValidKey(base);
    const keys = await this.walk(base);
    return keys.filter((key) => key.startsWith(prefix)).sort(compareKeys);
  }

  async findByExtension(extension: string): Promise<string[]> {
    const keys = await this.walk('');
    return keys.filter((key) => key.endsWith(extension)).sort(compareKeys);
  }

  /** `mkdir -p` once per directory and instance. */
  private async ensureDir(dir: string): Promise<void> {
    if (this.dirs.has(dir)) return;
    await mkdir(dir, { recursive: true });
    this.dirs.add(dir);
  }

  private pathOf(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  private async walk(base: string): Promise<string[]> {
    const dir = base === '' ? this.root : this.pathOf(base);
    let entries: import('node:fs').Dirent[];
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
