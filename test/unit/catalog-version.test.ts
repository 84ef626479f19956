import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CATALOG_FILES,
  type CatalogFiles,
  catalogObjects,
  defaultCatalog,
} from '../../shared/catalog/catalog.js';
import { assistantActor } from '../../shared/domain/common.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Assistant } from '../../shared/resources/schemas.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn } from '../../shared/urn.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The bundled catalog with the researcher's instructions edited, as a developer edits the file. */
function edited(): CatalogFiles {
  return {
    ...CATALOG_FILES,
    assistants: CATALOG_FILES.assistants.map((file) =>
      (file as { name: string }).name === 'researcher'
        ? { ...(file as object), instructions: 'Edited: cite the bucket policy section first.' }
        : file,
    ),
  };
}

/** What the stack's seed does at one deploy: a create-only put of each catalog object. */
async function deploy(storage: FilesystemStorage, files: CatalogFiles): Promise<number> {
  const puts = await Promise.all(catalogObjects(files).map((o) => storage.put(o.key, o.body)));
  return puts.filter((put) => put.created).length;
}

function researcher(files: CatalogFiles): Assistant {
  return defaultCatalog({}, files).assistants.find((a) => a.meta.name === 'researcher') as Assistant;
}

describe('catalog versioned by content (an edit reaches a deployed stack)', () => {
  it('gives an edited definition a new URN and key, the same name, and leaves the others as they are', () => {
    const before = catalogObjects();
    const after = catalogObjects(edited());

    const changed = after.filter((o) => !before.some((b) => b.key === o.key));
    expect(changed.map((o) => o.name)).toEqual(['researcher']);
    expect(before.find((o) => o.name === 'researcher')?.version).not.toBe(changed[0]?.version);
    expect(after.map((o) => o.name).sort()).toEqual(before.map((o) => o.name).sort());
  });

  it('does not change a version for key order alone', () => {
    const reordered: CatalogFiles = {
      ...CATALOG_FILES,
      assistants: CATALOG_FILES.assistants.map((file) =>
        Object.fromEntries(Object.entries(file as object).reverse()),
      ),
    };
    expect(catalogObjects(reordered).map((o) => o.key)).toEqual(catalogObjects().map((o) => o.key));
  });

  it("the redeployed function's catalog names the new version, and reading it returns the edited content", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cld-catalog-version-'));
    dirs.push(dir);
    const storage = new FilesystemStorage(join(dir, 'resources'));
    const v1 = researcher(CATALOG_FILES);
    const v2 = researcher(edited());

    expect(await deploy(storage, CATALOG_FILES)).toBe(catalogObjects().length);
    // The redeploy stores the edited definition (one new object) and overwrites nothing.
    expect(await deploy(storage, edited())).toBe(1);

    // A step of the redeployed function links its Task to the assistant its bundled catalog
    // names, and reads the catalog through its policy as the read tool and the HTTP API do.
    const resources = new ResourceIndex(storage, builtinPolicy('assistant'));
    const task = childUrn(
      childUrn(childUrn(undefined, 'common.Conversation', 'c'), 'common.Message', 'm'),
      'plan.Task',
      't',
    );
    const actor = assistantActor(task);
    expect(v2.meta.id).not.toBe(v1.meta.id);
    const current = (await resources.get(actor, v2.meta.id)) as Assistant;
    expect(current.meta.instructions).toBe('Edited: cite the bucket policy section first.');
    expect(current).toEqual(v2);
    // The version earlier Tasks link to is still there, unchanged.
    const previous = (await resources.get(actor, v1.meta.id)) as Assistant;
    expect(previous.meta.instructions).toBe(v1.meta.instructions);
  });
});
