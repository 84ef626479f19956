import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import { createDynamoDBClient } from '../../shared/projections/dynamodb.js';
import { startTransactionProxy } from './dynalite-transactions.js';

/** dynalite's factory (CommonJS, untyped): an http.Server speaking the DynamoDB JSON protocol. */
type DynaliteFactory = (options: {
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
  path?: string;
}) => Server;

const dynalite = createRequire(import.meta.url)('dynalite') as DynaliteFactory;

/** A running dynalite server with the projections table created. */
export interface DynaliteHandle {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  /** Name of the table created with the stack's key schema (`pk` S, `sk` S). */
  tableName: string;
  /** Client config for the real SDK clients: endpoint, region, dummy credentials. */
  clientConfig: DynamoDBClientConfig;
  /** A DynamoDB client pointed at the server (destroyed by `stop`). */
  client: DynamoDBClient;
  /** Creates another empty table with the same key schema; returns its name. */
  createTable(name: string): Promise<string>;
  /** Stops the server and destroys the client. */
  stop(): Promise<void>;
}

/**
 * Starts dynalite 4.0.0 in memory in this process on an ephemeral port of 127.0.0.1 and
 * creates the projections table with the real `CreateTableCommand`, exactly as the stack
 * declares it: partition key `pk` (S), sort key `sk` (S), on-demand. (dynalite has no
 * `UpdateTimeToLive`, so the TTL attribute `expiration` is not switched on here; TTL deletion
 * is a background AWS process no test could wait for anyway.) dynalite has no
 * `TransactWriteItems` either: the endpoint is a proxy that runs requests one at a time and
 * emulates it (test/helpers/dynalite-transactions.ts).
 * @throws Error when the server does not listen or the table does not become ACTIVE
 */
export async function startDynalite(tableName = 'cld-projections'): Promise<DynaliteHandle> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base: DynamoDBClientConfig = {
    region: 'us-east-1',
    credentials: { accessKeyId: 'dynalite', secretAccessKey: 'dynalite' },
    maxAttempts: 3,
  };
  const direct = createDynamoDBClient({ ...base, endpoint: `http://127.0.0.1:${port}` });
  const proxy = await startTransactionProxy(`http://127.0.0.1:${port}`, direct);
  const endpoint = proxy.endpoint;
  const clientConfig: DynamoDBClientConfig = { ...base, endpoint };
  const client = createDynamoDBClient(clientConfig);
  const createTable = async (name: string) => {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    for (let i = 0; i < 100; i++) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
      if (Table?.TableStatus === 'ACTIVE') return name;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`table ${name} did not become ACTIVE`);
  };
  try {
    await createTable(tableName);
  } catch (error) {
    client.destroy();
    direct.destroy();
    await proxy.stop();
    await new Promise((resolve) => server.close(resolve));
    throw error;
  }
  return {
    endpoint,
    tableName,
    clientConfig,
    client,
    createTable,
    async stop() {
      client.destroy();
      direct.destroy();
      await proxy.stop();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
