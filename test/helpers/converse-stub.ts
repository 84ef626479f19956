/**
 * A local stand-in for the Bedrock Runtime `Converse` operation, for driving the real
 * `BedrockRuntimeClient` over HTTP/1.1 (the client must use `NodeHttpHandler`; its default
 * handler for bedrock-runtime is HTTP/2, which `node:http` cannot answer).
 *
 * Wire format (awsRestJson1, https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
 * `POST /model/{modelId}/converse`, the model id as ONE URL-encoded path segment (the SDK
 * encodes `:` as `%3A` and `/` as `%2F`, leaves `.` alone), JSON body with `messages`, `system`,
 * `toolConfig`, `inferenceConfig`. Errors are a non-2xx status with an `x-amzn-errortype`
 * header (`ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`; the SDK
 * keeps the part before `:`) and a `{ "message": ... }` body.
 *
 * The stub answers from a FIFO queue of scripted responses and records every request it gets.
 * An unscripted request gets HTTP 418 `StubQueueEmptyException` (not retryable, so a test
 * that under-scripts fails fast instead of spinning in the SDK's retries).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stub received. */
export interface RecordedRequest {
  method: string;
  /** The raw request path, still URL-encoded (e.g. `/model/anthropic.claude-v2%3A1/converse`). */
  path: string;
  /** The decoded `{modelId}` path label, or `undefined` when the path is neither Converse nor InvokeModel. */
  modelId: string | undefined;
  /** Lower-cased header names, as node:http gives them. */
  headers: IncomingHttpHeaders;
  /** The JSON-parsed body (`undefined` for an empty body, the raw string if it is not JSON). */
  body: unknown;
}

/** One scripted answer. */
export interface ScriptedResponse {
  /** HTTP status; default 200. */
  status?: number;
  /** Serialised with `JSON.stringify`; ignored when `rawBody` is given. */
  body?: unknown;
  /** Sent verbatim instead of `body` (to script bodies that are not valid JSON). */
  rawBody?: string;
  /** Extra response headers, e.g. `{ 'x-amzn-errortype': 'ThrottlingException:...' }`. */
  headers?: Record<string, string>;
  /** Wait this long (ms) before answering, to trigger client-side timeouts. */
  delayMs?: number;
}

/** A running stub. */
export interface ConverseStub {
  /** `http://127.0.0.1:<port>`, to pass as the client's `endpoint`. */
  endpoint: string;
  /** Every request received, in arrival order (retries included). */
  requests: RecordedRequest[];
  /** Appends scripted responses to the queue; each request consumes one. */
  enqueue(...responses: ScriptedResponse[]): void;
  /** Closes the server and any open (keep-alive) connections. */
  stop(): Promise<void>;
}

/** Suffix Bedrock puts after the error name in `x-amzn-errortype`. */
const CORAL_SUFFIX = 'http://internal.amazon.com/coral/com.amazon.bedrock/';

/**
 * A Bedrock-style service error: `status`, `x-amzn-errortype: <name>:<coral namespace>` and a
 * `{ message }` body, as the real service sends (e.g. 429 `ThrottlingException`, 400
 * `ValidationException`, 408 `ModelTimeoutException`, 503 `ServiceUnavailableException`).
 */
export function serviceError(name: string, status: number, message = `${name} from stub`): ScriptedResponse {
  return {
    status,
    headers: { 'x-amzn-errortype': `${name}:${CORAL_SUFFIX}` },
    body: { message },
  };
}

/** `Converse` and `InvokeModel` (`POST /model/{modelId}/invoke`, the embeddings' operation). */
const CONVERSE_PATH = /^\/model\/([^/]+)\/(?:converse|invoke)$/;

function parseBody(raw: string): unknown {
  if (raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * Starts the stub on 127.0.0.1, on a free port.
 * @returns the endpoint, the request log, the response queue and `stop()`.
 */
export async function startConverseStub(): Promise<ConverseStub> {
  const requests: RecordedRequest[] = [];
  const queue: ScriptedResponse[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      const label = CONVERSE_PATH.exec(path)?.[1];
      requests.push({
        method: req.method ?? '',
        path,
        modelId: label === undefined ? undefined : decodeURIComponent(label),
        headers: req.headers,
        body: parseBody(Buffer.concat(chunks).toString('utf8')),
      });

      const scripted: ScriptedResponse =
        req.method !== 'POST' || label === undefined
          ? serviceError('UnknownOperationException', 404, `stub: no route for ${req.method} ${path}`)
          : (queue.shift() ??
            serviceError('StubQueueEmptyException', 418, 'stub: no scripted response left in the queue'));

      const send = (): void => {
        if (res.destroyed) return;
        const payload =
          scripted.rawBody ?? (scripted.body === undefined ? '' : JSON.stringify(scripted.body));
        res.writeHead(scripted.status ?? 200, {
          'content-type': 'application/json',
          'x-amzn-requestid': `stub-${requests.length}`,
          ...scripted.headers,
        });
        res.end(payload);
      };
      if (scripted.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          send();
        }, scripted.delayMs);
        timers.add(timer);
      } else {
        send();
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...responses) => {
      queue.push(...responses);
    },
    stop: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
