import { randomBytes } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request the proxy received, with the status it answered. */
export interface RecordedRequest {
  method: string;
  /** Path and query as received, for example `/bucket/cld%3A...json?x-id=PutObject`. */
  url: string;
  /** The `If-None-Match` request header, if any. */
  ifNoneMatch: string | undefined;
  /** HTTP status sent back to the client. */
  status: number;
}

/** A running proxy; see {@link startConditionalPutProxy}. */
export interface ConditionalPutProxy {
  /** `http://127.0.0.1:<port>`; point the S3 client here with `forcePathStyle: true`. */
  endpoint: string;
  /** Every request so far, in the order their responses were sent. */
  readonly requests: RecordedRequest[];
  /** Highest number of object `GET`s in flight at once since the last {@link reset}. */
  readonly peakConcurrentGets: number;
  /** Answers the next `count` conditional PUTs with S3's 409 `ConditionalRequestConflict`. */
  failNextConditionalPuts(count: number): void;
  /** Holds each object `GET` for `ms` milliseconds before forwarding it (to observe concurrency). */
  delayGets(ms: number): void;
  /** Clears the recorded requests, the peak, injected conflicts and delays. */
  reset(): void;
  /** Closes the proxy. */
  stop(): Promise<void>;
}

/**
 * A node:http proxy in front of an S3-compatible server that does not implement conditional
 * writes (s3rver 3.7.1 ignores `If-None-Match`). For `PUT` with `If-None-Match: *` it does what
 * S3 does, atomically per key (a per-path lock around check and write): when the object exists
 * (a `HEAD` on the target says 200) it answers 412 with S3's XML error body
 * (`<Code>PreconditionFailed</Code>`), otherwise it forwards the PUT. Everything else is
 * forwarded unchanged, including the `Host` header, so the target's SigV4 check still passes.
 *
 * Test hooks: it records each request's method, URL, `If-None-Match` and answered status; it can
 * answer the next conditional PUTs with 409 `ConditionalRequestConflict` (what S3 returns
 * while a concurrent conditional write to the key is in progress); it can delay object GETs
 * and reports their peak concurrency.
 * @param target base URL of the real server, for example `http://127.0.0.1:4568`.
 */
export async function startConditionalPutProxy(target: string): Promise<ConditionalPutProxy> {
  const targetUrl = new URL(target);
  const requests: RecordedRequest[] = [];
  const locks = new Map<string, Promise<void>>();
  let conflictsToInject = 0;
  let getDelayMs = 0;
  let getsInFlight = 0;
  let peakConcurrentGets = 0;

  const forward = (
    method: string,
    url: string,
    headers: IncomingHttpHeaders,
    body: Buffer | undefined,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const outgoing = request(
        { host: targetUrl.hostname, port: targetUrl.port, method, path: url, headers },
        (response) => {
          readBody(response).then(
            (data) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: data }),
            reject,
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  const withLock = async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = locks.get(key) ?? Promise.resolve();
    let release = (): void => undefined;
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    locks.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (locks.get(key) === tail) locks.delete(key);
    }
  };

  const conditionalPut = async (
    incoming: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> => {
    const url = incoming.url ?? '/';
    const path = url.split('?')[0] as string;
    if (incoming.headers['if-none-match'] !== '*') {
      return s3Error(
        501,
        'NotImplemented',
        'A header you provided implies functionality that is not implemented',
      );
    }
    return withLock(path, async () => {
      if (conflictsToInject > 0) {
        conflictsToInject -= 1;
        return s3Error(
          409,
          'ConditionalRequestConflict',
          'A conflicting conditional operation is currently in progress against this resource. Please try again.',
        );
      }
      const head = await forward('HEAD', path, { host: incoming.headers.host }, undefined);
      if (head.status === 200) {
        return s3Error(
          412,
          'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold',
          {
            Condition: 'If-None-Match',
          },
        );
      }
      if (head.status !== 404) return s3Error(500, 'InternalError', `proxy HEAD answered ${head.status}`);
      return forward('PUT', url, incoming.headers, body);
    });
  };

  const handle = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    const method = incoming.method ?? 'GET';
    const url = incoming.url ?? '/';
    const body = await readBody(incoming);
    const isObjectGet = method === 'GET' && !url.includes('list-type=') && url.split('/').length > 2;
    let response: { status: number; headers: IncomingHttpHeaders; body: Buffer };
    if (method === 'PUT' && incoming.headers['if-none-match'] !== undefined) {
      response = await conditionalPut(incoming, body);
    } else if (isObjectGet) {
      getsInFlight += 1;
      peakConcurrentGets = Math.max(peakConcurrentGets, getsInFlight);
      try {
        if (getDelayMs > 0) await sleep(getDelayMs);
        response = await forward(method, url, incoming.headers, body);
      } finally {
        getsInFlight -= 1;
      }
    } else {
      response = await forward(method, url, incoming.headers, body);
    }
    const ifNoneMatch = incoming.headers['if-none-match'];
    requests.push({ method, url, ifNoneMatch, status: response.status });
    outgoing.writeHead(response.status, stripHopByHop(response.headers));
    outgoing.end(response.body);
  };

  const server = createServer((incoming, outgoing) => {
    handle(incoming, outgoing).catch((error: unknown) => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    get peakConcurrentGets() {
      return peakConcurrentGets;
    },
    failNextConditionalPuts(count) {
      conflictsToInject = count;
    },
    delayGets(ms) {
      getDelayMs = ms;
    },
    reset() {
      requests.length = 0;
      peakConcurrentGets = 0;
      conflictsToInject = 0;
      getDelayMs = 0;
    },
    stop() {
      server.closeAllConnections();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

/** An S3 error response as S3 sends it: status, `application/xml`, request ids, `<Error>` body. */
function s3Error(
  status: number,
  code: string,
  message: string,
  extra: Record<string, string> = {},
): { status: number; headers: IncomingHttpHeaders; body: Buffer } {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const hostId = randomBytes(32).toString('base64');
  const fields = Object.entries({
    Code: code,
    Message: message,
    ...extra,
    RequestId: requestId,
    HostId: hostId,
  })
    .map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`)
    .join('');
  const body = Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<Error>${fields}</Error>`, 'utf8');
  return {
    status,
    headers: {
      'content-type': 'application/xml',
      'content-length': String(body.length),
      'x-amz-request-id': requestId,
      'x-amz-id-2': hostId,
    },
    body,
  };
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function stripHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _connection, 'transfer-encoding': _transferEncoding, ...rest } = headers;
  return rest;
}

function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
