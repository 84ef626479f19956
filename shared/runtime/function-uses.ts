import { ConfigError } from '../errors.js';

/*
 * Which function uses which adapters, and the esbuild defines that let each function's bundle
 * leave out the adapters it does not use. A function composes only what its code path uses
 * ({@link FUNCTION_USES}, keyed by `CLD_FUNCTION`): the adapters it does not use are loaded with
 * `import()` only on the branches that use them (shared/runtime/adapters/), so the cold start of
 * a function never evaluates them, and its bundle leaves them out altogether (see
 * {@link BUNDLED_FUNCTION}). This module imports nothing else: infra/lib/bundling.ts imports it.
 */

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
export const BUNDLED_FUNCTION: string | undefined = process.env.CLD_BUNDLE_FUNCTION;

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

/**
 * The error of a Deps member (or an adapter factory) that function `fn` does not use: a bug in
 * {@link FUNCTION_USES}, never a silent fallback.
 */
export function notUsed(fn: string | undefined, what: string): ConfigError {
  return new ConfigError(
    `${fn ?? 'this function'} does not use ${what} (shared/runtime/function-uses.ts FUNCTION_USES), so none was composed`,
  );
}
