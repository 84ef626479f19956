import { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { ShardedChunkIndex } from '../shared/search/sharded-index.js';
import { FilesystemStorage } from '../shared/storage/filesystem.js';
import { createS3Client } from '../shared/storage/s3.js';

/**
 * The tool function's handler, so that the probe bundle is the `tool` bundle's module graph plus
 * {@link firstSearch}: the report imports it once and runs the first search on the code that
 * import already compiled, as the function's first invocation does (a probe of its own would
 * load a second copy of the search code, ≈ 15–20 ms Lambda never pays).
 */
export { handler } from '../functions/tool/handler.js';

/**
 * Entry of the search probe `npm run bundle:report` bundles with the function bundles' options
 * (scripts/bundles.ts `SearchProbe`): the tool step's cold open of the chunk index, as
 * shared/runtime/adapters/tools.ts `loadTools` does it in a function (the shard pack on the data
 * directory's `indexes/`), and its first search. In a function the first invocation also builds
 * the S3 client (shared/runtime/compose.ts, which loads `@aws-sdk/client-s3`: shared/aws/sdk.ts)
 * before the first search reads the pack from the bucket; the probe reads it from the filesystem,
 * so it builds the client too (no request is sent), and the SDK's load counts in the first search.
 * @param dataDir the data directory (`CLD_DATA_DIR`) whose `indexes/` holds the chunk index
 * @param mode `whole` opens the whole generation instead, as the tool step did before the pack
 * @returns how many hits the first search returned
 */
export async function firstSearch(
  dataDir: string,
  query: string,
  mode: 'sharded' | 'whole' = 'sharded',
): Promise<number> {
  createS3Client({ region: 'eu-west-1' });
  const storage = new FilesystemStorage(dataDir);
  const index =
    mode === 'whole' ? await MiniSearchIndex.open(storage) : await ShardedChunkIndex.open(storage);
  return (await index.search(query)).length;
}
