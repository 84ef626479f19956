import type { EventBus } from '../events/bus.js';
import { s3ObjectCreatedEvent } from '../events/envelope.js';
import type { FindOptions, PutResult, StorageInterface } from './port.js';

/**
 * Decorates a storage so that every create publishes the S3 "Object Created" EventBridge
 * event S3 would send for it (local mode). A put that finds the key existing publishes
 * nothing, as S3 does not either for a rejected conditional write.
 */
export class NotifyingStorage implements StorageInterface {
  constructor(
    private readonly inner: StorageInterface,
    private readonly bus: EventBus,
    /** Bucket name put into the events (the local stand-in for the resources bucket). */
    readonly bucket: string,
  ) {}

  get(key: string): Promise<Buffer> {
    return this.inner.get(key);
  }

  getMany(keys: readonly string[]): Promise<Map<string, Buffer>> {
    return this.inner.getMany(keys);
  }

  async put(key: string, data: Buffer | string): Promise<PutResult> {
    const result = await this.inner.put(key, data);
    if (result.created) this.bus.publish(s3ObjectCreatedEvent(this.bucket, key, Buffer.byteLength(data)));
    return result;
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  findByPrefix(prefix: string, options?: FindOptions): Promise<string[]> {
    return this.inner.findByPrefix(prefix, options);
  }

  findByExtension(extension: string): Promise<string[]> {
    return this.inner.findByExtension(extension);
  }
}
