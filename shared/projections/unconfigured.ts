import { BasePersistenceLayer, type IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import { ConfigError } from '../errors.js';
import type { ApplyResult, Projection, ProjectionStore, ProjectionValues } from './port.js';

/**
 * What a function without projections gets (shared/runtime/adapters/projections.ts `projectionsFor`): in
 * every mode, a function whose code does not use them (`FUNCTION_USES`: the tool, HTTP, Slack and
 * Teams functions, to which the stack grants no table); in AWS (`CLD_BUCKET` set), also one that
 * uses them when `CLD_TABLE` is not set. Using it is a bug in that table or in the grants, so it
 * fails loudly with a ConfigError ({@link UNCONFIGURED_MESSAGE}) — never a silent per-process
 * store, whose counters no other Lambda instance would see.
 */
export class UnconfiguredProjectionStore implements ProjectionStore {
  applyOnce(): Promise<ApplyResult> {
    return Promise.reject(unconfigured());
  }
  get(): Promise<ProjectionValues | undefined> {
    return Promise.reject(unconfigured());
  }
  list(): Promise<Projection[]> {
    return Promise.reject(unconfigured());
  }
  deleteConversation(): Promise<number> {
    return Promise.reject(unconfigured());
  }
}

/** The idempotency counterpart of {@link UnconfiguredProjectionStore}. */
export class UnconfiguredPersistenceLayer extends BasePersistenceLayer {
  protected _getRecord(): Promise<IdempotencyRecord> {
    return Promise.reject(unconfigured());
  }
  protected _putRecord(): Promise<void> {
    return Promise.reject(unconfigured());
  }
  protected _updateRecord(): Promise<void> {
    return Promise.reject(unconfigured());
  }
  protected _deleteRecord(): Promise<void> {
    return Promise.reject(unconfigured());
  }
}

/** The message of the ConfigError every call of the unconfigured store and layer rejects with. */
export const UNCONFIGURED_MESSAGE =
  'no projections were composed for this function: it does not use them ' +
  '(shared/runtime/function-uses.ts FUNCTION_USES), or it runs in AWS (CLD_BUCKET) without CLD_TABLE';

function unconfigured(): ConfigError {
  return new ConfigError(UNCONFIGURED_MESSAGE);
}
