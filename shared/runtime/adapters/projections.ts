import { join } from 'node:path';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { LocalProjectionStore } from '../../projections/local.js';
import {
  LocalOpenConversationStore,
  type OpenConversationStore,
} from '../../projections/open-conversations.js';
import type { ProjectionStore } from '../../projections/port.js';
import { UnconfiguredPersistenceLayer, UnconfiguredProjectionStore } from '../../projections/unconfigured.js';
import {
  LocalUserConversationStore,
  type UserConversationStore,
} from '../../projections/user-conversations.js';
import { BUNDLED_FUNCTION, EVERYTHING, type FunctionUses, notUsed } from '../function-uses.js';
import type { Env } from '../settings.js';

/*
 * The projections adapters of Deps (projection store, idempotency layer, the open-conversations
 * and conversations-per-user projections), each loaded with `import()` on the branch that uses it.
 */

/**
 * The projection store and idempotency layer for a config and what the function uses: for a
 * function that uses the projections, DynamoDB (one client for both) when `CLD_BUCKET` and
 * `CLD_TABLE` are set; with `CLD_BUCKET` alone ones that fail with a ConfigError naming
 * `CLD_TABLE` when used; otherwise the local store and layer persisted under
 * `<CLD_DATA_DIR>/projections`. A function that does not use them (the tool step, the HTTP,
 * Slack and Teams functions, to which the stack grants no table) gets the failing ones in every
 * mode.
 * @throws ConfigError when `uses.table` and the code was bundled without the projections adapters
 */
export async function projectionsFor(
  env: Env,
  uses: Readonly<FunctionUses> = EVERYTHING,
): Promise<{
  projections: ProjectionStore;
  idempotency: BasePersistenceLayer;
  openConversations?: OpenConversationStore;
  userConversations?: UserConversationStore;
}> {
  if (process.env.CLD_BUNDLE_TABLE !== 'false' && uses.table) {
    if (env.CLD_BUCKET && env.CLD_TABLE) {
      const [
        { createDynamoDBClient, DynamoDBProjectionStore },
        { dynamoDBIdempotencyLayer },
        { DynamoDBOpenConversationStore },
        { DynamoDBUserConversationStore },
      ] = await Promise.all([
        import('../../projections/dynamodb.js'),
        import('../../projections/idempotency.js'),
        import('../../projections/open-conversations-dynamodb.js'),
        import('../../projections/user-conversations-dynamodb.js'),
      ]);
      const client = createDynamoDBClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
      return {
        projections: new DynamoDBProjectionStore({ client, tableName: env.CLD_TABLE }),
        idempotency: await dynamoDBIdempotencyLayer({ client, tableName: env.CLD_TABLE }),
        openConversations: new DynamoDBOpenConversationStore({ client, tableName: env.CLD_TABLE }),
        userConversations: new DynamoDBUserConversationStore({ client, tableName: env.CLD_TABLE }),
      };
    }
    if (!env.CLD_BUCKET) {
      const { LocalPersistenceLayer } = await import('../../projections/idempotency.js');
      const dir = join(env.CLD_DATA_DIR, 'projections');
      return {
        projections: new LocalProjectionStore(dir),
        idempotency: new LocalPersistenceLayer(dir),
        openConversations: new LocalOpenConversationStore(dir),
        userConversations: new LocalUserConversationStore(dir),
      };
    }
  } else if (uses.table) {
    throw notUsed(BUNDLED_FUNCTION, 'the projections');
  }
  return { projections: new UnconfiguredProjectionStore(), idempotency: new UnconfiguredPersistenceLayer() };
}

/** The idempotency layer of Deps composed without one: in-memory local, or the failing one in a bundle without the projections. */
export async function defaultIdempotency(): Promise<BasePersistenceLayer> {
  if (process.env.CLD_BUNDLE_TABLE !== 'false') {
    const { LocalPersistenceLayer } = await import('../../projections/idempotency.js');
    return new LocalPersistenceLayer();
  }
  return new UnconfiguredPersistenceLayer();
}
