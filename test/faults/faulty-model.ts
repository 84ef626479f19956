import { createHash } from 'node:crypto';
import { ModelError } from '../../shared/errors.js';
import type { ChatModel, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { chance, currentInvocation } from '../../shared/storage/faulty.js';

/** Counters of injected model faults. */
export interface ModelFaultStats {
  calls: number;
  throttled: number;
  timedOut: number;
}

/**
 * Wraps a model so that calls fail as Bedrock's do under load (issue 5: "the model adapter
 * throttling or timing out"): at `rate`, a call made by a handler either throws a retryable
 * `ModelError` at once (throttling, as the Bedrock adapter reports a `ThrottlingException` after
 * its own retries) or waits `timeoutMs` and throws a retryable `ModelError` (a timeout). The
 * steps let a retryable model error fail the invocation, so the event is retried. Like the
 * crash faults these are transient (a delivery's last attempt is never faulted) and decided by a
 * hash of the seed, the request and the attempt number, not by timing.
 */
export class FaultyChatModel implements ChatModel {
  readonly stats: ModelFaultStats = { calls: 0, throttled: 0, timedOut: 0 };
  constructor(
    private readonly inner: ChatModel,
    private readonly options: { rate: number; seed?: number; timeoutMs?: number },
  ) {}

  get name(): string {
    return this.inner.name;
  }

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    this.stats.calls++;
    const invocation = currentInvocation();
    if (invocation && !invocation.delivery.final) {
      // Keyed by the request itself: the same logical call (a plan, turn k, verdict r) gets the
      // same decision whichever event's invocation makes it.
      const call = createHash('sha256').update(JSON.stringify(request)).digest('hex');
      const draw = (what: string) => chance(this.options.seed ?? 11, what, call, invocation.delivery.attempt);
      if (draw('model') < this.options.rate) {
        if (draw('kind') < 0.5) {
          this.stats.throttled++;
          throw new ModelError('ThrottlingException: Too many requests, please wait (injected)', {
            retryable: true,
          });
        }
        this.stats.timedOut++;
        const timeoutMs = this.options.timeoutMs ?? 25;
        await new Promise((resolve) => setTimeout(resolve, timeoutMs));
        throw new ModelError(`model call timed out after ${timeoutMs} ms (injected)`, { retryable: true });
      }
    }
    return this.inner.converse(request);
  }
}
