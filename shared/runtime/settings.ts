import * as z from 'zod';
import { parseToolApproval, type ToolApproval } from '../catalog/catalog.js';
import type { TOKENIZER_RANKS_ENV } from '../context/tokens.js';
import { type Limits, LimitsSchema } from '../domain/limits.js';
import { ConfigError } from '../errors.js';
import { ModelEnvShape, modelConfigOf } from '../llm/config.js';

/**
 * The settings of the functions and of every CLI command, parsed once, at init, with zod: a bad
 * variable fails the cold start (or the command, exit code 2) with its name. This module loads no
 * adapter: the CLI's read-only commands (`show`, `tools list`, `approvals list`) import it alone.
 *
 * The environment variables. With `CLD_BUCKET` set the adapters are AWS's (S3, Bedrock when
 * `CLD_MODEL_ID` is set, DynamoDB when `CLD_TABLE` is set); without it, the embedded default
 * (filesystem under `CLD_DATA_DIR`); the composition root is shared/runtime/compose.ts.
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
   * exist at init. (Named here as a literal, checked against `TOKENIZER_RANKS_ENV` below, so that
   * parsing the settings does not load the tokenizer.)
   */
  CLD_TOKENIZER_RANKS: z.string().min(1).optional(),
  /** MCP servers as a JSON array (shared/tools/mcp/config.ts); the stack sets it on the tool function from the CDK context. */
  CLD_MCP_SERVERS: z.string().min(1).optional(),
  /** A JSON file of MCP servers, the same format (local use; not with CLD_MCP_SERVERS). */
  CLD_MCP_CONFIG: z.string().min(1).optional(),
});
export type Env = z.infer<typeof EnvSchema>;
// The tokenizer's variable is the one shared/context/tokens.ts reads.
const ranksVariable: typeof TOKENIZER_RANKS_ENV = 'CLD_TOKENIZER_RANKS';
void ranksVariable;

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
