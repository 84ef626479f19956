import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../shared/errors.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { storageContract } from './contract.js';

async function makeFilesystemStorage(): Promise<{
  storage: FilesystemStorage;
  cleanup: () => Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), 'cld-fs-storage-'));
  return { storage: new FilesystemStorage(root), cleanup: () => rm(root, { recursive: true, force: true }) };
}

storageContract('FilesystemStorage', makeFilesystemStorage, { conditionalWrites: true });

describe('FilesystemStorage crash safety', () => {
  const key = 'cld:common.Conversation.0123456789abcdef/common.Message.0123456789abcdef.json';
  let storage: FilesystemStorage;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ storage, cleanup } = await makeFilesystemStorage());
  });

  afterEach(async () => {
    await cleanup();
  });

  it('shows nothing of a create that crashed before its link: the temp file is not listed and the key stays free', async () => {
    // The state a crash between writing the temp file and linking it leaves behind.
    await mkdir(join(storage.root, '.tmp'), { recursive: true });
    await writeFile(join(storage.root, '.tmp', 'a1b2c3d4-crashed-write.json'), '{"partial":');

    expect(await storage.findByPrefix('')).toEqual([]);
    expect(await storage.findByExtension('.json')).toEqual([]);
    expect(await storage.findByExtension('')).toEqual([]);
    await expect(storage.get(key)).rejects.toBeInstanceOf(NotFoundError);
    expect(await storage.put(key, '{"complete":true}')).toEqual({ created: true });
    expect(await storage.findByPrefix('')).toEqual([key]);
  });

  it('leaves no temp file behind after a created and a refused put', async () => {
    await storage.put(key, 'first');
    await storage.put(key, 'second');

    expect(await readdir(join(storage.root, '.tmp'))).toEqual([]);
    expect(await storage.findByExtension('')).toEqual([key]);
  });
});

describe('FilesystemStorage key collisions a filesystem cannot represent', () => {
  it('rejects the reserved .tmp/ prefix, a key over a folder and a key under an object', async () => {
    const storage = new FilesystemStorage(await mkdtemp(join(tmpdir(), 'cld-fs-collide-')));
    await expect(storage.put('.tmp/z', 'x')).rejects.toBeInstanceOf(ValidationError);
    await storage.put('a/b', 'child');
    await expect(storage.put('a', 'parent')).rejects.toBeInstanceOf(ValidationError);
    await storage.put('c', 'object');
    await expect(storage.put('c/d', 'below')).rejects.toBeInstanceOf(ValidationError);
    expect((await storage.get('c')).toString()).toBe('object');
  });
});
