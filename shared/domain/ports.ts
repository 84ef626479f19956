import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChatModel, Embedder } from '../llm/port.js';
import type { OpenConversationStore } from '../projections/open-conversations.js';
import type { ProjectionStore } from '../projections/port.js';
import type { UserConversationStore } from '../projections/user-conversations.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Assistant, Tool } from '../resources/schemas.js';
import type { ChunkSearch } from '../search/port.js';
import type { McpRuntime } from '../tools/mcp/sessions.js';
import type { ToolImplementation } from '../tools/port.js';
import type { Limits } from './limits.js';

/**
 * What a step needs, built once per cold start by a composition root (shared/runtime/compose.ts for
 * Lambda, shared/runtime/local.ts for the embedded default) and passed in. Domain code depends on
 * these ports only.
 */
export interface Deps {
  resources: ResourceIndex;
  model: ChatModel;
  embedder: Embedder;
  search: ChunkSearch;
  /** Tool implementations by function name. */
  tools: ReadonlyMap<string, ToolImplementation>;
  /** The catalog (assistants and tools), as stored. */
  catalog: { assistants: readonly Assistant[]; tools: readonly Tool[] };
  limits: Limits;
  /**
   * Projections (subtask round counters, conversation budgets) derived from the resources:
   * DynamoDB in AWS (`CLD_TABLE`), the local store in the embedded default. See
   * shared/projections/port.ts for the item shapes.
   */
  projections: ProjectionStore;
  /**
   * Powertools idempotency persistence for side effects that leave the system (a reply posted
   * to Slack or Teams): `DynamoDBPersistenceLayer` on the projections table in AWS, the local
   * layer in the embedded default. Use it through `idempotentDelivery()`
   * (shared/projections/idempotency.ts), keyed by the reply's URN.
   */
  idempotency: BasePersistenceLayer;
  /**
   * The open-conversations projection (shared/projections/open-conversations.ts): the step
   * middleware touches it after every invocation that did something, and the sweeper reads it.
   * Absent in functions that do not use the projections table.
   */
  openConversations?: OpenConversationStore;
  /**
   * The conversations-per-user projection (shared/projections/user-conversations.ts): the HTTP
   * channel records each user Message it stores and `GET /conversations` lists from it. Absent in
   * functions that do not use the projections table.
   */
  userConversations?: UserConversationStore;
  /**
   * Configured MCP servers and the open sessions to them (shared/tools/mcp/): composed where tools
   * run (the tool step, the embedded default) when servers are configured; absent otherwise, and
   * a discovered tool's call is then NOT_FOUND.
   */
  mcp?: McpRuntime;
  logger: Logger;
  now: () => Date;
}
