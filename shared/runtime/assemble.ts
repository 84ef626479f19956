import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Logger } from '@aws-lambda-powertools/logger';
import { defaultCatalog, type ToolApproval } from '../catalog/catalog.js';
import type { Limits } from '../domain/limits.js';
import type { Deps } from '../domain/ports.js';
import type { ChatModel, Embedder } from '../llm/port.js';
import { type Policy, SYSTEM_ACTOR } from '../policy/port.js';
import { builtinPolicy } from '../policy/select.js';
import { LocalProjectionStore } from '../projections/local.js';
import type { OpenConversationStore } from '../projections/open-conversations.js';
import type { ProjectionStore } from '../projections/port.js';
import type { UserConversationStore } from '../projections/user-conversations.js';
import { type ResourceCacheOptions, ResourceIndex } from '../resources/resource-index.js';
import type { ChunkSearch } from '../search/port.js';
import { HashingEmbedder } from '../search/similarity.js';
import type { StorageInterface } from '../storage/port.js';
import type { McpRuntime } from '../tools/mcp/sessions.js';
import type { ToolImplementation } from '../tools/port.js';
import { defaultIdempotency } from './adapters/projections.js';
import { loadTools, UnusedSearch } from './adapters/tools.js';
import { EVERYTHING, type FunctionUses } from './function-uses.js';

/**
 * Stores the default catalog (shared/catalog/) as the operator ({@link SYSTEM_ACTOR}): create-only
 * puts, concurrently; a no-op for what is already stored. Deployed, the stack does this at deploy
 * (infra/lib/catalog-seed.ts, the same keys); locally the embedded default does it when it starts
 * (`createLocalRuntime`: the CLI's `ingest`, `ask`, `serve`). A function's cold start never does:
 * it writes nothing and needs no catalog write right.
 * @returns how many catalog resources this call created (0 when all were stored)
 * @throws PolicyDeniedError when the policy does not let the operator put the catalog
 *   (`system-catalog` in policies/rules.json); what the storage throws
 */
export async function seedCatalog(resources: ResourceIndex): Promise<number> {
  const catalog = defaultCatalog();
  const outcomes = await Promise.all(
    [...catalog.assistants, ...catalog.tools].map((resource) => resources.put(SYSTEM_ACTOR, resource)),
  );
  return outcomes.filter((outcome) => outcome.created).length;
}

/**
 * Shared assembly of Deps from a storage (with or without notifications) and an index storage:
 * the catalog from the code (`deps.catalog`, never read from or written to storage here) and,
 * when the function runs tools, the chunk index opened. Writes nothing.
 * @throws ConfigError when `uses.tools` and the code was bundled without them; what the index
 *   storage throws while the index opens
 */
export async function assembleDeps(options: {
  storage: StorageInterface;
  indexStorage: StorageInterface;
  model: ChatModel;
  limits: Limits;
  logger: Logger;
  /** Projection store (counters, budgets); default: an in-memory local store. */
  projections?: ProjectionStore;
  /** Idempotency persistence for side effects that leave the system; default: in-memory local. */
  idempotency?: BasePersistenceLayer;
  /** The open-conversations projection the steps touch; default: none. */
  openConversations?: OpenConversationStore;
  /** The conversations-per-user projection the HTTP channel records to; default: none. */
  userConversations?: UserConversationStore;
  now?: () => Date;
  /** Policy gate of every get/list/put; default: the built-in evaluator over every rule. */
  policy?: Policy;
  /** What the function uses (default: everything); without `tools`, no index is opened. */
  uses?: Readonly<FunctionUses>;
  /** Bounds of the resource read cache (default {@link DEFAULT_RESOURCE_CACHE}). */
  resourceCache?: ResourceCacheOptions;
  /** The function's name, for the errors of what it does not use. */
  function?: string;
  /** Embedder for election and hybrid retrieval (default: the offline hashing embedder). */
  embedder?: Embedder;
  /** Approval settings over the catalog's tools (`CLD_TOOL_APPROVAL`). */
  toolApproval?: ToolApproval;
  /** MCP servers and sessions (only where tools run); default: none. */
  mcp?: McpRuntime;
  /**
   * How the chunk index opens: `whole` (default; a `MiniSearchIndex` ingest can extend) or
   * `sharded` (read-only `ShardedChunkIndex`, what a function's cold start uses).
   */
  chunkIndex?: 'whole' | 'sharded';
}): Promise<Deps> {
  const uses = options.uses ?? EVERYTHING;
  const embedder = options.embedder ?? new HashingEmbedder();
  const resources = new ResourceIndex(
    options.storage,
    options.policy ?? builtinPolicy(),
    options.resourceCache,
  );
  const catalog = defaultCatalog(options.toolApproval);
  let tools: { search: ChunkSearch; tools: ReadonlyMap<string, ToolImplementation> };
  if (uses.tools)
    tools = await loadTools(options.indexStorage, resources, embedder, options.chunkIndex ?? 'whole');
  else tools = { search: new UnusedSearch(options.function), tools: new Map() };
  return {
    resources,
    model: options.model,
    embedder,
    search: tools.search,
    tools: tools.tools,
    catalog,
    limits: options.limits,
    projections: options.projections ?? new LocalProjectionStore(),
    idempotency: options.idempotency ?? (await defaultIdempotency()),
    ...(options.openConversations ? { openConversations: options.openConversations } : {}),
    ...(options.userConversations ? { userConversations: options.userConversations } : {}),
    ...(options.mcp && uses.tools ? { mcp: options.mcp } : {}),
    logger: options.logger,
    now: options.now ?? (() => new Date()),
  };
}
