import { BasePersistenceLayer, type IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';
import { ConfigError } from '../errors.js';
import type { ApplyResult, Projection, ProjectionStore } from './port.js';

/**
 * What a function without a projections table gets (in AWS, `CLD_BUCKET` without `CLD_TABLE`:
 * the stack grants the table only to the functions whose code uses it, and the tool function's
 * does not). Using it is a bug in the grants, so it fails loudly with a ConfigError naming
 * `CLD_TABLE` — never a silent per-process store, whose counters no other Lambda instance
 * would see.
 */
export class UnconfiguredProjectionStore implements ProjectionStore {
  applyOnce(): Promise<ApplyResult> {
    return Promise.reject(unconfigured());
  }
  get(): Promise<Projection | undefined> {
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

function unconfigured(): ConfigError {
  return new ConfigError('CLD_TABLE is not set: this function has no projections table (CLD_BUCKET is set)');
}
