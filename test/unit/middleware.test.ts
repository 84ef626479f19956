import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import type { Deps } from '../../shared/domain/ports.js';
import { ConfigError } from '../../shared/errors.js';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { memoiseComposition } from '../../shared/runtime/compose.js';
import { localContext } from '../../shared/runtime/local.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';
import { childUrn, keyOf } from '../../shared/urn.js';

/** The step middleware chain, for what the domain tests do not reach: a failed cold start. */

const CONVERSATION = childUrn(undefined, 'common.Conversation', 'middleware-test');
const MESSAGE = childUrn(CONVERSATION, 'common.Message', 'hello');
/** A user Message's S3 event: what the plan step's route accepts. */
const USER_MESSAGE_EVENT = s3ObjectCreatedEvent('cld-resources-test', keyOf(MESSAGE), 100);

/** Deps with only what the chain itself touches (the logger); the domain step here uses nothing else. */
function minimalDeps(): Deps {
  return { logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }) } as unknown as Deps;
}

describe('createStepHandler', () => {
  it('rejects with the composition error itself when the cold-start composition fails', async () => {
    let domainCalled = false;
    const handler = createStepHandler(
      'plan',
      async () => {
        domainCalled = true;
        return { action: 'ignored', urn: 'cld:common.Conversation.0000000000000000' };
      },
      () => Promise.reject(new ConfigError('invalid configuration: CLD_LIMITS is not JSON')),
    );
    const failure = await handler({}, localContext('plan')).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toBe('invalid configuration: CLD_LIMITS is not JSON');
    expect(domainCalled).toBe(false);
  });

  it('retries a failed cold start at the next invocation, then keeps the composed Deps', async () => {
    let compositions = 0;
    const deps = minimalDeps();
    const getDeps = memoiseComposition(async () => {
      compositions += 1;
      if (compositions === 1) throw new ConfigError('S3 was throttled while the policy bundle loaded');
      return deps;
    });
    const handled: string[] = [];
    const handler = createStepHandler(
      'plan',
      async (event, given) => {
        expect(given).toBe(deps);
        handled.push(event.urn);
        return { action: 'ignored', urn: event.urn };
      },
      getDeps,
    );

    await expect(handler(USER_MESSAGE_EVENT, localContext('plan'))).rejects.toThrow('S3 was throttled');
    const second = await handler(USER_MESSAGE_EVENT, localContext('plan'));
    const third = await handler(USER_MESSAGE_EVENT, localContext('plan'));

    expect(second).toEqual({ action: 'ignored', urn: MESSAGE });
    expect(third).toEqual({ action: 'ignored', urn: MESSAGE });
    expect(handled).toEqual([MESSAGE, MESSAGE]);
    expect(compositions).toBe(2);
  });
});

describe('memoiseComposition', () => {
  it('composes once for every call after a success', async () => {
    let calls = 0;
    const get = memoiseComposition(async () => ({ n: ++calls }));

    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();

    expect(calls).toBe(1);
    expect(a).toBe(b);
    expect(c).toBe(a);
  });

  it('forgets a rejected composition, so each call after a failure composes again', async () => {
    let calls = 0;
    const get = memoiseComposition(async () => {
      calls += 1;
      if (calls <= 2) throw new Error(`failure ${calls}`);
      return calls;
    });

    await expect(get()).rejects.toThrow('failure 1');
    await expect(get()).rejects.toThrow('failure 2');
    expect(await get()).toBe(3);
    expect(await get()).toBe(3);
    expect(calls).toBe(3);
  });
});
