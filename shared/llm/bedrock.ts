/**
 * Bedrock adapter of the `ChatModel` port: one Bedrock Runtime `Converse` call per
 * `converse()`, sent through the AWS SDK v3 `BedrockRuntimeClient`.
 *
 * API: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
 * (`POST /model/{modelId}/converse`, awsRestJson1, SigV4 with signing name `bedrock`).
 *
 * Retries are the SDK's: its standard retry strategy retries throttling (HTTP 429,
 * `ThrottlingException`), transient failures (HTTP 500/502/503/504, `TimeoutError`, socket
 * resets) with jittered exponential backoff, up to the client's `maxAttempts`. This adapter
 * adds no retry loop of its own; it classifies whatever is still failing into a `ModelError`.
 */
import type * as BedrockRuntimeSdk from '@aws-sdk/client-bedrock-runtime';
import type {
  BedrockRuntimeClient,
  BedrockRuntimeClientConfig,
  ConverseCommandInput,
  ConverseCommandOutput,
  ContentBlock as SdkContentBlock,
  Message as SdkMessage,
  Tool as SdkTool,
  ToolChoice as SdkToolChoice,
  ToolResultContentBlock as SdkToolResultContent,
} from '@aws-sdk/client-bedrock-runtime';
import * as z from 'zod';
import { HAS_REQUIRE, nodeHttpHandler, requireSdk } from '../aws/sdk.js';
import { ConfigError, ModelError } from '../errors.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseMessage,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
  ToolConfig,
  ToolResultContent,
} from './port.js';
import { promptCacheSupport, withCachePoints } from './prompt-cache.js';
import { modelIdOf, type StepModels } from './steps.js';

let runtimeSdk: typeof BedrockRuntimeSdk | undefined;

/**
 * `@aws-sdk/client-bedrock-runtime`, loaded at its first use with `require` (shared/aws/sdk.ts);
 * the embedder (bedrock-embedder.ts) uses it too.
 */
export function bedrockRuntimeSdk(): typeof BedrockRuntimeSdk {
  runtimeSdk ??= (
    HAS_REQUIRE ? require('@aws-sdk/client-bedrock-runtime') : requireSdk('@aws-sdk/client-bedrock-runtime')
  ) as typeof BedrockRuntimeSdk;
  return runtimeSdk;
}

/** Attempts per call (first try included) when nothing else is configured; the SDK's own default. */
export const DEFAULT_MAX_ATTEMPTS = 3;
/** Default time (ms) a whole HTTP request/response may take: long generations take minutes. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/** Default time (ms) to establish the TCP/TLS connection. */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5_000;

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/** Options of {@link createBedrockClient}. Everything is optional. */
export interface BedrockClientOptions {
  /** AWS region, e.g. `us-east-1`; default: the SDK's chain (`AWS_REGION`, shared config). */
  region?: string;
  /** Endpoint override, e.g. `http://127.0.0.1:4010` for a local stub; default: the regional endpoint. */
  endpoint?: string;
  /** HTTP attempts per call, first try included (integer ≥ 1); default 3. */
  maxAttempts?: number;
  /**
   * Static credentials or a provider; default: the SDK's default provider chain. When given,
   * SigV4 is preferred over a bearer token from `AWS_BEARER_TOKEN_BEDROCK`.
   */
  credentials?: BedrockRuntimeClientConfig['credentials'];
  /** Whole-request timeout in ms (integer ≥ 1); default {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
  requestTimeoutMs?: number;
  /** Connection timeout in ms (integer ≥ 1); default {@link DEFAULT_CONNECTION_TIMEOUT_MS}. */
  connectionTimeoutMs?: number;
  /**
   * Replaces the SDK's standard retry strategy (which is built from `maxAttempts`). Tests pass
   * a `ConfiguredRetryStrategy` with a tiny backoff; production code should leave it unset.
   */
  retryStrategy?: BedrockRuntimeClientConfig['retryStrategy'];
}

const positiveInt = z.number().int().min(1);
const BedrockClientOptionsSchema = z.object({
  region: z.string().min(1).optional(),
  endpoint: z.url().optional(),
  maxAttempts: positiveInt.optional(),
  requestTimeoutMs: positiveInt.optional(),
  connectionTimeoutMs: positiveInt.optional(),
});

/**
 * Builds a `BedrockRuntimeClient` for {@link BedrockChatModel}; call once per cold start and
 * keep it at module scope.
 *
 * The request handler is `NodeHttpHandler` from `@smithy/node-http-handler`, i.e. HTTP/1.1
 * (the client's own default for bedrock-runtime is the HTTP/2 `NodeHttp2Handler`, which a
 * plain `node:http` server such as the test stub cannot speak). It is configured with
 * `requestTimeout`, `connectionTimeout` and `throwOnRequestTimeout: true`: without that flag
 * the handler only logs a warning when `requestTimeout` is exceeded. A timed-out attempt
 * fails with `TimeoutError`, which the SDK's retry strategy retries.
 *
 * @throws ConfigError when an option is out of range (non-positive timeouts or attempts, a
 *   malformed endpoint URL).
 */
export function createBedrockClient(options: BedrockClientOptions = {}): BedrockRuntimeClient {
  const parsed = BedrockClientOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`Invalid Bedrock client options: ${formatIssues(parsed.error.issues)}`, {
      cause: parsed.error,
    });
  }
  const { region, endpoint, maxAttempts, requestTimeoutMs, connectionTimeoutMs } = parsed.data;
  const { BedrockRuntimeClient } = bedrockRuntimeSdk();
  const { NodeHttpHandler } = nodeHttpHandler();
  return new BedrockRuntimeClient({
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(options.credentials === undefined
      ? {}
      : { credentials: options.credentials, authSchemePreference: ['sigv4'] }),
    ...(options.retryStrategy === undefined ? {} : { retryStrategy: options.retryStrategy }),
    maxAttempts: maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    requestHandler: new NodeHttpHandler({
      requestTimeout: requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      connectionTimeout: connectionTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
      throwOnRequestTimeout: true,
    }),
  });
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/** Options of {@link BedrockChatModel}. */
export interface BedrockChatModelOptions {
  /** The SDK client, e.g. from {@link createBedrockClient}; shared, never created per call. */
  client: BedrockRuntimeClient;
  /**
   * Default model id or inference-profile id/ARN, e.g. `anthropic.claude-3-5-sonnet-20240620-v1:0`
   * or `us.anthropic.claude-3-5-sonnet-20240620-v1:0`; a request's own `modelId` wins.
   */
  modelId: string;
  /**
   * The attempt budget `client` was built with, quoted in `ModelError` details. It does NOT
   * change the client's retry policy (the SDK fixes that when the client is built: pass the
   * same value to {@link createBedrockClient}). Default: the client's resolved `maxAttempts`.
   */
  maxAttempts?: number;
  /** A model id per step (shared/llm/steps.ts); a request's own `modelId` wins, then its step's. */
  stepModels?: StepModels;
  /**
   * Converse `cachePoint` blocks (shared/llm/prompt-cache.ts): `auto` (default) adds them for
   * models that support prompt caching, `off` never.
   */
  promptCache?: 'auto' | 'off';
}

/**
 * `ChatModel` backed by Bedrock Runtime `Converse`
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).
 *
 * Requests map 1:1 onto `ConverseCommandInput` (`system`, `messages`, `toolConfig`,
 * `inferenceConfig`; `modelId` from the request or the options). Responses are validated
 * before they reach the domain: `output.message` (role `assistant`, content blocks `text` /
 * `toolUse` / `toolResult` only), a `stopReason` the port knows, and `usage` token counts.
 *
 * Errors (all `ModelError`, `details` = `{ modelId, exception, httpStatusCode?, requestId?,
 * attempts?, maxAttempts }`, the SDK error as `cause`):
 * - retryable: `true` — still throttled or unavailable after the SDK's retries:
 *   `ThrottlingException` / HTTP 429, `ServiceUnavailableException`, `InternalServerException`,
 *   `ModelNotReadyException`, any HTTP 5xx, client-side `TimeoutError` and socket errors; also
 *   `ModelTimeoutException` (HTTP 408), which the SDK does not retry itself.
 * - retryable: `false` — the service rejected the request (`ValidationException`,
 *   `AccessDeniedException`, `ResourceNotFoundException`, `ServiceQuotaExceededException`,
 *   `ModelErrorException`, any other 4xx), or the response was malformed (not JSON, or failing
 *   the schema above; `details.issues` lists what was wrong).
 */
export class BedrockChatModel implements ChatModel {
  /** `bedrock:<modelId>`. */
  readonly name: string;
  readonly #client: BedrockRuntimeClient;
  readonly #modelId: string;
  readonly #maxAttempts: number | undefined;
  readonly #stepModels: StepModels;
  readonly #promptCache: 'auto' | 'off';

  /** @throws ConfigError when `modelId` is empty or `maxAttempts` is not an integer ≥ 1. */
  constructor(options: BedrockChatModelOptions) {
    if (options.modelId.trim() === '') throw new ConfigError('BedrockChatModel needs a non-empty modelId');
    if (options.maxAttempts !== undefined && !positiveInt.safeParse(options.maxAttempts).success) {
      throw new ConfigError(
        `BedrockChatModel maxAttempts must be an integer ≥ 1, got ${options.maxAttempts}`,
      );
    }
    this.#client = options.client;
    this.#modelId = options.modelId;
    this.#maxAttempts = options.maxAttempts;
    this.#stepModels = { ...options.stepModels };
    this.#promptCache = options.promptCache ?? 'auto';
    this.name = `bedrock:${options.modelId}`;
  }

  /**
   * One `Converse` call (the SDK retries throttling and transient failures inside it), to the
   * request's `modelId`, else its step's model, else the default; with `cachePoint` blocks after
   * the tools, the system prompt and the stable part of the history where the model supports
   * prompt caching (shared/llm/prompt-cache.ts).
   * @returns the validated response; `metrics.latencyMs` as reported by the service.
   * @throws ModelError see the class docs for which failures are retryable.
   */
  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const modelId = modelIdOf(request, this.#modelId, this.#stepModels);
    const cache = this.#promptCache === 'auto' ? promptCacheSupport(modelId) : undefined;
    const input = toConverseInput(modelId, request);
    let output: ConverseCommandOutput;
    try {
      output = await this.#client.send(
        new (bedrockRuntimeSdk().ConverseCommand)(cache ? withCachePoints(input, cache) : input),
      );
    } catch (error) {
      throw toModelError(error, modelId, this.#maxAttempts ?? (await this.#resolvedMaxAttempts()));
    }
    return parseConverseOutput(output, modelId);
  }

  async #resolvedMaxAttempts(): Promise<number | undefined> {
    try {
      return await this.#client.config.maxAttempts();
    } catch {
      return undefined;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Request mapping (port → SDK). The shapes are the same; the SDK's unions carry `never`
// members and `DocumentType` for JSON, so each block is rebuilt explicitly.
// ---------------------------------------------------------------------------------------------

function toConverseInput(modelId: string, request: ConverseRequest): ConverseCommandInput {
  return {
    modelId,
    messages: request.messages.map(toSdkMessage),
    ...(request.system === undefined ? {} : { system: request.system.map(({ text }) => ({ text })) }),
    ...(request.toolConfig === undefined ? {} : { toolConfig: toSdkToolConfig(request.toolConfig) }),
    ...(request.inferenceConfig === undefined ? {} : { inferenceConfig: { ...request.inferenceConfig } }),
  };
}

function toSdkMessage(message: ConverseMessage): SdkMessage {
  return { role: message.role, content: message.content.map(toSdkContentBlock) };
}

function toSdkContentBlock(block: ContentBlock): SdkContentBlock {
  if ('text' in block) return { text: block.text };
  if ('toolUse' in block) {
    const { toolUseId, name, input } = block.toolUse;
    return { toolUse: { toolUseId, name, input } };
  }
  const { toolUseId, content, status } = block.toolResult;
  return {
    toolResult: {
      toolUseId,
      content: content.map(toSdkToolResultContent),
      ...(status === undefined ? {} : { status }),
    },
  };
}

function toSdkToolResultContent(content: ToolResultContent): SdkToolResultContent {
  return 'text' in content ? { text: content.text } : { json: content.json };
}

function toSdkToolConfig(config: ToolConfig): NonNullable<ConverseCommandInput['toolConfig']> {
  const tools: SdkTool[] = config.tools.map(({ toolSpec }) => ({
    toolSpec: {
      name: toolSpec.name,
      description: toolSpec.description,
      inputSchema: { json: toolSpec.inputSchema.json },
    },
  }));
  const choice = config.toolChoice;
  let toolChoice: SdkToolChoice | undefined;
  if (choice === undefined) toolChoice = undefined;
  else if ('auto' in choice) toolChoice = { auto: {} };
  else if ('any' in choice) toolChoice = { any: {} };
  else toolChoice = { tool: { name: choice.tool.name } };
  return { tools, ...(toolChoice === undefined ? {} : { toolChoice }) };
}

// ---------------------------------------------------------------------------------------------
// Response validation (SDK → port). The SDK does not validate: it passes through unknown
// stop reasons, string token counts, `{ $unknown: [name, value] }` for union members it
// does not know, and an empty object for an empty 200 body.
// ---------------------------------------------------------------------------------------------

const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.string(),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(JsonValueSchema),
    z.record(z.string(), JsonValueSchema),
  ]),
);

/** Name of a union member for messages: its single key, or the `$unknown` member's name. */
function describeMember(input: unknown): string {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return input === null ? 'null' : Array.isArray(input) ? 'an array' : `a ${typeof input}`;
  }
  const record = input as Record<string, unknown>;
  const unknownMember = record.$unknown;
  if (Array.isArray(unknownMember) && typeof unknownMember[0] === 'string') {
    return `an unknown "${unknownMember[0]}" member`;
  }
  const keys = Object.keys(record).filter((key) => record[key] !== undefined);
  return keys.length === 0 ? 'an empty object' : `keys ${keys.map((key) => `"${key}"`).join(', ')}`;
}

/**
 * A Smithy-style tagged union: an object with exactly one of `members`' keys set. Errors say
 * which member was expected and which keys were found, instead of zod's "Invalid input".
 */
function taggedUnion<const Members extends Record<string, z.ZodType>>(what: string, members: Members) {
  type Member = { [K in keyof Members]: { [P in K]: z.output<Members[K]> } }[keyof Members];
  const names = Object.keys(members);
  return z.unknown().transform((input, ctx): Member => {
    const record =
      input !== null && typeof input === 'object' && !Array.isArray(input)
        ? (input as Record<string, unknown>)
        : undefined;
    const keys = record === undefined ? [] : Object.keys(record).filter((key) => record[key] !== undefined);
    const key = keys.length === 1 ? keys[0] : undefined;
    const schema = key === undefined ? undefined : members[key];
    if (record === undefined || key === undefined || schema === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `unsupported ${what}: expected exactly one of ${names.join(' / ')}, got ${describeMember(input)}`,
      });
      return z.NEVER;
    }
    const parsed = schema.safeParse(record[key]);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        ctx.addIssue({ code: 'custom', message: issue.message, path: [key, ...issue.path] });
      }
      return z.NEVER;
    }
    return { [key]: parsed.data } as Member;
  });
}

const ToolResultContentSchema = taggedUnion('tool result content', {
  text: z.string(),
  json: JsonValueSchema,
});

const ContentBlockSchema = taggedUnion('content block', {
  text: z.string(),
  toolUse: z.object({ toolUseId: z.string().min(1), name: z.string().min(1), input: JsonValueSchema }),
  toolResult: z.object({
    toolUseId: z.string().min(1),
    content: z.array(ToolResultContentSchema),
    status: z.enum(['success', 'error']).optional(),
  }),
});

const tokenCount = z.number().int().nonnegative();

/** The validated subset of `ConverseCommandOutput` the port exposes. */
const ConverseOutputSchema = z.object({
  output: z.object({
    message: z.object({ role: z.literal('assistant'), content: z.array(ContentBlockSchema) }),
  }),
  stopReason: z.enum([
    'end_turn',
    'tool_use',
    'max_tokens',
    'stop_sequence',
    'guardrail_intervened',
    'content_filtered',
  ]),
  usage: z.object({
    inputTokens: tokenCount,
    outputTokens: tokenCount,
    totalTokens: tokenCount,
    cacheReadInputTokens: tokenCount.optional(),
    cacheWriteInputTokens: tokenCount.optional(),
  }),
  metrics: z.object({ latencyMs: z.number().nonnegative() }).optional(),
});

function parseConverseOutput(output: ConverseCommandOutput, modelId: string): ConverseResponse {
  const parsed = ConverseOutputSchema.safeParse(output);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: formatPath(issue.path),
      message: issue.message,
    }));
    throw new ModelError(
      `Bedrock Converse (${modelId}) returned a malformed response: ${formatIssues(parsed.error.issues)}`,
      {
        retryable: false,
        malformed: true,
        cause: parsed.error,
        details: { modelId, requestId: output.$metadata?.requestId, issues },
      },
    );
  }
  const { output: out, stopReason, usage, metrics } = parsed.data;
  return {
    output: { message: { role: out.message.role, content: out.message.content } },
    stopReason,
    usage: {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      totalTokens: usage.totalTokens,
      ...(usage.cacheReadInputTokens === undefined
        ? {}
        : { cacheReadInputTokens: usage.cacheReadInputTokens }),
      ...(usage.cacheWriteInputTokens === undefined
        ? {}
        : { cacheWriteInputTokens: usage.cacheWriteInputTokens }),
    },
    ...(metrics === undefined ? {} : { metrics: { latencyMs: metrics.latencyMs } }),
  };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(root)' : path.map(String).join('.');
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  const shown = issues.slice(0, 5).map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
  if (issues.length > shown.length) shown.push(`and ${issues.length - shown.length} more`);
  return shown.join('; ');
}

// ---------------------------------------------------------------------------------------------
// Error classification (after the SDK's retries).
// ---------------------------------------------------------------------------------------------

/** Exceptions worth trying again later (throttling, capacity, timeouts). */
const RETRYABLE_EXCEPTIONS = new Set([
  'ThrottlingException',
  'ServiceUnavailableException',
  'InternalServerException',
  'ModelNotReadyException',
  'ModelTimeoutException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** Node socket error codes the SDK itself treats as transient. */
const RETRYABLE_SOCKET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

interface SdkErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: number; requestId?: string; attempts?: number };
}

/**
 * Maps an SDK error of a Bedrock Runtime call to a {@link ModelError} (see
 * {@link BedrockChatModel} for which failures are retryable).
 * @param operation the operation named in the message (`Converse`, `InvokeModel`)
 */
export function toModelError(
  error: unknown,
  modelId: string,
  maxAttempts: number | undefined,
  operation = 'Converse',
): ModelError {
  const sdk: SdkErrorLike = error !== null && typeof error === 'object' ? (error as SdkErrorLike) : {};
  const exception = typeof sdk.name === 'string' ? sdk.name : 'UnknownError';
  const message = typeof sdk.message === 'string' ? sdk.message : String(error);
  const status = sdk.$metadata?.httpStatusCode;
  const attempts = sdk.$metadata?.attempts;
  const details = {
    modelId,
    exception,
    httpStatusCode: status,
    requestId: sdk.$metadata?.requestId,
    attempts,
    maxAttempts,
  };

  // A 2xx whose body did not deserialise (the SDK throws e.g. SyntaxError with the status).
  if (status !== undefined && status >= 200 && status < 300) {
    return new ModelError(
      `Bedrock ${operation} (${modelId}) returned a malformed response: ${exception}: ${message}`,
      { retryable: false, malformed: true, cause: error, details },
    );
  }

  const retryable =
    RETRYABLE_EXCEPTIONS.has(exception) ||
    (typeof sdk.code === 'string' && RETRYABLE_SOCKET_CODES.has(sdk.code)) ||
    status === 429 ||
    (status !== undefined && status >= 500);
  if (retryable) {
    const tries = attempts === undefined ? '' : ` after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
    return new ModelError(`Bedrock ${operation} (${modelId}) failed${tries}: ${exception}: ${message}`, {
      retryable: true,
      cause: error,
      details,
    });
  }
  return new ModelError(`Bedrock ${operation} (${modelId}) rejected the request: ${exception}: ${message}`, {
    retryable: false,
    cause: error,
    details,
  });
}
