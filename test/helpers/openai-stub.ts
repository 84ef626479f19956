/**
 * A local stand-in for an OpenAI-compatible server (Ollama, vLLM, LM Studio): `POST
 * /v1/chat/completions` on 127.0.0.1, for driving the real adapter (shared/llm/openai.ts) over
 * HTTP with Node's `fetch`.
 *
 * It answers from a FIFO queue of scripted responses, or, when the queue is empty, from a
 * `respond` function given the parsed request body (a scripted model for end-to-end runs). It
 * records every request. An unscripted request gets HTTP 418 (not retried by the adapter, so an
 * under-scripted test fails fast).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stub received. */
export interface RecordedChatRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON-parsed body, or the raw string when it is not JSON. */
  body: unknown;
}

/** One scripted answer. */
export interface ScriptedChatResponse {
  /** HTTP status; default 200. */
  status?: number;
  /** Serialised with `JSON.stringify`; ignored when `rawBody` is given. */
  body?: unknown;
  /** Sent verbatim (bodies that are not JSON). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Wait this long (ms) before answering (client timeouts). */
  delayMs?: number;
  /** Send the headers and part of the body, then stall for `delayMs` (a body timeout). */
  stallBody?: boolean;
  /**
   * Never answer: the request stays open until the client gives up or the stub stops (a server
   * that hangs, for testing a client timeout without racing a delay against it).
   */
  hang?: boolean;
}

/** A running stub. */
export interface OpenAIStub {
  /** `http://127.0.0.1:<port>/v1`, the base URL to configure. */
  baseUrl: string;
  requests: RecordedChatRequest[];
  enqueue(...responses: ScriptedChatResponse[]): void;
  /** Answers requests the queue does not cover. */
  respond: ((body: ChatRequestBody) => ScriptedChatResponse) | undefined;
  stop(): Promise<void>;
}

/** The request fields a responder reads. */
export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description: string; parameters: unknown } }[];
  tool_choice?: unknown;
}

/** A 200 chat completion with `content` and/or tool calls (`arguments` given as the raw string). */
export function completion(
  options: {
    content?: string | null;
    toolCalls?: { id?: string; name: string; arguments: string }[];
    finishReason?: string;
    usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  } = {},
): ScriptedChatResponse {
  const toolCalls = options.toolCalls ?? [];
  return {
    status: 200,
    body: {
      id: 'chatcmpl-stub',
      object: 'chat.completion',
      created: 0,
      model: 'stub',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: options.content ?? (toolCalls.length ? null : 'Hello.'),
            ...(toolCalls.length
              ? {
                  tool_calls: toolCalls.map((call, i) => ({
                    ...(call.id === undefined ? { id: `call_${i + 1}` } : { id: call.id }),
                    type: 'function',
                    function: { name: call.name, arguments: call.arguments },
                  })),
                }
              : {}),
          },
          finish_reason: options.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
        },
      ],
      ...(options.usage === null
        ? {}
        : { usage: options.usage ?? { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 } }),
    },
  };
}

/** An OpenAI-style error: `{ error: { message, type } }` with `status`. */
export function chatError(status: number, message = `stub error ${status}`): ScriptedChatResponse {
  return { status, body: { error: { message, type: 'stub_error', code: null } } };
}

function parseBody(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** Starts the stub on 127.0.0.1, on a free port. */
export async function startOpenAIStub(): Promise<OpenAIStub> {
  const requests: RecordedChatRequest[] = [];
  const queue: ScriptedChatResponse[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const stub: OpenAIStub = {
    baseUrl: '',
    requests,
    enqueue: (...responses) => {
      queue.push(...responses);
    },
    respond: undefined,
    stop: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      const body = parseBody(Buffer.concat(chunks).toString('utf8'));
      requests.push({ method: req.method ?? '', path, headers: req.headers, body });
      let scripted: ScriptedChatResponse;
      if (req.method !== 'POST' || path !== '/v1/chat/completions')
        scripted = chatError(404, `stub: no route for ${req.method} ${path}`);
      else
        scripted =
          queue.shift() ??
          (stub.respond
            ? stub.respond(body as ChatRequestBody)
            : chatError(418, 'stub: no scripted response left'));
      const payload = scripted.rawBody ?? (scripted.body === undefined ? '' : JSON.stringify(scripted.body));
      const headers = { 'content-type': 'application/json', ...scripted.headers };
      const later = (fn: () => void, ms: number) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          fn();
        }, ms);
        timers.add(timer);
      };
      if (scripted.hang) return;
      if (scripted.stallBody) {
        res.writeHead(scripted.status ?? 200, headers);
        res.write(payload.slice(0, 10));
        later(() => !res.destroyed && res.end(payload.slice(10)), scripted.delayMs ?? 60_000);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(scripted.status ?? 200, headers);
        res.end(payload);
      };
      if (scripted.delayMs) later(send, scripted.delayMs);
      else send();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  stub.baseUrl = `http://127.0.0.1:${port}/v1`;
  return stub;
}
