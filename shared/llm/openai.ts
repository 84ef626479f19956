/**
 * OpenAI-compatible adapter of the `ChatModel` port, for local and self-hosted servers that speak
 * the Chat Completions API with tools: Ollama (`http://127.0.0.1:11434/v1`), vLLM
 * (`http://127.0.0.1:8000/v1`), LM Studio (`http://127.0.0.1:1234/v1`), llama.cpp's server.
 *
 * API: `POST {baseUrl}/chat/completions`
 * (https://platform.openai.com/docs/api-reference/chat/create), JSON body `{ model, messages,
 * tools, tool_choice, max_tokens, temperature, top_p }`; the reply's `choices[0].message` carries
 * `content` and `tool_calls` (`{ id, type: "function", function: { name, arguments } }`, the
 * arguments a JSON **string**), `finish_reason` and `usage`.
 *
 * Mapping to the Converse shapes the steps use (shared/llm/port.ts):
 * - `system` → one `system` message; a user message's `text` blocks → a `user` message; its
 *   `toolResult` blocks → one `tool` message each (`tool_call_id` = `toolUseId`, content the
 *   result's text, JSON serialised), sent before the user's text;
 * - an assistant message's `toolUse` blocks → `tool_calls` (arguments = `JSON.stringify(input)`);
 * - `toolConfig.tools` → `tools: [{ type: "function", function: { name, description, parameters } }]`;
 *   `toolChoice` `auto` → `"auto"`, `any` → `"required"`, `tool` → `{ type: "function", function: { name } }`;
 * - reply `tool_calls` → `toolUse` blocks (`toolUseId` = call id, `input` = parsed arguments),
 *   `finish_reason` `stop`/`length`/`content_filter` → `end_turn`/`max_tokens`/`content_filtered`;
 *   a reply with tool calls is `tool_use` whatever its finish reason (Ollama says `stop`).
 *
 * HTTP is Node's global `fetch` (undici). Each attempt has its own timeout (headers and body);
 * throttling (429), server errors (5xx), timeouts and network failures are retried with jittered
 * exponential backoff, honouring a `Retry-After` of up to {@link MAX_RETRY_AFTER_MS}.
 */
import * as z from 'zod';
import { countTokens } from '../context/tokens.js';
import { ConfigError, ModelError } from '../errors.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseMessage,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
  StopReason,
  ToolConfig,
  ToolResultContent,
} from './port.js';
import { modelIdOf, type StepModels, StepModelsSchema } from './steps.js';

/** Attempts per call (first try included) when nothing else is configured. */
export const DEFAULT_OPENAI_MAX_ATTEMPTS = 3;
/** Default time (ms) one attempt may take, response body included: local models can be slow. */
export const DEFAULT_OPENAI_TIMEOUT_MS = 120_000;
/** Default base of the exponential backoff (ms): attempt n waits up to base·2^(n-1), jittered. */
export const DEFAULT_OPENAI_BACKOFF_MS = 500;
/** Longest `Retry-After` (ms) honoured; a longer one gives up at once (still retryable later). */
export const MAX_RETRY_AFTER_MS = 20_000;
/** Characters of a malformed tool-call `arguments` string quoted in the error message. */
export const ARGUMENTS_PREVIEW_CHARS = 200;

/** Options of {@link OpenAIChatModel}. */
export interface OpenAIChatModelOptions {
  /**
   * Base URL of the API, the part before `/chat/completions`, e.g. `http://127.0.0.1:11434/v1`
   * (Ollama). http or https.
   */
  baseUrl: string;
  /** Model name the server knows, e.g. `qwen2.5:7b-instruct`; a request's own `modelId` wins. */
  modelId: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given (vLLM `--api-key`, hosted gateways). */
  apiKey?: string;
  /** HTTP attempts per call, first try included (integer ≥ 1); default 3. */
  maxAttempts?: number;
  /** Time one attempt may take, in ms (integer ≥ 1); default {@link DEFAULT_OPENAI_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Backoff base in ms (integer ≥ 0); default {@link DEFAULT_OPENAI_BACKOFF_MS}. */
  backoffMs?: number;
  /** The `fetch` to use; default the global one. */
  fetch?: typeof fetch;
  /** A model name per step (shared/llm/steps.ts); a request's own `modelId` wins, then its step's. */
  stepModels?: StepModels;
}

const OptionsSchema = z.object({
  baseUrl: z.url({ protocol: /^https?$/ }),
  modelId: z.string().trim().min(1),
  apiKey: z.string().min(1).optional(),
  maxAttempts: z.number().int().min(1).max(10).optional(),
  timeoutMs: z.number().int().min(1).optional(),
  backoffMs: z.number().int().min(0).optional(),
  stepModels: StepModelsSchema.optional(),
});

/**
 * `ChatModel` backed by an OpenAI-compatible `POST /chat/completions` (see the module docs for
 * the mapping). Responses are validated with zod before they reach the domain.
 *
 * Errors (all `ModelError`, `details` = `{ modelId, exception, httpStatusCode?, attempts,
 * maxAttempts, ... }`, with `exception` named as the Bedrock adapter names the same failure):
 * - retryable: `true` — still failing after the retries: HTTP 429 (`ThrottlingException`), 5xx
 *   (`InternalServerException`, `ServiceUnavailableException`), an attempt over its timeout
 *   (`TimeoutError`), a network failure (`NetworkError`, e.g. connection refused);
 * - retryable: `false` — the server rejected the request (400 `ValidationException`, 401/403
 *   `AccessDeniedException`, 404 `ResourceNotFoundException`, other 4xx), or answered a body
 *   that is not JSON or fails the schema (`details.issues`), or a tool call whose `arguments`
 *   are not a JSON object (`MalformedToolCall`: the message names the tool and call id and
 *   quotes the start of the arguments; `details.arguments` keeps them whole). A non-retryable
 *   error fails the task with that message (shared/domain/assistant.ts).
 */
export class OpenAIChatModel implements ChatModel {
  /** `openai:<modelId>`. */
  readonly name: string;
  readonly #url: string;
  readonly #modelId: string;
  readonly #apiKey: string | undefined;
  readonly #maxAttempts: number;
  readonly #timeoutMs: number;
  readonly #backoffMs: number;
  readonly #fetch: typeof fetch;
  readonly #stepModels: StepModels;

  /** @throws ConfigError for a base URL that is not http(s), an empty model id, out-of-range numbers */
  constructor(options: OpenAIChatModelOptions) {
    const { fetch: fetchImpl, ...rest } = options;
    const parsed = OptionsSchema.safeParse(rest);
    if (!parsed.success)
      throw new ConfigError(`invalid OpenAI-compatible model options: ${z.prettifyError(parsed.error)}`);
    this.#url = `${parsed.data.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.#modelId = parsed.data.modelId;
    this.#apiKey = parsed.data.apiKey;
    this.#maxAttempts = parsed.data.maxAttempts ?? DEFAULT_OPENAI_MAX_ATTEMPTS;
    this.#timeoutMs = parsed.data.timeoutMs ?? DEFAULT_OPENAI_TIMEOUT_MS;
    this.#backoffMs = parsed.data.backoffMs ?? DEFAULT_OPENAI_BACKOFF_MS;
    this.#fetch = fetchImpl ?? fetch;
    this.#stepModels = { ...(parsed.data.stepModels as StepModels | undefined) };
    this.name = `openai:${parsed.data.modelId}`;
  }

  /**
   * One chat completion (to the request's `modelId`, else its step's model, else the default),
   * retried on 429, 5xx, timeouts and network failures.
   * @returns the reply as a Converse response; `metrics.latencyMs` = wall time of the last attempt
   * @throws ModelError see the class docs
   */
  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const modelId = modelIdOf(request, this.#modelId, this.#stepModels);
    const body = JSON.stringify(toChatRequest(modelId, request));
    let failure: AttemptFailure | undefined;
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      if (failure) await sleep(this.#delayBefore(attempt, failure.retryAfterMs));
      const started = Date.now();
      const result = await this.#attempt(body);
      if (result.ok) return parseChatResponse(result.json, modelId, request, Date.now() - started, attempt);
      failure = result;
      if (!failure.retryable) break;
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > MAX_RETRY_AFTER_MS) break;
    }
    throw this.#toModelError(failure as AttemptFailure, modelId);
  }

  #delayBefore(attempt: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return retryAfterMs;
    const ceiling = this.#backoffMs * 2 ** (attempt - 2);
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  async #attempt(body: string): Promise<AttemptResult> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.#timeoutMs);
    try {
      const response = await this.#fetch(this.#url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          ...(this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {}),
        },
        body,
        signal: controller.signal,
      });
      const text = await response.text();
      if (response.ok) {
        try {
          return { ok: true, json: JSON.parse(text) as unknown };
        } catch (error) {
          return {
            ok: false,
            retryable: false,
            exception: 'SerializationException',
            status: response.status,
            message: `the body is not JSON (${(error as Error).message}): ${preview(text)}`,
          };
        }
      }
      const status = response.status;
      return {
        ok: false,
        retryable: status === 429 || status >= 500,
        exception: exceptionOf(status),
        status,
        message: errorMessageOf(text),
        retryAfterMs: retryAfterOf(response.headers.get('retry-after')),
      };
    } catch (error) {
      if (controller.signal.aborted)
        return {
          ok: false,
          retryable: true,
          exception: 'TimeoutError',
          message: `no complete response within ${this.#timeoutMs} ms`,
        };
      const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
      const code = typeof cause?.code === 'string' ? cause.code : undefined;
      return {
        ok: false,
        retryable: true,
        exception: 'NetworkError',
        message: `${(error as Error).message}${code ? ` (${code})` : ''}`,
        cause: error,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  #toModelError(failure: AttemptFailure, modelId: string): ModelError {
    const details = {
      modelId,
      url: this.#url,
      exception: failure.exception,
      httpStatusCode: failure.status,
      attempts: failure.attempts ?? this.#attemptsOf(failure),
      maxAttempts: this.#maxAttempts,
    };
    const status = failure.status === undefined ? '' : `HTTP ${failure.status} `;
    if (failure.retryable) {
      const n = details.attempts;
      return new ModelError(
        `OpenAI-compatible model ${modelId} failed after ${n} attempt${n === 1 ? '' : 's'}: ${status}${failure.exception}: ${failure.message}`,
        { retryable: true, cause: failure.cause, details },
      );
    }
    if (failure.status !== undefined && failure.status >= 200 && failure.status < 300)
      return new ModelError(
        `OpenAI-compatible model ${modelId} returned a malformed response: ${failure.message}`,
        { retryable: false, malformed: true, cause: failure.cause, details },
      );
    return new ModelError(
      `OpenAI-compatible model ${modelId} rejected the request: ${status}${failure.exception}: ${failure.message}`,
      { retryable: false, cause: failure.cause, details },
    );
  }

  #attemptsOf(failure: AttemptFailure): number {
    // A non-retryable failure ends the loop at once; count the attempts made up to it.
    return failure.retryable ? this.#maxAttempts : 1;
  }
}

type AttemptResult = { ok: true; json: unknown } | AttemptFailure;

interface AttemptFailure {
  ok: false;
  retryable: boolean;
  /** Bedrock-style exception name (see the class docs). */
  exception: string;
  status?: number;
  message: string;
  retryAfterMs?: number | undefined;
  attempts?: number;
  cause?: unknown;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function preview(text: string, max = ARGUMENTS_PREVIEW_CHARS): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Bedrock's exception name for an HTTP status of an OpenAI-compatible server. */
function exceptionOf(status: number): string {
  if (status === 429) return 'ThrottlingException';
  if (status === 503) return 'ServiceUnavailableException';
  if (status >= 500) return 'InternalServerException';
  if (status === 401 || status === 403) return 'AccessDeniedException';
  if (status === 404) return 'ResourceNotFoundException';
  if (status === 408) return 'ModelTimeoutException';
  return 'ValidationException';
}

const ErrorBodySchema = z.object({
  error: z.union([z.string(), z.object({ message: z.string() }).loose()]),
});

/** The server's error message: OpenAI's `{ error: { message } }`, Ollama's `{ error }`, or the raw text. */
function errorMessageOf(text: string): string {
  try {
    const parsed = ErrorBodySchema.safeParse(JSON.parse(text));
    if (parsed.success) {
      const error = parsed.data.error;
      return preview(typeof error === 'string' ? error : error.message);
    }
  } catch {
    // not JSON: quote it
  }
  return preview(text.trim() || '(empty body)');
}

/** `Retry-After` in ms: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unparsable. */
function retryAfterOf(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

// ---------------------------------------------------------------------------------------------
// Request mapping (Converse → Chat Completions)
// ---------------------------------------------------------------------------------------------

type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

function toChatRequest(model: string, request: ConverseRequest): Record<string, unknown> {
  const messages: ChatMessage[] = [];
  const system = (request.system ?? []).map((s) => s.text).join('\n\n');
  if (system) messages.push({ role: 'system', content: system });
  for (const message of request.messages) messages.push(...toChatMessages(message));
  const inference = request.inferenceConfig;
  return {
    model,
    messages,
    stream: false,
    ...(request.toolConfig ? toChatTools(request.toolConfig) : {}),
    ...(inference?.maxTokens === undefined ? {} : { max_tokens: inference.maxTokens }),
    ...(inference?.temperature === undefined ? {} : { temperature: inference.temperature }),
    ...(inference?.topP === undefined ? {} : { top_p: inference.topP }),
  };
}

function toChatMessages(message: ConverseMessage): ChatMessage[] {
  const texts = message.content.flatMap((b) => ('text' in b ? [b.text] : []));
  if (message.role === 'assistant') {
    const calls = message.content.flatMap((b): ChatToolCall[] =>
      'toolUse' in b
        ? [
            {
              id: b.toolUse.toolUseId,
              type: 'function',
              function: { name: b.toolUse.name, arguments: JSON.stringify(b.toolUse.input) },
            },
          ]
        : [],
    );
    return [
      {
        role: 'assistant',
        content: texts.length ? texts.join('\n') : null,
        ...(calls.length ? { tool_calls: calls } : {}),
      },
    ];
  }
  const results = message.content.flatMap((b): ChatMessage[] =>
    'toolResult' in b
      ? [
          {
            role: 'tool',
            tool_call_id: b.toolResult.toolUseId,
            content: toolResultText(b.toolResult.content, b.toolResult.status),
          },
        ]
      : [],
  );
  return [...results, ...(texts.length ? [{ role: 'user' as const, content: texts.join('\n') }] : [])];
}

function toolResultText(
  content: readonly ToolResultContent[],
  status: 'success' | 'error' | undefined,
): string {
  const text = content.map((c) => ('text' in c ? c.text : JSON.stringify(c.json))).join('\n');
  return status === 'error' ? `Error: ${text}` : text;
}

function toChatTools(config: ToolConfig): Record<string, unknown> {
  const tools = config.tools.map(({ toolSpec }) => ({
    type: 'function',
    function: {
      name: toolSpec.name,
      description: toolSpec.description,
      parameters: toolSpec.inputSchema.json,
    },
  }));
  const choice = config.toolChoice;
  let toolChoice: unknown;
  if (choice === undefined) toolChoice = undefined;
  else if ('auto' in choice) toolChoice = 'auto';
  else if ('any' in choice) toolChoice = 'required';
  else toolChoice = { type: 'function', function: { name: choice.tool.name } };
  return { tools, ...(toolChoice === undefined ? {} : { tool_choice: toolChoice }) };
}

// ---------------------------------------------------------------------------------------------
// Response validation (Chat Completions → Converse)
// ---------------------------------------------------------------------------------------------

const tokenCount = z.number().int().nonnegative();

const ChatResponseSchema = z.object({
  id: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({
          role: z.literal('assistant'),
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string().min(1).optional(),
                type: z.literal('function').optional(),
                function: z.object({ name: z.string().min(1), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'no choices'),
  usage: z
    .object({ prompt_tokens: tokenCount, completion_tokens: tokenCount, total_tokens: tokenCount.optional() })
    .nullish(),
});

const ArgumentsSchema = z.record(z.string(), z.json());

const FINISH: Record<string, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  content_filter: 'content_filtered',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
};

function parseChatResponse(
  json: unknown,
  modelId: string,
  request: ConverseRequest,
  latencyMs: number,
  attempts: number,
): ConverseResponse {
  const details = { modelId, exception: 'SerializationException', httpStatusCode: 200, attempts };
  const parsed = ChatResponseSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: issue.path.length ? issue.path.join('.') : '(root)',
      message: issue.message,
    }));
    throw new ModelError(
      `OpenAI-compatible model ${modelId} returned a malformed response: ${issues
        .slice(0, 5)
        .map((i) => `${i.path}: ${i.message}`)
        .join('; ')}`,
      { retryable: false, malformed: true, cause: parsed.error, details: { ...details, issues } },
    );
  }
  const choice = parsed.data.choices[0] as z.infer<typeof ChatResponseSchema>['choices'][number];
  const content: ContentBlock[] = [];
  if (choice.message.content) content.push({ text: choice.message.content });
  (choice.message.tool_calls ?? []).forEach((call, i) => {
    const toolUseId = call.id ?? `call-${i + 1}`;
    content.push({
      toolUse: {
        toolUseId,
        name: call.function.name,
        input: parseArguments(call, toolUseId, modelId, details),
      },
    });
  });
  const hasTools = content.some((b) => 'toolUse' in b);
  const stopReason: StopReason = hasTools
    ? 'tool_use'
    : (FINISH[choice.finish_reason ?? 'stop'] ?? 'end_turn');
  const usage = parsed.data.usage;
  const inputTokens = usage?.prompt_tokens ?? countTokens(JSON.stringify(request));
  const outputTokens = usage?.completion_tokens ?? countTokens(JSON.stringify(content));
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: stopReason === 'tool_use' && !hasTools ? 'end_turn' : stopReason,
    usage: { inputTokens, outputTokens, totalTokens: usage?.total_tokens ?? inputTokens + outputTokens },
    metrics: { latencyMs },
  };
}

/**
 * The tool call's `arguments` as a JSON object (empty arguments → `{}`, as some servers send for
 * a tool without parameters).
 * @throws ModelError (not retryable, exception `MalformedToolCall`) naming the tool, the call id
 *   and the parse problem; `details.arguments` holds the whole string
 */
function parseArguments(
  call: { function: { name: string; arguments: string } },
  toolUseId: string,
  modelId: string,
  details: Record<string, unknown>,
): JsonValue {
  const raw = call.function.arguments;
  if (raw.trim() === '') return {};
  let problem: string;
  let cause: unknown;
  try {
    const parsed = ArgumentsSchema.safeParse(JSON.parse(raw));
    if (parsed.success) return parsed.data as JsonValue;
    problem = 'they are JSON but not an object';
    cause = parsed.error;
  } catch (error) {
    problem = `they are not JSON (${(error as Error).message})`;
    cause = error;
  }
  throw new ModelError(
    `OpenAI-compatible model ${modelId} called tool "${call.function.name}" (call ${toolUseId}) with malformed arguments: ${problem}; the arguments began: ${preview(raw)}`,
    {
      retryable: false,
      malformed: true,
      cause,
      details: {
        ...details,
        exception: 'MalformedToolCall',
        tool: call.function.name,
        toolUseId,
        arguments: raw,
      },
    },
  );
}
