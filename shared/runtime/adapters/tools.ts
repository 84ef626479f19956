import { SECRET_MAX_AGE_SECONDS } from '../../channels/secrets.js';
import { ConfigError } from '../../errors.js';
import type { Embedder } from '../../llm/port.js';
import type { ResourceIndex } from '../../resources/resource-index.js';
import type { ChunkSearch, SearchHit } from '../../search/port.js';
import { HashingEmbedder } from '../../search/similarity.js';
import type { StorageInterface } from '../../storage/port.js';
import { parseMcpServers } from '../../tools/mcp/config.js';
import type { McpRuntime } from '../../tools/mcp/sessions.js';
import type { ToolImplementation } from '../../tools/port.js';
import { BUNDLED_FUNCTION, notUsed } from '../function-uses.js';
import type { Env } from '../settings.js';

/*
 * The tool adapters of Deps (the chunk index, the built-in tools, the MCP runtime), each loaded
 * with `import()` on the branch that uses it.
 */

/** `deps.search` of a function that does not run tools. */
export class UnusedSearch implements ChunkSearch {
  readonly #fn: string | undefined;
  constructor(fn: string | undefined) {
    this.#fn = fn;
  }
  search(): Promise<SearchHit[]> {
    return Promise.reject(notUsed(this.#fn, 'the chunk index'));
  }
}

/**
 * The chunk index on `indexStorage` (`sharded`: its shard pack, read from the first search on;
 * `whole`: the whole newest generation, loaded now) and the tool implementations.
 * @throws ConfigError when the code was bundled without them
 */
export async function loadTools(
  indexStorage: StorageInterface,
  resources: ResourceIndex,
  embedder: Embedder,
  chunkIndex: 'whole' | 'sharded',
): Promise<{ search: ChunkSearch; tools: ReadonlyMap<string, ToolImplementation> }> {
  if (process.env.CLD_BUNDLE_TOOLS !== 'false') {
    const [
      { MiniSearchIndex },
      { ShardedChunkIndex },
      { searchTool },
      { readTool },
      { createGraphTool },
      { GraphIndex },
    ] = await Promise.all([
      import('../../search/minisearch-index.js'),
      import('../../search/sharded-index.js'),
      import('../../tools/search.js'),
      import('../../tools/read.js'),
      import('../../tools/graph.js'),
      import('../../graph/graph-index.js'),
    ]);
    // The graph index manifest is read at the first graph call, not at cold start.
    const graphTool = createGraphTool(() => GraphIndex.open(indexStorage, resources));
    // A function's cold start opens the shard pack (the first search reads only the shards its
    // query needs); the local runtime opens the whole generation, which ingest extends.
    const index =
      chunkIndex === 'sharded'
        ? await ShardedChunkIndex.open(indexStorage)
        : await MiniSearchIndex.open(indexStorage);
    // Hybrid retrieval with a semantic embedder; the offline hashing embedder adds nothing to BM25.
    if (!(embedder instanceof HashingEmbedder)) index.useEmbedder(embedder);
    return {
      search: index,
      tools: new Map([searchTool, readTool, graphTool].map((tool) => [tool.name, tool])),
    };
  }
  throw notUsed(BUNDLED_FUNCTION, 'tools');
}

/**
 * The MCP runtime for a config: the servers of `CLD_MCP_SERVERS` or `CLD_MCP_CONFIG` (stdio ones
 * only without `CLD_BUCKET`), header secrets read from Secrets Manager (Powertools parameters,
 * cached {@link SECRET_MAX_AGE_SECONDS} s); undefined when no server is configured.
 * @throws ConfigError for an invalid server list, or servers in a bundle built without tools
 */
export async function mcpFor(env: Env): Promise<McpRuntime | undefined> {
  const servers = parseMcpServers(env, { stdio: !env.CLD_BUCKET });
  if (servers.length === 0) return undefined;
  if (process.env.CLD_BUNDLE_TOOLS !== 'false') {
    const [{ McpSessions }, { sdkConnector }, { loadSecretsProvider }] = await Promise.all([
      import('../../tools/mcp/sessions.js'),
      import('../../tools/mcp/client.js'),
      import('../../aws/asset-modules.js'),
    ]);
    let provider: Promise<{ get(name: string, options: { maxAge: number }): Promise<unknown> }> | undefined;
    const readSecret = async (arn: string): Promise<string> => {
      provider ??= loadSecretsProvider().then(
        (SecretsProvider) =>
          new SecretsProvider({ clientConfig: env.AWS_REGION ? { region: env.AWS_REGION } : {} }),
      );
      const value = await (await provider).get(arn, { maxAge: SECRET_MAX_AGE_SECONDS });
      if (typeof value !== 'string' || value.length === 0)
        throw new ConfigError(`${arn} is not a non-empty string secret`);
      return value.trim();
    };
    const connector = sdkConnector({ readSecret });
    return { servers, connector, sessions: new McpSessions(connector) };
  }
  throw notUsed(BUNDLED_FUNCTION, 'MCP tools');
}
