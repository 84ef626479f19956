import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONValue } from '@aws-lambda-powertools/commons/types';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Context } from 'aws-lambda';
import { userActor } from '../domain/conversation.js';
import { IdempotencyConflictError } from '../errors.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Message } from '../resources/schemas.js';
import { childUrn } from '../urn.js';

/**
 * Exactly-once side effects that leave the system (STYLE.md "idempotency is designed in"): a
 * delivery runs through Powertools `makeIdempotent`, keyed by a deterministic string (the reply's
 * URN), on the Powertools `BasePersistenceLayer` of the Deps (`deps.idempotency`):
 * `DynamoDBPersistenceLayer` on the projections table in AWS (partition `pk` = `idempotency`,
 * `sk` = `cld.reply#<md5 of the key>`; shared/projections/idempotency.ts), the journaled local
 * layer in the embedded default and `serve`. The effect's JSON result is stored, so a duplicate or
 * retried event gets the first result back (the Slack `ts` of a posted message) without repeating
 * the effect.
 */

/** How long a completed delivery is remembered, in seconds (longer than EventBridge's and Lambda's retries). */
export const DELIVERY_RECORD_SECONDS = 86_400;

/**
 * How long an in-progress delivery blocks duplicates before it is treated as abandoned (a crash
 * between the call and the record), in ms. The step has no Lambda context to take the remaining
 * time from, so the lock is this fixed window: it must exceed one delivery's timeout plus retries,
 * and the reply function's Lambda timeout must not exceed it (a timed-out invocation's lock then
 * outlives the invocation, so no retry posts while it might still be posting;
 * infra/lib/functions.ts, asserted in test/infra/stack.test.ts).
 */
export const DELIVERY_LOCK_MS = 60_000;

/**
 * How long a duplicate waits for an in-progress delivery of the same key to finish before it
 * gives up (and fails, to be retried later), in ms. Polled every {@link DUPLICATE_POLL_MS}.
 */
export const DUPLICATE_WAIT_MS = 5_000;

/** Poll interval of a waiting duplicate, in ms. */
export const DUPLICATE_POLL_MS = 100;

/** Runs `effect` once per key; later calls with the same key return the stored result. */
export type Once = <T extends JSONValue>(key: string, effect: () => Promise<T>) => Promise<T>;

/**
 * Builds {@link Once} on a persistence layer. A call that finds the key in progress (a duplicate
 * delivered while the first is posting) waits up to `waitMs` for the stored result.
 * @throws from the returned function: `IdempotencyAlreadyInProgressError` when the key is still
 *   held after `waitMs` (the event is retried later), or whatever `effect` throws (the in-progress
 *   record is then deleted, so a retry runs the effect again).
 */
export function createOnce(
  persistenceStore: BasePersistenceLayer,
  keyPrefix = 'cld.reply',
  waitMs = DUPLICATE_WAIT_MS,
): Once {
  const lockWindow = { getRemainingTimeInMillis: () => DELIVERY_LOCK_MS } as Context;
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'key',
    expiresAfterSeconds: DELIVERY_RECORD_SECONDS,
    lambdaContext: lockWindow,
  });
  const run = makeIdempotent(
    async (_payload: { key: string }, effect: () => Promise<JSONValue>): Promise<JSONValue> => effect(),
    { persistenceStore, config, keyPrefix, dataIndexArgument: 0 },
  );
  return (async (key: string, effect: () => Promise<JSONValue>) => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      try {
        return await run({ key }, effect);
      } catch (error) {
        if (!(error instanceof IdempotencyAlreadyInProgressError) || Date.now() >= deadline) throw error;
        await sleep(DUPLICATE_POLL_MS);
      }
    }
  }) as Once;
}

/** The guards built so far, one per persistence layer (a layer takes its config from its first user). */
const guards = new WeakMap<BasePersistenceLayer, Once>();

/**
 * The delivery guard of a persistence layer (`deps.idempotency`), built once per layer and
 * reused: Powertools configures a layer from the first `IdempotencyConfig` it sees, so every
 * delivery of a process goes through the same {@link createOnce} (key prefix `cld.reply`).
 */
export function deliveryGuard(persistenceStore: BasePersistenceLayer): Once {
  let once = guards.get(persistenceStore);
  if (!once) {
    once = createOnce(persistenceStore);
    guards.set(persistenceStore, once);
  }
  return once;
}

/**
 * The fingerprint of an HTTP request for its `Idempotency-Key` (IETF draft "The Idempotency-Key
 * HTTP Header Field" §2.4): SHA-256 (hex) of the parsed body's canonical JSON (fields sorted by
 * name, absent fields left out), so formatting and field order do not make two bodies differ.
 */
export function requestFingerprint(body: Readonly<Record<string, string | undefined>>): string {
  const canonical = Object.entries(body)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * Checks that a retried request with an `Idempotency-Key` is the request that first used it: the
 * user Message the key names was stored with this fingerprint (or, stored before fingerprints
 * were kept, with this content).
 * @throws IdempotencyConflictError when the key came with another body (HTTP 422)
 */
export function assertSameRequest(stored: Message, fingerprint: string, content: string): void {
  const same =
    stored.requestHash !== undefined ? stored.requestHash === fingerprint : stored.content === content;
  if (!same)
    throw new IdempotencyConflictError(
      'this Idempotency-Key was already used with another request body; use a new key for a new message',
    );
}

/**
 * Checks an `Idempotency-Key` request against the user Message its key names *before* anything is
 * stored (issue 22 finding 9): a key reused with another body is refused with nothing written —
 * no resource, and no touch of the open-conversations projection (`projections/open.jsonl`
 * locally), which storing the message would make. Two requests racing with one key and different
 * bodies still meet {@link assertSameRequest} after the conditional create; the loser's touch then
 * records the winner's new message, which is open.
 * @param conversation URN of the conversation the message belongs to; `messageName` its name
 * @returns the stored Message (a retry of the same request), or undefined when the key is new
 * @throws IdempotencyConflictError (HTTP 422) when the key came with another body; PolicyDeniedError
 */
export async function checkPriorRequest(
  resources: ResourceIndex,
  request: { user: string; conversation: string; messageName: string; fingerprint: string; content: string },
): Promise<Message | undefined> {
  const urn = childUrn(request.conversation, 'common.Message', request.messageName);
  const stored = await resources.find(userActor(request.user, request.conversation), 'common.Message', urn);
  if (stored) assertSameRequest(stored, request.fingerprint, request.content);
  return stored;
}
