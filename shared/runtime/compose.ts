import { join } from 'node:path';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';
import { defaultCatalog } from '../catalog/catalog.js';
import { type Limits, LimitsSchema } from '../domain/limits.js';
import { ConfigError } from '../errors.js';
import { BedrockChatModel, createBedrockClient } from '../llm/bedrock.js';
import { OfflineChatModel } from '../llm/offline.js';
import type { ChatModel } from '../llm/port.js';
import type { Actor, Policy } from '../policy/port.js';
import { builtinPolicy, selectPolicy } from '../policy/select.js';
import { createDynamoDBClient, DynamoDBProjectionStore } from '../projections/dynamodb.js';
import { dynamoDBIdempotencyLayer, LocalPersistenceLayer } from '../projections/idempotency.js';
import { LocalProjectionStore } from '../projections/local.js';
import type { ProjectionStore } from '../projections/port.js';
import { UnconfiguredPersistenceLayer, UnconfiguredProjectionStore } from '../projections/unconfigured.js';
import { ResourceIndex } from '../resources/resource-index.js';
import { MiniSearchIndex } from '../search/minisearch-index.js';
import { HashingEmbedder } from '../search/similarity.js';
import { FilesystemStorage } from '../storage/filesystem.js';
import type { StorageInterface } from '../storage/port.js';
import { createS3Client, S3Storage } from '../storage/s3.js';
import { readTool } from '../tools/read.js';
import { searchTool } from '../tools/search.js';
import type { Deps } from './deps.js';

/**
 * Composition roots. Config is parsed once, at init, with zod: a bad variable fails the cold
 * start with its name. With `CLD_BUCKET` set the adapters are AWS's (S3, Bedrock when
 * `CLD_MODEL_ID` is set); without it, the embedded default (filesystem under `CLD_DATA_DIR`).
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
  /** Bedrock model id or inference profile; absent → the offline model. */
  CLD_MODEL_ID: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).optional(),
  /** Limits as JSON (see domain/limits.ts); absent → defaults. */
  CLD_LIMITS: z.string().optional(),
  POWERTOOLS_LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT']).optional(),
  /** Directory of the function's policy bundle: `rules.json`, `<CLD_FUNCTION>.wasm` when built (shared/policy/select.ts). */
  CLD_POLICY_DIR: z.string().min(1).optional(),
  /** Function whose policy applies (`plan`, `assistant`, `tool`, `http`, `slack`, `teams`, `reply`, `local`); absent → every rule. */
  CLD_FUNCTION: z
    .string()
    .regex(/^[a-z][a-z0-9-]*$/, 'a function name such as plan')
    .optional(),
  /** Directory of compiled policy bundles overriding CLD_POLICY_DIR for `.wasm` files (e.g. policies/dist). */
  CLD_POLICY_WASM_DIR: z.string().min(1).optional(),
});
export type Env = z.infer<typeof EnvSchema>;

/** The operator actor: seeds the catalog, ingests corpora, reads anything (CLI show). */
export const SYSTEM_ACTOR: Actor = { kind: 'system', id: 'operator' };

/** Parses the environment. @throws ConfigError naming the bad variable */
export function parseEnv(env: NodeJS.ProcessEnv): Env {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(`invalid configuration: ${z.prettifyError(parsed.error)}`);
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

/** The model for a config: Bedrock when a model id is configured, otherwise offline. */
export function modelFor(env: Env): ChatModel {
  if (!env.CLD_MODEL_ID) return new OfflineChatModel();
  return new BedrockChatModel({
    client: createBedrockClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) }),
    modelId: env.CLD_MODEL_ID,
  });
}

/**
 * The projection store and idempotency layer for a config: DynamoDB (one client for both) when
 * `CLD_BUCKET` and `CLD_TABLE` are set; with `CLD_BUCKET` alone (a function the stack grants no
 * table, such as the tool step) ones that fail with a ConfigError naming `CLD_TABLE` when used;
 * otherwise the local store and layer persisted under `<CLD_DATA_DIR>/projections`.
 */
export function projectionsFor(env: Env): {
  projections: ProjectionStore;
  idempotency: BasePersistenceLayer;
} {
  if (env.CLD_BUCKET && env.CLD_TABLE) {
    const client = createDynamoDBClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
    return {
      projections: new DynamoDBProjectionStore({ client, tableName: env.CLD_TABLE }),
      idempotency: dynamoDBIdempotencyLayer({ client, tableName: env.CLD_TABLE }),
    };
  }
  if (env.CLD_BUCKET)
    return {
      projections: new UnconfiguredProjectionStore(),
      idempotency: new UnconfiguredPersistenceLayer(),
    };
  const dir = join(env.CLD_DATA_DIR, 'projections');
  return { projections: new LocalProjectionStore(dir), idempotency: new LocalPersistenceLayer(dir) };
}

/** Shared assembly of Deps from a storage (with or without notifications) and an index storage. */
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
  now?: () => Date;
  /** Policy gate of every get/list/put; default: the built-in evaluator over every rule. */
  policy?: Policy;
}): Promise<Deps> {
  const resources = new ResourceIndex(options.storage, options.policy ?? builtinPolicy());
  const catalog = defaultCatalog();
  for (const resource of [...catalog.assistants, ...catalog.tools])
    await resources.put(SYSTEM_ACTOR, resource);
  const search = await MiniSearchIndex.open(options.indexStorage);
  return {
    resources,
    model: options.model,
    embedder: new HashingEmbedder(),
    search,
    tools: new Map([searchTool, readTool].map((tool) => [tool.name, tool])),
    catalog,
    limits: options.limits,
    projections: options.projections ?? new LocalProjectionStore(),
    idempotency: options.idempotency ?? new LocalPersistenceLayer(),
    logger: options.logger,
    now: options.now ?? (() => new Date()),
  };
}

/** Builds Deps from the environment (Lambda cold start). @throws ConfigError */
export async function composeFromEnv(environment: NodeJS.ProcessEnv = process.env): Promise<Deps> {
  const env = parseEnv(environment);
  const logger = new Logger({
    serviceName: 'cld',
    ...(env.POWERTOOLS_LOG_LEVEL ? { logLevel: env.POWERTOOLS_LOG_LEVEL } : {}),
  });
  const limits = parseLimits(env.CLD_LIMITS);
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
  if (env.CLD_BUCKET) {
    const client = createS3Client({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
    const storage = new S3Storage({ client, bucket: env.CLD_BUCKET });
    return assembleDeps({
      storage,
      indexStorage: storage,
      model: modelFor(env),
      limits,
      logger,
      ...projectionsFor(env),
      policy,
    });
  }
  const root = env.CLD_DATA_DIR;
  return assembleDeps({
    storage: new FilesystemStorage(join(root, 'resources')),
    indexStorage: new FilesystemStorage(root),
    model: modelFor(env),
    limits,
    logger,
    ...projectionsFor(env),
    policy,
  });
}

let provided: Deps | undefined;
let composed: Promise<Deps> | undefined;

/** Used by the local runtime: the functions' handlers use these Deps instead of composing from env. */
export function provideDeps(deps: Deps | undefined): void {
  provided = deps;
}

/** The Deps of this process: provided by the local runtime, or composed from env once (memoised). */
export function getDeps(): Promise<Deps> {
  if (provided) return Promise.resolve(provided);
  composed ??= composeFromEnv();
  return composed;
}
