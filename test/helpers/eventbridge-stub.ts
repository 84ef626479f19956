/**
 * A local stand-in for the EventBridge `PutEvents` operation, for driving the real
 * `EventBridgeClient` over HTTP (as test/helpers/converse-stub.ts does for Bedrock).
 *
 * Wire format (awsJson1_1, https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html):
 * `POST /` with `X-Amz-Target: AWSEvents.PutEvents`, `Content-Type: application/x-amz-json-1.1`
 * and a JSON body `{ "Entries": [{ "Source", "DetailType", "Detail", "Resources", "EventBusName" }] }`;
 * the answer is `{ "FailedEntryCount": n, "Entries": [{ "EventId" } | { "ErrorCode", "ErrorMessage" }] }`.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One entry of a PutEvents request. */
export interface PutEventsEntry {
  Source: string;
  DetailType: string;
  Detail: string;
  Resources?: string[];
  EventBusName?: string;
}

/** One request the stub received. */
export interface PutEventsRequest {
  target: string | undefined;
  contentType: string | undefined;
  entries: PutEventsEntry[];
}

/** A running stub. */
export interface EventBridgeStub {
  endpoint: string;
  requests: PutEventsRequest[];
  /** Entries accepted (given an EventId), in order. */
  accepted: { id: string; entry: PutEventsEntry }[];
  /** Makes the next `n` entries fail with `ThrottlingException` (a partial failure of the batch). */
  failNextEntries(n: number): void;
  stop(): Promise<void>;
}

/** Starts the stub on 127.0.0.1, on a free port. */
export async function startEventBridgeStub(): Promise<EventBridgeStub> {
  const requests: PutEventsRequest[] = [];
  const accepted: { id: string; entry: PutEventsEntry }[] = [];
  let failing = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const target = req.headers['x-amz-target'] as string | undefined;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        Entries?: PutEventsEntry[];
      };
      const entries = body.Entries ?? [];
      requests.push({ target, contentType: req.headers['content-type'], entries });
      if (target !== 'AWSEvents.PutEvents') {
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify({ __type: 'UnknownOperationException', message: `stub: ${target}` }));
        return;
      }
      let failed = 0;
      const results = entries.map((entry) => {
        if (failing > 0) {
          failing--;
          failed++;
          return { ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded (stub)' };
        }
        const id = randomUUID();
        accepted.push({ id, entry });
        return { EventId: id };
      });
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
      res.end(JSON.stringify({ FailedEntryCount: failed, Entries: results }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    accepted,
    failNextEntries: (n) => {
      failing = n;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The event EventBridge delivers to a rule's target for an accepted entry (the envelope fields
 * around the entry's `Source`, `DetailType`, `Resources` and parsed `Detail`).
 */
export function deliveredEvent(accepted: { id: string; entry: PutEventsEntry }): Record<string, unknown> {
  return {
    version: '0',
    id: accepted.id,
    'detail-type': accepted.entry.DetailType,
    source: accepted.entry.Source,
    account: '111122223333',
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'eu-west-1',
    resources: accepted.entry.Resources ?? [],
    detail: JSON.parse(accepted.entry.Detail) as unknown,
  };
}
