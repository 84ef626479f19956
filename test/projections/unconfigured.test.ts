import { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/errors.js';
import type { ProjectionStore } from '../../shared/projections/port.js';
import {
  UNCONFIGURED_MESSAGE,
  UnconfiguredPersistenceLayer,
  UnconfiguredProjectionStore,
} from '../../shared/projections/unconfigured.js';
import { composeFromEnv } from '../../shared/runtime/compose.js';

/**
 * The projections of a function that has none (shared/projections/unconfigured.ts): every call
 * fails with a ConfigError that says what is true in each mode it is composed in, locally for a
 * function that does not use them, in AWS also for one without `CLD_TABLE`.
 */

const CONVERSATION = 'cld:common.Conversation.0123456789abcdef';
const key = { conversation: CONVERSATION, name: 'budget' };

describe('UnconfiguredProjectionStore and UnconfiguredPersistenceLayer', () => {
  it('reject every call with a ConfigError naming FUNCTION_USES and CLD_TABLE, not claiming CLD_BUCKET is set', async () => {
    const store: ProjectionStore = new UnconfiguredProjectionStore();
    for (const call of [
      store.applyOnce(key, 'm1', { modelCalls: 1 }),
      store.get(key),
      store.list(CONVERSATION),
      store.deleteConversation(CONVERSATION),
    ]) {
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(UNCONFIGURED_MESSAGE);
    }
    expect(UNCONFIGURED_MESSAGE).toMatch(/FUNCTION_USES/);
    expect(UNCONFIGURED_MESSAGE).toMatch(/CLD_TABLE/);
    expect(UNCONFIGURED_MESSAGE).not.toMatch(/CLD_BUCKET is set/);

    const layer = new UnconfiguredPersistenceLayer();
    layer.configure({ config: new IdempotencyConfig({}), functionName: 'reply' });
    await expect(layer.getRecord({ id: 1 })).rejects.toThrow(UNCONFIGURED_MESSAGE);
  });

  it('is what a local function that does not use the projections gets (no CLD_BUCKET)', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = await mkdtemp(join(tmpdir(), 'cld-unconfigured-'));
    try {
      const deps = await composeFromEnv({
        CLD_DATA_DIR: dir,
        CLD_FUNCTION: 'slack',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
      });
      await expect(deps.projections.get(key)).rejects.toThrow(UNCONFIGURED_MESSAGE);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
