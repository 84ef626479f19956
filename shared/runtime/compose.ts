import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { Logger } from '@aws-lambda-powertools/logger';
import * as z from 'zod';
import { defaultCatalog, parseToolApproval, type ToolApproval } from '../catalog/catalog.js';
import { SECRET_MAX_AGE_SECONDS } from '../channels/secrets.js';
import { TOKENIZER_RANKS_ENV, tokenizerRanksFile } from '../context/tokens.js';
import { type Limits, LimitsSchema } from '../domain/limits.js';
import { ConfigError } from '../errors.js';
import { type ModelConfig, ModelEnvShape, modelConfigOf, modelNameOf } from '../llm/config.js';
import type { ChatModel, ConverseResponse, Embedder } from '../llm/port.js';
import type { Actor, Policy } from '../policy/port.js';
import { builtinPolicy, selectPolicy } from '../policy/select.js';
import { LocalProjectionStore } from '../projections/local.js';
import { LocalOpenConversationStore, type OpenConversationStore } from '../projections/open-conversations.js';
import type { ProjectionStore } from '../projections/port.js';
import { UnconfiguredPersistenceLayer, UnconfiguredProjectionStore } from '../projections/unconfigured.js';
import { LocalUserConversationStore, type UserConversationStore } from '../projections/user-conversations.js';
import { type ResourceCacheOptions, ResourceIndex } from '../resources/resource-index.js';
import type { ChunkSearch, SearchHit } from '../search/port.js';
import { HashingEmbedder } from '../search/similarity.js';
import { FilesystemStorage } from '../storage/filesystem.js';
import type { StorageInterface } from '../storage/port.js';
import { parseMcpServers } from '../tools/mcp/config.js';
import type { McpRuntime } from '../tools/mcp/execute.js';
import type { ToolImplementation } from '../tools/port.js';
import type { Deps } from './deps.js';

/**
 * Composition roots. Config is parsed once, at init, with zod: a bad variable fails the cold
 * start with its name. With `CLD_BUCKET` set the adapters are AWS's (S3, Bedrock when
 * `CLD_MODEL_ID` is set, DynamoDB when `CLD_TABLE` is set); without it, the embedded default
 * (filesystem under `CLD_DATA_DIR`).
 *
 * A function composes only what its code path uses ({@link FUNCTION_USES}, keyed by
 * `CLD_FUNCTION`): the adapters it does not use are loaded with `import()` only on the branches
 * that use them, so the cold start of a function never evaluates them, and its bundle leaves them
 * out altogether (see {@link BUNDLED_FUNCTION}).
 */
export const EnvSchema = z.object({
  /** Resources bucket; set in AWS by the stack. */
  CLD_BUCKET: z.string().min(3).optional(),
  /**
   * Projections table (`pk`/`sk`, TTL `expiration`); set in AWS by the stack. With `CLD_BUCKET`
   * it selects the DynamoDB projection store and Powertools' `DynamoDBPersistenceLayer`.
   */
  CLD_TABLE: z.string().min(3).max(255).optional(),
  /** Local data directory (embedded default). */
  CLD_DATA_DIR: z.string().min(1).default('.cld'),
  /**
   * The chat model: `CLD_MODEL_PROVIDER` (`offline`, `bedrock`, `openai`), `CLD_MODEL_ID`,
   * `CLD_OPENAI_BASE_URL`, `CLD_OPENAI_API_KEY`, `CLD_OPENAI_TIMEOUT_MS` (shared/llm/config.ts).
   * No provider and no `CLD_MODEL_ID` → the offline model; `CLD_MODEL_ID` alone → Bedrock.
   */
  ...ModelEnvShape,
  /**
   * Bedrock embedding model (Titan Text Embeddings V2, `amazon.titan-embed-text-v2:0`) for hybrid
   * retrieval and assistant election; absent → the offline hashing embedder and lexical search.
   */
  CLD_EMBEDDING_MODEL_ID: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).optional(),
  /** Limits as JSON (see domain/limits.ts); absent → defaults. */
  CLD_LIMITS: z.string().optional(),
  /**
   * Which catalog tools need the user's approval of each call, as JSON `{"<tool>": "always" |
   * "never"}` over the catalog files' `approval` (shared/catalog/catalog.ts `parseToolApproval`).
   */
  CLD_TOOL_APPROVAL: z.string().optional(),
  POWERTOOLS_LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT']).optional(),
  /** Directory of the function's policy bundle: `rules.json`, `<CLD_FUNCTION>.wasm` when built (shared/policy/select.ts). */
  CLD_POLICY_DIR: z.string().min(1).optional(),
  /** Function whose policy applies (`plan`, `assistant`, `tool`, `http`, `slack`, `teams`, `reply`, `deadletter`, `local`); absent → every rule. */
  CLD_FUNCTION: z
    .string()
    .regex(/^[a-z][a-z0-9-]*$/, 'a function name such as plan')
    .optional(),
  /** Directory of compiled policy bundles overriding CLD_POLICY_DIR for `.wasm` files (e.g. policies/dist). */
  CLD_POLICY_WASM_DIR: z.string().min(1).optional(),
  /**
   * The tokenizer's `cl100k_base` ranks as a JSON file, read at the first token count
   * (shared/context/tokens.ts). Absent → in a function bundle the asset's
   * `tokenizer/cl100k_base.json` beside `index.mjs` (in Lambda `/var/task/tokenizer/cl100k_base.json`,
   * written by the bundling hook), elsewhere js-tiktoken's ranks module. The file is checked to
   * exist at init.
   */
  [TOKENIZER_RANKS_ENV]: z.string().min(1).optional(),
  /** MCP servers as a JSON array (shared/tools/mcp/config.ts); the stack sets it on the tool function from the CDK context. */
  CLD_MCP_SERVERS: z.string().min(1).optional(),
  /** A JSON file of MCP servers, the same format (local use; not with CLD_MCP_SERVERS). */
  CLD_MCP_CONFIG: z.string().min(1).optional(),
});
export type Env = z.infer<typeof EnvSchema>;

/** The operator actor: seeds the catalog (deploy, local start), ingests corpora, reads anything (CLI show). */
export const SYSTEM_ACTOR: Actor = { kind: 'system', id: 'operator' };

/**
 * Parses the environment, including that the model variables fit together (shared/llm/config.ts).
 * @throws ConfigError naming the bad variable
 */
export function parseEnv(env: NodeJS.ProcessEnv): Env {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(`invalid configuration: ${z.prettifyError(parsed.error)}`);
  modelConfigOf(parsed.data);
  return parsed.data;
}

/** Parses `CLD_LIMITS` JSON over the defaults. @throws ConfigError */
export function parseLimits(json: string | undefined, overrides: Partial<Limits> = {}): Limits {
  let value: unknown = {};
  if (json) {
    try {
      value = JSON.parse(json);
    } catch (error) {
      throw new ConfigError('CLD_LIMITS is not JSON', { cause: error });
    }
  }
  const parsed = LimitsSchema.safeParse({ ...(value as object), ...overrides });
  if (!parsed.success) throw new ConfigError(`invalid CLD_LIMITS: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Every setting parsed from the environment: the variables, and the JSON ones parsed and checked. */
export interface Settings {
  env: Env;
  /** `CLD_LIMITS` over the defaults. */
  limits: Limits;
  /** `CLD_TOOL_APPROVAL`. */
  toolApproval: ToolApproval;
}

/**
 * The one settings path of the functions and of every CLI command (issue 23): {@link parseEnv},
 * then `CLD_LIMITS` ({@link parseLimits}: JSON, no unknown key, every value in range) and
 * `CLD_TOOL_APPROVAL` (shared/catalog/catalog.ts `parseToolApproval`).
 * @throws ConfigError naming the variable (and, through zod, the key within it) that is malformed,
 *   unknown or out of range
 */
export function parseSettings(environment: NodeJS.ProcessEnv): Settings {
  const env = parseEnv(environment);
  const limits = parseLimits(env.CLD_LIMITS);
  let toolApproval: ToolApproval;
  try {
    toolApproval = parseToolApproval(env.CLD_TOOL_APPROVAL);
  } catch (error) {
    throw new ConfigError((error as Error).message, { cause: error });
  }
  return { env, limits, toolApproval };
}

/**
 * What a function's code path uses of the Deps beyond resources, policy, catalog and logger.
 * What it does not use is not composed: its Deps member fails with a ConfigError naming the
 * function when called (a bug in this table, never a silent fallback).
 */
export interface FunctionUses {
  /** Calls the chat model (`deps.model`): the one `loadModel` builds (Bedrock, OpenAI-compatible or offline). */
  model: boolean;
  /** Runs tools: `deps.search` (the chunk index, opened at cold start) and `deps.tools` (`search`, `read`). */
  tools: boolean;
  /**
   * Uses the projections (`deps.projections`: counters, budgets; `deps.idempotency`): DynamoDB
   * with `CLD_BUCKET` and `CLD_TABLE`, the local store and layer without `CLD_BUCKET`.
   */
  table: boolean;
}

/** What an unknown function, `local` or no `CLD_FUNCTION` gets: everything (the embedded default). */
export const EVERYTHING: Readonly<FunctionUses> = { model: true, tools: true, table: true };

/**
 * What each function uses, from its code path: plan and assistant call the model (shared/domain/
 * plan.ts, assistant.ts); only the tool step reads `deps.search` and `deps.tools`
 * (shared/domain/tool.ts) — the assistant elects assistants by `deps.embedder` over the catalog,
 * not by the chunk index; counters and budgets are the plan and assistant steps', idempotency the
 * reply step's, and the dead-letter step counts the failed task's output. `model` and `table`
 * agree with the function table's `model` and `table` (infra/lib/functions.ts; asserted by
 * test/infra/bundles.test.ts), which grant `CLD_MODEL_ID` and `CLD_TABLE`.
 */
export const FUNCTION_USES: Readonly<Record<string, Readonly<FunctionUses>>> = {
  plan: { model: true, tools: false, table: true },
  assistant: { model: true, tools: false, table: true },
  tool: { model: false, tools: true, table: false },
  reply: { model: false, tools: false, table: true },
  // The HTTP API records each user Message in the conversations-per-user projection and opens the
  // conversation in the open-conversations one (issue 15).
  http: { model: false, tools: false, table: true },
  slack: { model: false, tools: false, table: false },
  teams: { model: false, tools: false, table: false },
  deadletter: { model: false, tools: false, table: true },
  sweeper: { model: false, tools: false, table: true },
};

/** What function `name` uses ({@link FUNCTION_USES}; {@link EVERYTHING} for others and undefined). */
export function functionUses(name: string | undefined): Readonly<FunctionUses> {
  if (name !== undefined && Object.hasOwn(FUNCTION_USES, name)) return FUNCTION_USES[name] ?? EVERYTHING;
  return EVERYTHING;
}

/**
 * Build-time constants of a function bundle: the expressions {@link bundleDefines} has esbuild's
 * `define` (infra/lib/bundling.ts) replace with string literals. A guard such as
 * `process.env.CLD_BUNDLE_MODEL !== 'false'` thereby becomes a constant, and the branch it guards
 * — with the modules only that branch `import()`s, and the AWS SDK clients those modules import —
 * is left out of the function's bundle. (An `import()` alone would not keep an SDK client from
 * loading at cold start: esbuild hoists a bundled module's imports of external packages to the
 * top of the bundle. The guards are written out at each branch because esbuild folds them there,
 * but does not inline a `const` holding them in a module that has imports.) Outside a bundle
 * (tsx, vitest) the variables are unset: every adapter is available and `CLD_FUNCTION` alone
 * decides.
 */
const BUNDLE_VARIABLES = {
  function: 'process.env.CLD_BUNDLE_FUNCTION',
  model: 'process.env.CLD_BUNDLE_MODEL',
  tools: 'process.env.CLD_BUNDLE_TOOLS',
  table: 'process.env.CLD_BUNDLE_TABLE',
} as const;

/** The function this code was bundled for (`process.env.CLD_BUNDLE_FUNCTION`); undefined outside a bundle. */
const BUNDLED_FUNCTION: string | undefined = process.env.CLD_BUNDLE_FUNCTION;

/**
 * esbuild `define` entries (expression → JSON literal) for the bundle of function `name`: its
 * name and, from {@link functionUses}, which adapters it keeps. Used by infra/lib/bundling.ts.
 */
export function bundleDefines(name: string): Record<string, string> {
  const uses = functionUses(name);
  return {
    [BUNDLE_VARIABLES.function]: JSON.stringify(name),
    [BUNDLE_VARIABLES.model]: JSON.stringify(String(uses.model)),
    [BUNDLE_VARIABLES.tools]: JSON.stringify(String(uses.tools)),
    [BUNDLE_VARIABLES.table]: JSON.stringify(String(uses.table)),
  };
}

function notUsed(fn: string | undefined, what: string): ConfigError {
  return new ConfigError(
    `${fn ?? 'this function'} does not use ${what} (shared/runtime/compose.ts FUNCTION_USES), so none was composed`,
  );
}

/** `deps.model` of a function that does not call the model. */
class UnusedChatModel implements ChatModel {
  readonly name = 'none';
  readonly #fn: string | undefined;
  constructor(fn: string | undefined) {
    this.#fn = fn;
  }
  converse(): Promise<ConverseResponse> {
    return Promise.reject(notUsed(this.#fn, 'the chat model'));
  }
}

/** `deps.search` of a function that does not run tools. */
class UnusedSearch implements ChunkSearch {
  readonly #fn: string | undefined;
  constructor(fn: string | undefined) {
    this.#fn = fn;
  }
  search(): Promise<SearchHit[]> {
    return Promise.reject(notUsed(this.#fn, 'the chunk index'));
  }
}

/**
 * Loads and builds the model for a config now (shared/llm/config.ts): Bedrock (client in
 * `AWS_REGION`), an OpenAI-compatible server, or the offline model.
 * @throws ConfigError when the code was bundled without the model adapters, when the model
 *   variables do not fit together, or for invalid adapter options
 */
export async function loadModel(env: Parameters<typeof modelConfigOf>[0]): Promise<ChatModel> {
  if (process.env.CLD_BUNDLE_MODEL !== 'false') {
    const config: ModelConfig = modelConfigOf(env);
    if (config.provider === 'offline') {
      const { OfflineChatModel } = await import('../llm/offline.js');
      return new OfflineChatModel();
    }
    if (config.provider === 'openai') {
      const { OpenAIChatModel } = await import('../llm/openai.js');
      const { provider: _provider, ...options } = config;
      return new OpenAIChatModel(options);
    }
    const { BedrockChatModel, createBedrockClient } = await import('../llm/bedrock.js');
    return new BedrockChatModel({
      client: createBedrockClient({ ...(config.region ? { region: config.region } : {}) }),
      modelId: config.modelId,
      ...(config.stepModels ? { stepModels: config.stepModels } : {}),
    });
  }
  throw notUsed(BUNDLED_FUNCTION, 'the chat model');
}

/**
 * The embedder for a config: Bedrock Titan Text Embeddings V2 through `InvokeModel` when
 * `CLD_EMBEDDING_MODEL_ID` is set (client in `AWS_REGION`), otherwise the offline
 * {@link HashingEmbedder}. The stack sets no embedding model, so deployed functions stay lexical
 * (their roles may invoke only the chat model).
 * @throws ConfigError when an embedding model is set and the code was bundled without the model adapters
 */
export async function embedderFor(
  env: Pick<Env, 'CLD_EMBEDDING_MODEL_ID' | 'AWS_REGION'>,
): Promise<Embedder> {
  if (!env.CLD_EMBEDDING_MODEL_ID) return new HashingEmbedder();
  if (process.env.CLD_BUNDLE_MODEL !== 'false') {
    const [{ BedrockEmbedder }, { createBedrockClient }] = await Promise.all([
      import('../llm/bedrock-embedder.js'),
      import('../llm/bedrock.js'),
    ]);
    return new BedrockEmbedder({
      client: createBedrockClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) }),
      modelId: env.CLD_EMBEDDING_MODEL_ID,
    });
  }
  throw notUsed(BUNDLED_FUNCTION, 'the embedding model');
}

/**
 * The model for a config, for the CLI (synchronous): named now (`offline`, `bedrock:<id>` or
 * `openai:<id>`, as the adapters name themselves), loaded by {@link loadModel} at its first
 * `converse`, whose errors that call rejects with.
 * @throws ConfigError when the model variables do not fit together
 */
export function modelFor(env: Env): ChatModel {
  const name = modelNameOf(modelConfigOf(env));
  let loaded: Promise<ChatModel> | undefined;
  return {
    name,
    converse: async (request) => {
      loaded ??= loadModel(env);
      return (await loaded).converse(request);
    },
  };
}

/**
 * The projection store and idempotency layer for a config and what the function uses: for a
 * function that uses the projections, DynamoDB (one client for both) when `CLD_BUCKET` and
 * `CLD_TABLE` are set; with `CLD_BUCKET` alone ones that fail with a ConfigError naming
 * `CLD_TABLE` when used; otherwise the local store and layer persisted under
 * `<CLD_DATA_DIR>/projections`. A function that does not use them (the tool step, the HTTP,
 * Slack and Teams functions, to which the stack grants no table) gets the failing ones in every
 * mode.
 * @throws ConfigError when `uses.table` and the code was bundled without the projections adapters
 */
export async function projectionsFor(
  env: Env,
  uses: Readonly<FunctionUses> = EVERYTHING,
): Promise<{
  projections: ProjectionStore;
  idempotency: BasePersistenceLayer;
  openConversations?: OpenConversationStore;
  userConversations?: UserConversationStore;
}> {
  if (process.env.CLD_BUNDLE_TABLE !== 'false' && uses.table) {
    if (env.CLD_BUCKET && env.CLD_TABLE) {
      const [
        { createDynamoDBClient, DynamoDBProjectionStore },
        { dynamoDBIdempotencyLayer },
        { DynamoDBOpenConversationStore },
        { DynamoDBUserConversationStore },
      ] = await Promise.all([
        import('../projections/dynamodb.js'),
        import('../projections/idempotency.js'),
        import('../projections/open-conversations-dynamodb.js'),
        import('../projections/user-conversations-dynamodb.js'),
      ]);
      const client = createDynamoDBClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
      return {
        projections: new DynamoDBProjectionStore({ client, tableName: env.CLD_TABLE }),
        idempotency: dynamoDBIdempotencyLayer({ client, tableName: env.CLD_TABLE }),
        openConversations: new DynamoDBOpenConversationStore({ client, tableName: env.CLD_TABLE }),
        userConversations: new DynamoDBUserConversationStore({ client, tableName: env.CLD_TABLE }),
      };
    }
    if (!env.CLD_BUCKET) {
      const { LocalPersistenceLayer } = await import('../projections/idempotency.js');
      const dir = join(env.CLD_DATA_DIR, 'projections');
      return {
        projections: new LocalProjectionStore(dir),
        idempotency: new LocalPersistenceLayer(dir),
        openConversations: new LocalOpenConversationStore(dir),
        userConversations: new LocalUserConversationStore(dir),
      };
    }
  } else if (uses.table) {
    throw notUsed(BUNDLED_FUNCTION, 'the projections');
  }
  return { projections: new UnconfiguredProjectionStore(), idempotency: new UnconfiguredPersistenceLayer() };
}

/**
 * The chunk index on `indexStorage` (`sharded`: its shard pack, read from the first search on;
 * `whole`: the whole newest generation, loaded now) and the tool implementations.
 * @throws ConfigError when the code was bundled without them
 */
async function loadTools(
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
      import('../search/minisearch-index.js'),
      import('../search/sharded-index.js'),
      import('../tools/search.js'),
      import('../tools/read.js'),
      import('../tools/graph.js'),
      import('../graph/graph-index.js'),
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
    const [{ McpSessions }, { sdkConnector, loadSecretsProvider }] = await Promise.all([
      import('../tools/mcp/execute.js'),
      import('../tools/mcp/client.js'),
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

async function defaultIdempotency(): Promise<BasePersistenceLayer> {
  if (process.env.CLD_BUNDLE_TABLE !== 'false') {
    const { LocalPersistenceLayer } = await import('../projections/idempotency.js');
    return new LocalPersistenceLayer();
  }
  return new UnconfiguredPersistenceLayer();
}

/**
 * Builds Deps from the environment (Lambda cold start), composing only what `CLD_FUNCTION`
 * uses ({@link functionUses}).
 * @throws ConfigError for an invalid variable, a tokenizer ranks file that does not exist,
 *   a `CLD_FUNCTION` other than the function the code was bundled for, or a policy bundle that
 *   does not load
 */
export async function composeFromEnv(environment: NodeJS.ProcessEnv = process.env): Promise<Deps> {
  const { env, limits, toolApproval } = parseSettings(environment);
  if (
    BUNDLED_FUNCTION !== undefined &&
    env.CLD_FUNCTION !== undefined &&
    env.CLD_FUNCTION !== BUNDLED_FUNCTION
  )
    throw new ConfigError(`CLD_FUNCTION is ${env.CLD_FUNCTION}, but this is the ${BUNDLED_FUNCTION} bundle`);
  const fn = env.CLD_FUNCTION ?? BUNDLED_FUNCTION;
  const uses = functionUses(fn);
  const ranks = tokenizerRanksFile(env);
  if (ranks !== undefined && !existsSync(ranks))
    throw new ConfigError(
      `tokenizer ranks ${ranks} do not exist (${TOKENIZER_RANKS_ENV}, shared/context/tokens.ts)`,
    );
  const logger = new Logger({
    serviceName: 'cld',
    ...(env.POWERTOOLS_LOG_LEVEL ? { logLevel: env.POWERTOOLS_LOG_LEVEL } : {}),
  });
  const selected = await selectPolicy({
    policyDir: env.CLD_POLICY_DIR,
    wasmDir: env.CLD_POLICY_WASM_DIR,
    function: env.CLD_FUNCTION,
  });
  const policy = selected.policy;
  logger.info('policy loaded', {
    engine: policy.engine,
    function: env.CLD_FUNCTION ?? 'all',
    rules: selected.rules,
    ...(selected.wasm ? { wasm: selected.wasm } : {}),
  });
  if (env.CLD_BUCKET && !env.CLD_FUNCTION) {
    logger.warn('CLD_FUNCTION is not set: every rule of every function applies');
  }
  const [model, projections, embedder] = await Promise.all([
    uses.model ? loadModel(env) : new UnusedChatModel(fn),
    projectionsFor(env, uses),
    embedderFor(env),
  ]);
  const mcp = uses.tools ? await mcpFor(env) : undefined;
  const common = {
    ...(mcp ? { mcp } : {}),
    model,
    limits,
    logger,
    ...projections,
    policy,
    uses,
    embedder,
    toolApproval,
    ...(fn ? { function: fn } : {}),
    // A function's cold start reads the shard pack; the CLI (`CLD_FUNCTION=local`, e.g. `ingest`
    // into the deployed bucket) extends the whole generation, which only MiniSearchIndex can.
    chunkIndex: env.CLD_FUNCTION === 'local' ? ('whole' as const) : ('sharded' as const),
  };
  if (env.CLD_BUCKET) {
    // Loaded only with a bucket: the CLI's settings path (cli/settings.ts) imports this file.
    const { createS3Client, S3Storage } = await import('../storage/s3.js');
    const client = createS3Client({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
    const storage = new S3Storage({ client, bucket: env.CLD_BUCKET });
    return assembleDeps({ storage, indexStorage: storage, ...common });
  }
  const root = env.CLD_DATA_DIR;
  return assembleDeps({
    storage: new FilesystemStorage(join(root, 'resources')),
    indexStorage: new FilesystemStorage(root),
    ...common,
  });
}

/**
 * Memoises a cold start's composition: `compose` runs at the first call, and its promise is
 * shared by every later call once it resolves (or while it is pending). A rejected composition
 * is forgotten, so the next call composes again: a transient failure at a cold start (a
 * throttled or unreachable adapter, a policy bundle read that failed) is retried by the next
 * invocation instead of failing every invocation for the rest of the execution environment's life.
 */
export function memoiseComposition<T>(compose: () => Promise<T>): () => Promise<T> {
  let composed: Promise<T> | undefined;
  return () => {
    composed ??= compose().catch((error: unknown) => {
      composed = undefined;
      throw error;
    });
    return composed;
  };
}

let provided: Deps | undefined;
const composeOnce = memoiseComposition(() => composeFromEnv());

/** Used by the local runtime: the functions' handlers use these Deps instead of composing from env. */
export function provideDeps(deps: Deps | undefined): void {
  provided = deps;
}

/**
 * The Deps of this process: provided by the local runtime, or composed from env once
 * ({@link memoiseComposition}: kept once composed; a failed composition is retried by the next call).
 * @throws what {@link composeFromEnv} throws, at every call until a composition succeeds
 */
export function getDeps(): Promise<Deps> {
  if (provided) return Promise.resolve(provided);
  return composeOnce();
}
