import type * as EventBridgeSdk from '@aws-sdk/client-eventbridge';
import type { EventBridgeClient, EventBridgeClientConfig } from '@aws-sdk/client-eventbridge';
import { HAS_REQUIRE, nodeHttpHandler, requireSdk } from '../aws/sdk.js';
import { DeliveryFailedError } from '../errors.js';
import { keyOf } from '../urn.js';
import { REDRIVE_DETAIL_TYPE, REDRIVE_SOURCE } from './envelope.js';
import type { RedrivePublisher } from './redrive.js';

/** PutEvents takes at most 10 entries per request (EventBridge quotas). */
export const PUT_EVENTS_BATCH = 10;

let eventBridgeSdk: typeof EventBridgeSdk | undefined;

/** `@aws-sdk/client-eventbridge`, loaded at its first use with `require` (shared/aws/sdk.ts). */
function eventBridge(): typeof EventBridgeSdk {
  eventBridgeSdk ??= (
    HAS_REQUIRE ? require('@aws-sdk/client-eventbridge') : requireSdk('@aws-sdk/client-eventbridge')
  ) as typeof EventBridgeSdk;
  return eventBridgeSdk;
}

/** The EventBridge client of the sweeper: keep-alive HTTP with bounded timeouts, standard retries. */
export function createEventBridgeClient(config: EventBridgeClientConfig = {}): EventBridgeClient {
  const { EventBridgeClient } = eventBridge();
  const { NodeHttpHandler } = nodeHttpHandler();
  return new EventBridgeClient({
    requestHandler: new NodeHttpHandler({ connectionTimeout: 3_000, requestTimeout: 10_000 }),
    ...config,
  });
}

/** Options of {@link EventBridgePublisher}. */
export interface EventBridgePublisherOptions {
  client: EventBridgeClient;
  /** The resources bucket (`CLD_BUCKET`), named in each event's detail as S3 names it. */
  bucket: string;
  /** The event bus (`CLD_EVENT_BUS`): `default`, where S3 sends its events and the rules are. */
  eventBusName: string;
}

/**
 * The AWS adapter of {@link RedrivePublisher}: `PutEvents` (EventBridge API) in batches of 10,
 * each entry `Source: cld`, `DetailType: RESOURCE_PUT`, `Resources: [<bucket ARN>]` and
 * `Detail: {"bucket":{"name"},"object":{"key"},"urn","reason"}`; the routing table's rules match it
 * (shared/events/routing.ts) and the steps normalise it (`toResourcePut`). Entries PutEvents
 * reports as failed (`FailedEntryCount`, e.g. `ThrottlingException`) are sent once more.
 */
export class EventBridgePublisher implements RedrivePublisher {
  constructor(private readonly options: EventBridgePublisherOptions) {}

  async publish(urns: readonly string[], reason: 'redrive' | 'resume'): Promise<void> {
    const entries = urns.map((urn) => ({
      Source: REDRIVE_SOURCE,
      DetailType: REDRIVE_DETAIL_TYPE,
      EventBusName: this.options.eventBusName,
      Resources: [`arn:aws:s3:::${this.options.bucket}`],
      Detail: JSON.stringify({
        bucket: { name: this.options.bucket },
        object: { key: keyOf(urn) },
        urn,
        reason,
      }),
    }));
    for (let i = 0; i < entries.length; i += PUT_EVENTS_BATCH) {
      let batch = entries.slice(i, i + PUT_EVENTS_BATCH);
      for (let attempt = 1; batch.length > 0; attempt++) {
        const result = await this.options.client.send(
          new (eventBridge().PutEventsCommand)({ Entries: batch }),
        );
        if (!result.FailedEntryCount) break;
        const failed = (result.Entries ?? [])
          .map((entry, j) => (entry.ErrorCode ? { entry: batch[j], error: entry } : undefined))
          .filter((f) => f !== undefined);
        if (attempt >= 2)
          throw new DeliveryFailedError(
            `PutEvents failed for ${failed.length} of ${batch.length} events: ${failed[0]?.error.ErrorCode} ${failed[0]?.error.ErrorMessage ?? ''}`.trim(),
            { details: { failed: failed.map((f) => f.error.ErrorCode) } },
          );
        batch = failed.flatMap((f) => (f.entry ? [f.entry] : []));
      }
    }
  }
}
