import { join } from 'node:path';
import type { JSONValue } from '@aws-lambda-powertools/commons/types';
import {
  IdempotencyConfig,
  IdempotencyItemAlreadyExistsError,
  IdempotencyItemNotFoundError,
  IdempotencyRecordStatus,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { BasePersistenceLayer, IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { loadDynamoDBPersistenceLayer } from '../aws/asset-modules.js';
import { ValidationError } from '../errors.js';
import { parseUrn } from '../urn.js';
import { JsonlJournal } from './journal.js';

/**
 * Idempotency for side effects that leave the system (STYLE.md: "Powertools idempotency where a
 * side effect leaves the system (posting to Slack)"). Inside the system, deterministic URNs and
 * create-only writes make retries harmless; a message posted to Slack or Teams cannot be taken
 * back, so its delivery is guarded by a Powertools idempotency record keyed by the reply's URN.
 */

/** Partition key value of idempotency records in the projections table (`pk`). */
export const IDEMPOTENCY_PK = 'idempotency';

/**
 * The Powertools `DynamoDBPersistenceLayer` on the projections table's key schema: `pk` holds
 * the static value `idempotency`, `sk` the idempotency key, `expiration` (the table's TTL
 * attribute, Powertools' default name) the record's expiry in epoch seconds. Asynchronous because
 * the layer's class loads at this first use (shared/aws/asset-modules.ts).
 */
export async function dynamoDBIdempotencyLayer(options: {
  client: DynamoDBClient;
  tableName: string;
}): Promise<DynamoDBPersistenceLayer> {
  const DynamoDBPersistenceLayer = await loadDynamoDBPersistenceLayer();
  return new DynamoDBPersistenceLayer({
    tableName: options.tableName,
    awsSdkV3Client: options.client,
    keyAttr: 'pk',
    sortKeyAttr: 'sk',
    staticPkValue: IDEMPOTENCY_PK,
    expiryAttr: 'expiration',
  });
}

const StoredRecordSchema = z.strictObject({
  status: z.enum([IdempotencyRecordStatus.INPROGRESS, IdempotencyRecordStatus.COMPLETED]),
  expiration: z.number().optional(),
  inProgressExpiration: z.number().optional(),
  data: z.unknown().optional(),
  validation: z.string().optional(),
});
type StoredRecord = z.infer<typeof StoredRecordSchema>;

const JournalEntrySchema = z.union([
  z.strictObject({ key: z.string().min(1), record: StoredRecordSchema }),
  z.strictObject({ key: z.string().min(1), deleted: z.literal(true) }),
]);

/**
 * The local persistence layer (embedded default): a Powertools `BasePersistenceLayer` whose
 * records live in memory, loaded from and appended to `<data dir>/idempotency.jsonl`. `_putRecord`
 * has the DynamoDB layer's condition — the key is absent, or expired, or an `INPROGRESS` record
 * whose in-progress expiry has passed — checked and applied without an `await` in between, so
 * concurrent async calls in one process race exactly as conditional `PutItem`s do. Without a
 * directory it is memory only.
 */
export class LocalPersistenceLayer extends BasePersistenceLayer {
  private records: Map<string, StoredRecord> | undefined;
  private loading: Promise<Map<string, StoredRecord>> | undefined;
  private readonly journal: JsonlJournal | undefined;

  /** @param dir folder of `idempotency.jsonl`; undefined → memory only. */
  constructor(dir?: string) {
    super();
    this.journal = dir ? new JsonlJournal(join(dir, 'idempotency.jsonl')) : undefined;
  }

  protected async _putRecord(record: IdempotencyRecord): Promise<void> {
    const records = await this.load();
    const existing = records.get(record.idempotencyKey);
    const now = Date.now();
    if (
      existing &&
      !(existing.expiration !== undefined && existing.expiration < now / 1000) &&
      !(
        existing.status === IdempotencyRecordStatus.INPROGRESS &&
        existing.inProgressExpiration !== undefined &&
        existing.inProgressExpiration < now
      )
    ) {
      throw new IdempotencyItemAlreadyExistsError(
        `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
        toRecord(record.idempotencyKey, existing),
      );
    }
    const stored: StoredRecord = {
      status: record.getStatus() as StoredRecord['status'],
      ...(record.expiryTimestamp !== undefined ? { expiration: record.expiryTimestamp } : {}),
      ...(record.inProgressExpiryTimestamp !== undefined
        ? { inProgressExpiration: record.inProgressExpiryTimestamp }
        : {}),
      ...(this.isPayloadValidationEnabled() && record.payloadHash !== undefined
        ? { validation: record.payloadHash }
        : {}),
    };
    records.set(record.idempotencyKey, stored);
    await this.journal?.append({ key: record.idempotencyKey, record: stored });
  }

  protected async _getRecord(idempotencyKey: string): Promise<IdempotencyRecord> {
    const existing = (await this.load()).get(idempotencyKey);
    if (!existing) throw new IdempotencyItemNotFoundError();
    return toRecord(idempotencyKey, existing);
  }

  protected async _updateRecord(record: IdempotencyRecord): Promise<void> {
    const records = await this.load();
    const existing = records.get(record.idempotencyKey);
    const stored: StoredRecord = {
      ...(existing ?? {}),
      status: record.getStatus() as StoredRecord['status'],
      ...(record.expiryTimestamp !== undefined ? { expiration: record.expiryTimestamp } : {}),
      ...(record.responseData !== undefined ? { data: record.responseData } : {}),
      ...(this.isPayloadValidationEnabled() ? { validation: record.payloadHash } : {}),
    };
    records.set(record.idempotencyKey, stored);
    await this.journal?.append({ key: record.idempotencyKey, record: stored });
  }

  protected async _deleteRecord(record: IdempotencyRecord): Promise<void> {
    const records = await this.load();
    records.delete(record.idempotencyKey);
    await this.journal?.append({ key: record.idempotencyKey, deleted: true });
  }

  private async load(): Promise<Map<string, StoredRecord>> {
    if (this.records) return this.records;
    this.loading ??= this.read().finally(() => {
      this.loading = undefined;
    });
    const records = await this.loading;
    this.records ??= records;
    return this.records;
  }

  private async read(): Promise<Map<string, StoredRecord>> {
    const records = new Map<string, StoredRecord>();
    const journal = this.journal;
    if (!journal) return records;
    (await journal.readAll()).forEach((line, i) => {
      const parsed = JournalEntrySchema.safeParse(line);
      if (!parsed.success)
        throw new ValidationError(`${journal.path} line ${i + 1}: ${z.prettifyError(parsed.error)}`);
      if ('deleted' in parsed.data) records.delete(parsed.data.key);
      else records.set(parsed.data.key, parsed.data.record);
    });
    return records;
  }
}

function toRecord(idempotencyKey: string, stored: StoredRecord): IdempotencyRecord {
  return new IdempotencyRecord({
    idempotencyKey,
    status: stored.status,
    ...(stored.expiration !== undefined ? { expiryTimestamp: stored.expiration } : {}),
    ...(stored.inProgressExpiration !== undefined
      ? { inProgressExpiryTimestamp: stored.inProgressExpiration }
      : {}),
    ...(stored.data !== undefined ? { responseData: stored.data as JSONValue } : {}),
    ...(stored.validation !== undefined ? { payloadHash: stored.validation } : {}),
  });
}

/** How long a completed delivery's record is kept (and a repeat suppressed): 24 h, in seconds. */
export const DELIVERY_RECORD_TTL_S = 24 * 60 * 60;

/** Default time an unfinished (crashed) delivery holds its key before a retry may run it: 60 s. */
export const DELIVERY_IN_PROGRESS_MS = 60_000;

/**
 * Runs `deliver` at most once per reply (Powertools `makeIdempotent`, key `delivery#<md5 of the
 * JSON of replyUrn>`): the first call stores an `INPROGRESS` record, runs `deliver`, and stores
 * its result as `COMPLETED`; every later call with the same URN — a retried Lambda invocation,
 * a duplicated event — returns the stored result without running `deliver` again. While a
 * first call is still running, a concurrent one throws Powertools'
 * `IdempotencyAlreadyInProgressError`: let it fail the invocation so that the retry, later,
 * returns the completed result. When `deliver` throws, the record is deleted and the error
 * propagates (the retry runs it again). A process killed mid-delivery leaves an `INPROGRESS`
 * record that blocks its key until the in-progress expiry (the Lambda context's remaining time,
 * or `inProgressMs`) has passed.
 *
 * Powertools configures a persistence layer once, with the first config it sees, and that
 * config decides how keys are hashed. This helper's config (`eventKeyJmesPath: 'key'`, records
 * kept 24 h, md5) is the one every user of `deps.idempotency` must share: payload `{ key }`.
 * @param replyUrn URN of the reply Message being delivered (validated)
 * @param deliver the side effect; its result must be JSON (it is stored and returned on repeats)
 * @throws InvalidUrnError for a malformed URN; what `deliver` throws; Powertools idempotency errors
 */
export async function idempotentDelivery<T extends JSONValue>(
  persistence: BasePersistenceLayer,
  replyUrn: string,
  deliver: () => Promise<T>,
  options: { context?: Context; inProgressMs?: number } = {},
): Promise<T> {
  parseUrn(replyUrn);
  // A config per call (it carries this call's context); its settings are the same every time.
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'key',
    expiresAfterSeconds: DELIVERY_RECORD_TTL_S,
  });
  const inProgressMs = options.inProgressMs ?? DELIVERY_IN_PROGRESS_MS;
  config.registerLambdaContext(
    options.context ?? ({ getRemainingTimeInMillis: () => inProgressMs } as unknown as Context),
  );
  const run = makeIdempotent(async (_payload: { key: string }) => deliver(), {
    persistenceStore: persistence,
    config,
    keyPrefix: 'delivery',
  });
  return (await run({ key: replyUrn })) as T;
}
