import * as z from 'zod';
import { ConfigError } from '../errors.js';
import { type StepModels, stepModelsOf } from './steps.js';

/**
 * Which chat model a process uses, from its environment (parsed once, at init): the offline
 * model, Bedrock Runtime `Converse`, or an OpenAI-compatible `/chat/completions` server
 * (shared/llm/openai.ts). The adapters themselves are loaded by shared/runtime/adapters/model.ts.
 *
 * | variable | meaning |
 * |---|---|
 * | `CLD_MODEL_PROVIDER` | `offline`, `bedrock` or `openai`; default `bedrock` when `CLD_MODEL_ID` is set, else `offline` |
 * | `CLD_MODEL_ID` | Bedrock model / inference-profile id, or the model name the OpenAI-compatible server knows |
 * | `CLD_OPENAI_BASE_URL` | base URL before `/chat/completions`, e.g. `http://127.0.0.1:11434/v1` (required for `openai`) |
 * | `CLD_OPENAI_API_KEY` | optional bearer token |
 * | `CLD_OPENAI_TIMEOUT_MS` | optional time one HTTP attempt may take (default 120000) |
 * | `CLD_MODELS` | optional model per step as JSON, `{"plan","assistant","answer","judge"}` (shared/llm/steps.ts) |
 * | `CLD_MODEL_ID_PLAN`, `_ASSISTANT`, `_ANSWER`, `_JUDGE` | optional model of one step; wins over `CLD_MODELS` |
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
  /** Model per step as JSON, e.g. `{"plan":"…","judge":"…"}`; steps left out use `CLD_MODEL_ID`. */
  CLD_MODELS: z.string().optional(),
  /** Model of the planner (`create_plan`); wins over `CLD_MODELS.plan`. */
  CLD_MODEL_ID_PLAN: z.string().min(1).optional(),
  /** Model of an inner-loop turn before any tool result; wins over `CLD_MODELS.assistant`. */
  CLD_MODEL_ID_ASSISTANT: z.string().min(1).optional(),
  /** Model of an inner-loop turn after tool results (the answer); wins over `CLD_MODELS.answer`. */
  CLD_MODEL_ID_ANSWER: z.string().min(1).optional(),
  /** Model of the supervisor's verdict; wins over `CLD_MODELS.judge`. */
  CLD_MODEL_ID_JUDGE: z.string().min(1).optional(),
} as const;

/** The variables {@link modelConfigOf} reads. */
export type ModelEnv = {
  [K in keyof typeof ModelEnvShape]?: z.infer<(typeof ModelEnvShape)[K]> | undefined;
} & { AWS_REGION?: string | undefined };

/** The model a process uses. */
export type ModelConfig =
  | { provider: 'offline' }
  | { provider: 'bedrock'; modelId: string; region?: string; stepModels?: StepModels }
  | {
      provider: 'openai';
      baseUrl: string;
      modelId: string;
      apiKey?: string;
      timeoutMs?: number;
      stepModels?: StepModels;
    };

/**
 * Resolves the model configuration of parsed variables.
 * @throws ConfigError naming `CLD_MODELS` when it is not valid, or naming the missing variable (`CLD_MODEL_ID` for `bedrock`/`openai`,
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
  const steps = stepModelsOf(env);
  const stepModels = Object.keys(steps).length > 0 ? { stepModels: steps } : {};
  if (provider === 'bedrock')
    return {
      provider,
      modelId: env.CLD_MODEL_ID,
      ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
      ...stepModels,
    };
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
    ...stepModels,
  };
}

/** The name the adapter of `config` gives itself: `offline`, `bedrock:<id>` or `openai:<id>`. */
export function modelNameOf(config: ModelConfig): string {
  return config.provider === 'offline' ? 'offline' : `${config.provider}:${config.modelId}`;
}
