import { keyOf } from '../urn.js';
import type { EventBus } from './bus.js';
import { s3ObjectCreatedEvent } from './envelope.js';

/**
 * Re-emitting `RESOURCE_PUT` for stored resources (issue 12): the port the sweeper and `resume`
 * re-drive pending work through. In AWS the EventBridge adapter puts the sweeper's event (source
 * `cld`, shared/events/eventbridge-publisher.ts) on the default bus, where the routing table's
 * rules match it as they match S3's; locally the events go to the in-process bus in the shape S3
 * sends, as the notifying storage publishes them.
 */
export interface RedrivePublisher {
  /**
   * Emits one `RESOURCE_PUT` per URN (each a stored resource).
   * @throws what the bus throws (the EventBridge adapter: entries still failing after a retry)
   */
  publish(urns: readonly string[], reason: 'redrive' | 'resume'): Promise<void>;
}

/** The local adapter: S3 "Object Created" events for the resources' keys, on the local bus. */
export class LocalRedrivePublisher implements RedrivePublisher {
  /**
   * @param bus the runtime's bus
   * @param bucket the local bucket name the storage's own events carry
   */
  constructor(
    private readonly bus: EventBus,
    private readonly bucket: string,
  ) {}

  async publish(urns: readonly string[]): Promise<void> {
    for (const urn of urns) this.bus.publish(s3ObjectCreatedEvent(this.bucket, keyOf(urn), 0));
  }
}
