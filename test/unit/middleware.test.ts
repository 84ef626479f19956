import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/errors.js';
import { localContext } from '../../shared/runtime/local.js';
import { createStepHandler } from '../../shared/runtime/middleware.js';

/** The step middleware chain, for what the domain tests do not reach: a failed cold start. */
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
});
