import type { ResourceEvent } from './envelope.js';

/**
 * Event bus port: where storage notifications go. In AWS, S3 itself publishes to EventBridge
 * and nothing in the code calls this; locally the notifying storage publishes to the
 * {@link LocalBus}, and the local sweeper re-emits events there.
 */
export interface EventBus {
  publish(event: ResourceEvent): void;
}
