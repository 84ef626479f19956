/**
 * Model port shaped after the Bedrock Runtime Converse API
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
 * messages of content blocks (`text`, `toolUse`, `toolResult`), `toolConfig`, `stopReason`,
 * `usage`. The Bedrock adapter passes these through; the offline adapter answers them
 * deterministically without a network.
 */

/** A JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Content of a tool result (Converse `ToolResultContentBlock`, the text and json variants). */
export type ToolResultContent = { text: string } | { json: JsonValue };

/** Converse `ContentBlock`, the variants this system uses. */
export type ContentBlock =
  | { text: string }
  | { toolUse: { toolUseId: string; name: string; input: JsonValue } }
  | { toolResult: { toolUseId: string; content: ToolResultContent[]; status?: 'success' | 'error' } };

/** Converse `Message`. */
export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** Converse `ToolSpecification` inside `toolConfig.tools[].toolSpec`. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: { json: { [key: string]: JsonValue } };
}

/** Converse `ToolConfiguration`. */
export interface ToolConfig {
  tools: { toolSpec: ToolSpec }[];
  /** `{ auto: {} }` (default), `{ any: {} }` or `{ tool: { name } }` to force one tool. */
  toolChoice?: { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };
}

/**
 * The step of the system a model call serves, for the per-step model setting
 * (shared/llm/steps.ts): `plan` (the planner's `create_plan`), `assistant` (an inner-loop turn
 * before any tool result), `answer` (an inner-loop turn after tool results: usually the one that
 * writes the answer), `judge` (the supervisor's `submit_verdict`).
 */
export type ModelStep = 'plan' | 'assistant' | 'answer' | 'judge';

/**
 * Converse request. The model id is the request's own `modelId`, else the adapter's model for
 * `step` (its per-step setting), else the adapter's default.
 */
export interface ConverseRequest {
  modelId?: string;
  /** Which step sends this request; selects that step's model where one is configured. */
  step?: ModelStep;
  system?: { text: string }[];
  messages: ConverseMessage[];
  toolConfig?: ToolConfig;
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number };
}

/** Converse `StopReason`. */
export type StopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'stop_sequence'
  | 'guardrail_intervened'
  | 'content_filtered';

/** Converse response, the fields this system reads. */
export interface ConverseResponse {
  output: { message: ConverseMessage };
  stopReason: StopReason;
  /**
   * Tokens as the service bills them. With Bedrock prompt caching, `inputTokens` counts only the
   * tokens neither read from nor written to the cache; `cacheReadInputTokens` and
   * `cacheWriteInputTokens` (absent when the provider reports none) count the others.
   */
  usage: {
    inputTokens: number;
    outputTokens: number;
    totalTokens: number;
    cacheReadInputTokens?: number;
    cacheWriteInputTokens?: number;
  };
  /** Latency reported by the service, in milliseconds (0 offline). */
  metrics?: { latencyMs: number };
}

/** The port: a chat model with tool use, plus text embeddings for similarity. */
export interface ChatModel {
  /** Shown to the user: `offline` or `bedrock:<modelId>`. */
  readonly name: string;
  /**
   * One Converse call.
   * @throws ModelError (retryable for throttling/timeouts after the adapter's own retries)
   */
  converse(request: ConverseRequest): Promise<ConverseResponse>;
}

/** Text embeddings (the seeds' Vector service input). */
export interface Embedder {
  readonly name: string;
  /** One vector per text, all of the same length, L2-normalised. */
  embed(texts: readonly string[]): Promise<number[][]>;
}
