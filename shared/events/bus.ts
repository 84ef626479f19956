import type { S3ObjectCreatedEvent } from './envelope.js';

/**
 * Event bus port: where storage notifications go. In AWS, S3 itself publishes to EventBridge
 * and nothing in the code calls this; locally the notifying storage publishes to the
 * {@link LocalBus}.
 */
export interface EventBus {
  publish(event: S3ObjectCreatedEvent): void;
}
