import { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { ShardedChunkIndex } from '../shared/search/sharded-index.js';
import { FilesystemStorage } from '../shared/storage/filesystem.js';

/**
 * Entry of the search probe `npm run bundle:report` bundles with the function bundles' options
 * (scripts/bundles.ts `SearchProbe`): the tool step's cold open of the chunk index, as
 * shared/runtime/adapters/tools.ts `loadTools` does it in a function (the shard pack on the data
 * directory's `indexes/`), and its first search.
 * @param dataDir the data directory (`CLD_DATA_DIR`) whose `indexes/` holds the chunk index
 * @param mode `whole` opens the whole generation instead, as the tool step did before the pack
 * @returns how many hits the first search returned
 */
export async function firstSearch(
  dataDir: string,
  query: string,
  mode: 'sharded' | 'whole' = 'sharded',
): Promise<number> {
  const storage = new FilesystemStorage(dataDir);
  const index =
    mode === 'whole' ? await MiniSearchIndex.open(storage) : await ShardedChunkIndex.open(storage);
  return (await index.search(query)).length;
}
