import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { lazyStrictObject } from '../resources/lazy-schema.js';

/**
 * Projection store port (DESIGN.md principle 2: "S3 is the event store; DynamoDB holds
 * projections"). A projection is a small item derived from resources — how many subtasks of a
 * task have finished in a round, what a conversation has spent — that must change atomically
 * under at-least-once, unordered delivery. Every projection can be recomputed from the
 * resources alone (shared/projections/replay.ts).
 *
 * The one write primitive is {@link ProjectionStore.applyOnce}: add `increments` to the
 * projection's values and record `member`, **only if `member` was not applied yet**, atomically.
 * A retried or duplicated handler applies the same member again and changes nothing, so counting
 * a subtask output or charging a model turn happens exactly once however often its event is
 * delivered. An apply costs O(1) whatever the number of members: the hot path (`applyOnce`,
 * `get`) returns the values only; the member list is read by `list` (replay, operators).
 *
 * Item shapes on the table's fixed key schema (partition key `pk` (S), sort key `sk` (S), TTL
 * attribute `expiration`, on-demand; created by the stack):
 *
 * | item | `pk` | `sk` | other attributes |
 * |---|---|---|---|
 * | round counter of a parent (a task, or the user Message for root tasks) | conversation URN | `done#<parent URN below the conversation>#<round>`, e.g. `done#/common.Message.ab…/plan.Task.cd…#0` | `done` (N): outputs counted; `members` (N): members applied |
 * | conversation budget | conversation URN | `budget` | `tokens`, `modelCalls`, `toolCalls` (N, absent = 0); `members` (N); `since` (S, ISO 8601): time of the first charge |
 * | member of a projection (one per applied member) | conversation URN | `member#<SHA-256 of projection name, NUL, member; 32 hex>` | `projection` (S): the projection's name; `member` (S) |
 * | idempotency record (Powertools `DynamoDBPersistenceLayer`) | `idempotency` | `<prefix>#<md5 of the payload>` | `status`, `expiration` (N, TTL, s), `in_progress_expiration` (N, ms), `data` |
 *
 * Every item has a fixed size (a member is at most 1,024 bytes), so none can reach DynamoDB's
 * 400 KB item limit however long a conversation runs. One conversation's projections and members
 * share one partition, so one `Query` on `pk` lists them (replay compares them all) — and a
 * single conversation's writes are bounded by the partition's write throughput (1,000 WCU/s),
 * far above what a conversation's steps produce.
 */

/** Key of one projection: the partition is the conversation, the name the sort key. */
export interface ProjectionKey {
  /** URN of the conversation (`cld:common.Conversation.<hash>`); the partition key `pk`. */
  conversation: string;
  /** Projection name within the conversation; the sort key `sk` (≤ 1,024 bytes). */
  name: string;
}

/** The values of one projection: what the hot path reads (no members, O(1) in size). */
export interface ProjectionValues extends ProjectionKey {
  /** Named non-negative integer values (`done`, `tokens`, ...); a value never added is absent. */
  values: Record<string, number>;
  /** The `since` given with the first apply that carried one (ISO 8601), if any. */
  since?: string;
}

/** One projection with its members (from {@link ProjectionStore.list}: replay, operators). */
export interface Projection extends ProjectionValues {
  /** Members applied so far, sorted; each was applied exactly once. */
  members: string[];
}

/** What {@link ProjectionStore.applyOnce} did. */
export interface ApplyResult {
  /** True when this call applied the member; false when it had been applied before (no change). */
  applied: boolean;
  /**
   * The projection's values after the call: this apply included; read consistently, so a
   * concurrent apply of another member may be included too.
   */
  projection: ProjectionValues;
}

/** The port both adapters (DynamoDB, local) implement; one contract suite (test/projections). */
export interface ProjectionStore {
  /**
   * Applies `member` once: atomically adds each increment to its value, adds `member` to the
   * member set and sets `since` if the projection has none — unless `member` was applied before,
   * in which case nothing changes. Creates the projection on first use.
   * @param increments value name → non-negative integer to add (names: `[A-Za-z][A-Za-z0-9]{0,31}`,
   *   not a reserved attribute such as `pk`, `sk`, `members`, `since`, `expiration`)
   * @throws ValidationError for a malformed key, member or increment
   */
  applyOnce(
    key: ProjectionKey,
    member: string,
    increments: Readonly<Record<string, number>>,
    options?: { since?: string },
  ): Promise<ApplyResult>;
  /** Reads one projection's values (strongly consistent); undefined when it was never applied to. */
  get(key: ProjectionKey): Promise<ProjectionValues | undefined>;
  /** All projections of a conversation with their members, sorted by name (O(members): cold path). */
  list(conversation: string): Promise<Projection[]>;
  /** Deletes every projection of a conversation (before a rebuild); returns how many. */
  deleteConversation(conversation: string): Promise<number>;
}

/** Attribute names a value may not take (the key, the member set and the TTL/idempotency attributes). */
export const RESERVED_ATTRIBUTES: ReadonlySet<string> = new Set([
  'pk',
  'sk',
  'members',
  'since',
  'expiration',
  'status',
  'data',
  'validation',
  'in_progress_expiration',
]);

/** Sort-key prefix of member items (DynamoDB); no projection name may start with it. */
export const MEMBER_PREFIX = 'member#';

const VALUE_NAME = /^[A-Za-z][A-Za-z0-9]{0,31}$/;
const CONVERSATION = /^cld:common\.Conversation\.[0-9a-f]{16}$/;

/** Schema of a projection read back from a store (stored JSON is input from outside). */
export const ProjectionSchema = lazyStrictObject(() => ({
  conversation: z.string().regex(CONVERSATION),
  name: z.string().min(1).max(1_024),
  values: z.record(z.string().regex(VALUE_NAME), z.number().int().nonnegative()),
  members: z.array(z.string().min(1)),
  since: z.string().optional(),
}));

/**
 * Validates the arguments of an apply (shared by both adapters so they reject the same input).
 * @throws ValidationError naming the problem
 */
export function assertValidApply(
  key: ProjectionKey,
  member: string,
  increments: Readonly<Record<string, number>>,
): void {
  assertValidKey(key);
  if (typeof member !== 'string' || member.length === 0 || Buffer.byteLength(member) > 1_024)
    throw new ValidationError('projection member must be a non-empty string of at most 1,024 bytes');
  for (const [name, amount] of Object.entries(increments)) {
    if (!VALUE_NAME.test(name) || RESERVED_ATTRIBUTES.has(name))
      throw new ValidationError(`projection value name "${name}" is not allowed`);
    if (!Number.isSafeInteger(amount) || amount < 0)
      throw new ValidationError(`projection increment ${name}=${amount} is not a non-negative integer`);
  }
}

/**
 * Validates a projection key: a conversation URN and a non-empty name of at most 1,024 bytes.
 * @throws ValidationError
 */
export function assertValidKey(key: ProjectionKey): void {
  if (!CONVERSATION.test(key.conversation))
    throw new ValidationError(`projection partition must be a conversation URN, got "${key.conversation}"`);
  if (!key.name || Buffer.byteLength(key.name) > 1_024)
    throw new ValidationError('projection name must be non-empty and at most 1,024 bytes');
  if (key.name.startsWith(MEMBER_PREFIX))
    throw new ValidationError(`projection name may not start with "${MEMBER_PREFIX}" (member items)`);
}
