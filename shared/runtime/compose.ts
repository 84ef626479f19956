import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { TOKENIZER_RANKS_ENV, tokenizerRanksFile } from '../context/tokens.js';
import type { Deps } from '../domain/ports.js';
import { ConfigError } from '../errors.js';
import { selectPolicy } from '../policy/select.js';
import { FilesystemStorage } from '../storage/filesystem.js';
import { embedderFor, loadModel, UnusedChatModel } from './adapters/model.js';
import { projectionsFor } from './adapters/projections.js';
import { mcpFor } from './adapters/tools.js';
import { assembleDeps } from './assemble.js';
import { BUNDLED_FUNCTION, functionUses } from './function-uses.js';
import { parseSettings } from './settings.js';

/*
 * The composition root of the functions: Deps from the environment, once per cold start. The
 * settings are shared/runtime/settings.ts, what each function uses shared/runtime/function-uses.ts,
 * the adapter factories shared/runtime/adapters/, the assembly shared/runtime/assemble.ts.
 */

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
