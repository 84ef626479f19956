import type { JsonValue } from '../llm/port.js';
import type { Actor } from '../policy/port.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { ChunkSearch } from '../search/port.js';

/**
 * Tool implementations: the code behind a `common.Tool` resource. The tool step looks the
 * implementation up by function name, validates the model's arguments against the Tool's JSON
 * schema, then calls `execute` with a context that acts as the task's assistant (same policy
 * scope, so a tool cannot reach what its task could not).
 */

/** What a tool may use while executing one call. */
export interface ToolContext {
  /** The actor the tool acts as (kind `tool`, scoped to the calling task). */
  actor: Actor;
  /** Policy-gated resource access. */
  resources: ResourceIndex;
  /** Ranked retrieval over indexed chunks. */
  search: ChunkSearch;
  /** Aborted when the tool's timeout expires. */
  signal: AbortSignal;
}

/** One tool's code. */
export interface ToolImplementation {
  /** Function name, equal to the Tool resource's `function.name`. */
  readonly name: string;
  /**
   * Executes a call whose `input` already passed the Tool's JSON schema.
   * @returns a JSON result stored as the tool Message's content
   * @throws NotFoundError (→ status NOT_FOUND), ValidationError (→ INVALID_ARGUMENTS),
   *   PolicyDeniedError or anything else (→ ERROR)
   */
  execute(input: Record<string, unknown>, context: ToolContext): Promise<JsonValue>;
}
