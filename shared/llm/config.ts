import * as z from 'zod';
import { ConfigError } from '../errors.js';

/**
 * Which chat model a process uses, from its environment (parsed once, at init): the offline
 * model, Bedrock Runtime `Converse`, or an OpenAI-compatible `/chat/completions` server
 * (shared/llm/openai.ts). The adapters themselves are loaded by shared/runtime/compose.ts.
 *
 * | variable | meaning |
 * |---|---|
 * | `CLD_MODEL_PROVIDER` | `offline`, `bedrock` or `openai`; default `bedrock` when `CLD_MODEL_ID` is set, else `offline` |
 * | `CLD_MODEL_ID` | Bedrock model / inference-profile id, or the model name the OpenAI-compatible server knows |
 * | `CLD_OPENAI_BASE_URL` | base URL before `/chat/completions`, e.g. `http://127.0.0.1:11434/v1` (required for `openai`) |
 * | `CLD_OPENAI_API_KEY` | optional bearer token |
 * | `CLD_OPENAI_TIMEOUT_MS` | optional time one HTTP attempt may take (default 120000) |
 */
export const ModelEnvShape = {
  /** `offline`, `bedrock` or `openai`; absent → `bedrock` with `CLD_MODEL_ID`, else `offline`. */
  CLD_MODEL_PROVIDER: z.enum(['offline', 'bedrock', 'openai']).optional(),
  /** Bedrock model id or inference profile, or the OpenAI-compatible server's model name. */
  CLD_MODEL_ID: z.string().min(1).optional(),
  /** OpenAI-compatible base URL (before `/chat/completions`), e.g. `http://127.0.0.1:11434/v1`. */
  CLD_OPENAI_BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Optional bearer token for the OpenAI-compatible server. */
  CLD_OPENAI_API_KEY: z.string().min(1).optional(),
  /** Time (ms) one HTTP attempt to the OpenAI-compatible server may take. */
  CLD_OPENAI_TIMEOUT_MS: z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, 'a whole number of milliseconds, e.g. 120000')
    .optional(),
} as const;

/** The variables {@link modelConfigOf} reads. */
export type ModelEnv = {
  [K in keyof typeof ModelEnvShape]?: z.infer<(typeof ModelEnvShape)[K]> | undefined;
} & { AWS_REGION?: string | undefined };

/** The model a process uses. */
export type ModelConfig =
  | { provider: 'offline' }
  | { provider: 'bedrock'; modelId: string; region?: string }
  | { provider: 'openai'; baseUrl: string; modelId: string; apiKey?: string; timeoutMs?: number };

/**
 * Resolves the model configuration of parsed variables.
 * @throws ConfigError naming the missing variable (`CLD_MODEL_ID` for `bedrock`/`openai`,
 *   `CLD_OPENAI_BASE_URL` for `openai`) or the variable that does not fit the provider
 */
export function modelConfigOf(env: ModelEnv): ModelConfig {
  const provider = env.CLD_MODEL_PROVIDER ?? (env.CLD_MODEL_ID ? 'bedrock' : 'offline');
  if (provider !== 'openai' && env.CLD_OPENAI_BASE_URL)
    throw new ConfigError(
      `CLD_OPENAI_BASE_URL is set but the model provider is ${provider}: set CLD_MODEL_PROVIDER=openai to use it`,
    );
  if (provider === 'offline') return { provider };
  if (!env.CLD_MODEL_ID)
    throw new ConfigError(`CLD_MODEL_PROVIDER=${provider} needs CLD_MODEL_ID (the model to call)`);
  if (provider === 'bedrock')
    return { provider, modelId: env.CLD_MODEL_ID, ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) };
  if (!env.CLD_OPENAI_BASE_URL)
    throw new ConfigError(
      'CLD_MODEL_PROVIDER=openai needs CLD_OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)',
    );
  return {
    provider,
    baseUrl: env.CLD_OPENAI_BASE_URL,
    modelId: env.CLD_MODEL_ID,
    ...(env.CLD_OPENAI_API_KEY ? { apiKey: env.CLD_OPENAI_API_KEY } : {}),
    ...(env.CLD_OPENAI_TIMEOUT_MS ? { timeoutMs: Number(env.CLD_OPENAI_TIMEOUT_MS) } : {}),
  };
}

/** The name the adapter of `config` gives itself: `offline`, `bedrock:<id>` or `openai:<id>`. */
export function modelNameOf(config: ModelConfig): string {
  return config.provider === 'offline' ? 'offline' : `${config.provider}:${config.modelId}`;
}
