import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';

/** A running proxy; see {@link startTransactionProxy}. */
export interface TransactionProxy {
  /** `http://127.0.0.1:<port>`: point the DynamoDB client here. */
  endpoint: string;
  /** `TransactWriteItems` requests answered so far (committed or cancelled). */
  readonly transactions: number;
  stop(): Promise<void>;
}

const TARGET_PREFIX = 'DynamoDB_20120810.';

/**
 * A node:http proxy in front of dynalite 4.0.0, which has no `TransactWriteItems`. It runs every
 * request one at a time (a global lock), so a transaction is isolated from every other request,
 * and answers `TransactWriteItems` itself: it applies the `Put`, `Update` and `Delete` actions in
 * order through `direct` (a client on dynalite itself), each with its own condition, after
 * reading the item it changes; when an action's condition fails it restores the items the
 * earlier actions changed and answers `TransactionCanceledException` with `CancellationReasons`
 * (`ConditionalCheckFailed` for that action, `None` for the others — DynamoDB evaluates every
 * condition before writing and may report more than one failure; the adapter reads only whether
 * its first action failed). A repeated `ClientRequestToken` (the SDK sets one per command and
 * keeps it across retries) gets the first answer again, as DynamoDB's idempotent transactions
 * do. `ConditionCheck` actions are not implemented (400 `ValidationException`). Everything else
 * is forwarded unchanged.
 * @param target dynalite's base URL
 * @param direct a client pointed at dynalite itself (not at the proxy)
 */
export async function startTransactionProxy(
  target: string,
  direct: DynamoDBClient,
): Promise<TransactionProxy> {
  const targetUrl = new URL(target);
  let tail: Promise<unknown> = Promise.resolve();
  let transactions = 0;
  const answered = new Map<string, { status: number; headers: Record<string, string>; body: Buffer }>();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work);
    tail = run.catch(() => undefined);
    return run;
  };

  const forward = (incoming: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: Record<string, string>; body: Buffer }>((resolve, reject) => {
      const outgoing = request(
        {
          host: targetUrl.hostname,
          port: targetUrl.port,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        },
        (response) => {
          readBody(response).then(
            (data) =>
              resolve({
                status: response.statusCode ?? 502,
                headers: {
                  'content-type': String(response.headers['content-type'] ?? 'application/x-amz-json-1.0'),
                },
                body: data,
              }),
            reject,
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  const transact = async (body: Buffer) => {
    transactions++;
    const input = JSON.parse(body.toString('utf8')) as {
      TransactItems?: TransactWriteItem[];
      ClientRequestToken?: string;
    };
    const items = input.TransactItems ?? [];
    if (items.some((item) => item.ConditionCheck))
      return jsonError(400, 'ValidationException', 'ConditionCheck is not emulated');
    const token = input.ClientRequestToken;
    const earlier = token ? answered.get(token) : undefined;
    if (earlier) return earlier; // the SDK retried a request the proxy had answered
    const answer = await apply(items);
    if (token) answered.set(token, answer);
    return answer;
  };

  const apply = async (items: TransactWriteItem[]) => {
    const undo: {
      table: string;
      key: Record<string, AttributeValue>;
      before?: Record<string, AttributeValue>;
    }[] = [];
    for (const [i, item] of items.entries()) {
      const table = (item.Put ?? item.Update ?? item.Delete)?.TableName as string;
      const key = item.Put ? keyOf(item.Put.Item ?? {}) : ((item.Update ?? item.Delete)?.Key ?? {});
      const { Item: before } = await direct.send(
        new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }),
      );
      try {
        if (item.Put) await direct.send(new PutItemCommand(item.Put));
        else if (item.Update) await direct.send(new UpdateItemCommand(item.Update));
        else if (item.Delete) await direct.send(new DeleteItemCommand(item.Delete));
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        for (const done of undo.reverse()) {
          if (done.before)
            await direct.send(new PutItemCommand({ TableName: done.table, Item: done.before }));
          else await direct.send(new DeleteItemCommand({ TableName: done.table, Key: done.key }));
        }
        const reasons = items.map((_, j) =>
          j === i
            ? { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }
            : { Code: 'None' },
        );
        return jsonError(
          400,
          'TransactionCanceledException',
          `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
          { CancellationReasons: reasons },
        );
      }
      undo.push({ table, key, ...(before ? { before } : {}) });
    }
    return {
      status: 200,
      headers: { 'content-type': 'application/x-amz-json-1.0' },
      body: Buffer.from('{}'),
    };
  };

  const handle = async (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const body = await readBody(incoming);
    const operation = String(incoming.headers['x-amz-target'] ?? '').slice(TARGET_PREFIX.length);
    const answer = await serially(() =>
      operation === 'TransactWriteItems' ? transact(body) : forward(incoming, body),
    );
    outgoing.writeHead(answer.status, answer.headers);
    outgoing.end(answer.body);
  };

  const server = createServer((incoming, outgoing) => {
    handle(incoming, outgoing).catch((error: unknown) => {
      const answer = jsonError(500, 'InternalServerError', String(error));
      outgoing.writeHead(answer.status, answer.headers);
      outgoing.end(answer.body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get transactions() {
      return transactions;
    },
    async stop() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The key of a put item: its `pk` and `sk` (the projections table's key schema). */
function keyOf(item: Record<string, AttributeValue>): Record<string, AttributeValue> {
  return { pk: item.pk as AttributeValue, sk: item.sk as AttributeValue };
}

function jsonError(status: number, type: string, message: string, extra: Record<string, unknown> = {}) {
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: Buffer.from(
      JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message, ...extra }),
    ),
  };
}

function readBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
