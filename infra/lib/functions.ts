import { catalogObjects } from '../../shared/catalog/catalog.js';
import { DELIVERY_LOCK_MS } from '../../shared/channels/idempotency.js';
import { IDEMPOTENCY_PK } from '../../shared/projections/idempotency.js';
import { OPEN_PARTITION } from '../../shared/projections/open-conversations.js';
import { userPartition } from '../../shared/projections/user-conversations.js';
import type { ChannelSecretName } from './secrets.js';

/**
 * The function table: one entry per Lambda function of the stack. Adding a function is one entry
 * here; routes of the routing table (shared/events/routing.ts) and of the HTTP API
 * (shared/channels/routes.ts `API_ROUTES`) name their function by the key of this table, and a
 * route whose function has no entry (or one of the other trigger) fails synth.
 *
 * Access is declared as data and turned into IAM statements by infra/lib/access.ts; the env var
 * naming a resource is set only together with its grant (STYLE.md "Infra").
 */

/**
 * Object-key patterns (IAM globs: `*` any run of characters) of the resources bucket. Resource
 * keys are `cld/<URN path>_<shape>.json` (shared/urn.ts `keyOf`), so `cld/<type>.*` covers the
 * resources of that root type and their subtrees.
 */
export const KEYS = {
  /** Every conversation subtree: the event log the steps read and extend (DESIGN.md "URNs"). */
  conversations: 'cld/common.Conversation.*',
  /** The catalog (read by the steps; seeded create-only at deploy, see {@link catalogKeys}). */
  assistants: 'cld/common.Assistant.*',
  tools: 'cld/common.Tool.*',
  /**
   * Ingested documents and their chunks: read by the tool step (the `read` tool) and by the HTTP
   * API function (`GET /resources/<urn>` opens what an answer cites; policy rule
   * `user-read-corpora`). The assistant cites chunk URNs that tool results returned, without
   * reading them (shared/domain/assistant.ts).
   */
  documents: 'cld/doc.*',
  /**
   * The chunk index generations (`indexes/chunks.<n>.json`) and their shard packs
   * (`indexes/chunks-shards/<n>/…`, read from the first search on) of the tool step
   * (the only function that composes `deps.search`: `FUNCTION_USES` in shared/runtime/function-uses.ts).
   */
  index: 'indexes/*',
  /**
   * The tool registry (shared/tools/registry.ts: discovered MCP tools, discoveries, operators'
   * decisions), read by the assistant step (to offer approved tools), the tool step (to run only
   * approved ones) and the HTTP API's operator routes.
   */
  registry: 'cld/tool.Registry.*',
  /** Operators' decisions on discovered tools: the only registry keys a function creates (the HTTP API's operator routes). */
  toolApprovals: 'cld/tool.Registry.*_Registry-Server-Tool-ToolApproval.json',
} as const;

/**
 * Why each wildcard key pattern is needed (the written reason of its cdk-nag
 * `AwsSolutions-IAM5` acknowledgement). A pattern without a reason here fails synth.
 */
export const KEY_PATTERN_REASONS: Readonly<Record<string, string>> = {
  [KEYS.conversations]:
    'Conversation URNs are minted at run time (one hash per conversation), so IAM cannot name them in advance; ' +
    'which conversation, task and resource a step may touch is decided per request by the policy gate ' +
    '(policies/rules.json, OPA), and writes are create-only (s3:if-none-match condition).',
  [KEYS.assistants]:
    'Catalog Assistants, read-only under this pattern (the keys a step may create are listed exactly).',
  [KEYS.tools]:
    'Catalog Tools, read-only under this pattern (the keys a step may create are listed exactly).',
  [KEYS.documents]:
    'Ingested Documents and their Chunks (written by the operator), read-only for the functions: the tool step ' +
    'reads them for the read tool, the HTTP API opens the ones an answer cites (policy rule user-read-corpora).',
  [KEYS.index]:
    'Chunk index generations are numbered at ingest time (indexes/chunks.<n>.json); read-only for the steps.',
  [KEYS.registry]:
    'Discovered MCP tools are named by a hash of their server, name and schema (shared/tools/registry.ts), minted ' +
    'at discovery, so IAM cannot name them in advance; read-only here, and the policy gate decides per request ' +
    '(assistant-read-tool-registry, operator-read-tool-registry).',
  [KEYS.toolApprovals]:
    'An operator decision (tool.ToolApproval) under a discovered Tool whose URN is minted at discovery; the key ' +
    'pattern admits only that shape (Registry-Server-Tool-ToolApproval), writes are create-only, and the policy ' +
    'gate lets only an operator in CLD_OPERATOR_SUBJECTS write it (operator-decide-tools).',
};

/** `ListBucket` prefixes (the `s3:prefix` a `ListObjectsV2` sends; `*` = any continuation). */
export const LIST_PREFIXES = {
  /** ResourceIndex.list / listUrns list `keyPrefixOf(urn)` (`cld/<URN path>/`) under a conversation. */
  conversations: 'cld/common.Conversation.*',
  /** MiniSearchIndex.open lists `indexes/chunks.` to find the latest generation (the tool step only). */
  index: 'indexes/*',
  /** readRegistry lists the registry's (or one server's) subtree. */
  registry: 'cld/tool.Registry.*',
} as const;

/**
 * The exact object keys of the default catalog (`keyOf` of each catalog URN). The stack's
 * catalog seed (infra/lib/catalog-seed.ts) puts each create-only at deploy (`If-None-Match: *`,
 * a no-op when it exists) and is granted `PutObject` on exactly these keys; no function may
 * write the catalog (a cold start writes nothing: shared/runtime/assemble.ts `seedCatalog`).
 */
export function catalogKeys(): string[] {
  return catalogObjects().map((object) => object.key);
}

/** DynamoDB item actions a function may be granted on the projections table. */
export type TableAction = 'GetItem' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'Query';

/** S3 access of a function, as key patterns of the resources bucket. */
export interface StorageAccess {
  /** `s3:GetObject` on these key patterns. */
  read: readonly string[];
  /** `s3:PutObject` on these key patterns, allowed only with `If-None-Match` (create-only writes). */
  create: readonly string[];
  /** `s3:ListBucket` with these `s3:prefix` patterns. */
  list: readonly string[];
}

/**
 * How a function is invoked: `eventbridge` — asynchronously by the rules of the routing table
 * (bounded retries, maximum event age, a dead-letter queue and its alarm); `http-api` —
 * synchronously by API Gateway HTTP API routes (no asynchronous-invocation settings, no queue);
 * `sqs` — by SQS event source mappings on the dead-letter queues of the `eventbridge` functions
 * whose {@link FunctionSpec.deadLetters} is `fail-task` (the dead-letter consumer; at most one
 * such function, with its own queue for the records it cannot handle).
 */
export type Trigger = 'eventbridge' | 'http-api' | 'sqs';

/**
 * What becomes of an `eventbridge` function's dead letters: `fail-task` — the `sqs` function
 * consumes its queue and fails the task the event was for (shared/domain/dead-letter.ts), so
 * nothing stays pending; `retain` — they stay in the queue (14 days) for the operator, for a
 * step outside the task tree whose letter has no task to fail and is the only copy of the work.
 */
export type DeadLetterDisposition = 'fail-task' | 'retain';

/**
 * How the dead-letter consumer reads the queues (Lambda, "Using Lambda with Amazon SQS"):
 * - `batchSize` records per invocation (letters are rare; one batch is at most 10 step runs);
 * - `maxConcurrency` concurrent invocations per queue (2, the least an SQS mapping allows): a
 *   burst of dead letters cannot take the account's concurrency;
 * - `maxReceiveCount` receives before a record moves to the consumer's own queue (5, AWS's
 *   advice, so a transient failure is retried before the letter is set aside);
 * - `visibilityTimeoutFactor` × the consumer's timeout is each consumed queue's visibility
 *   timeout (6, AWS's advice for queues Lambda reads).
 */
export const DEAD_LETTER_CONSUMPTION = {
  batchSize: 10,
  maxConcurrency: 2,
  maxReceiveCount: 5,
  visibilityTimeoutFactor: 6,
} as const;

/** One Lambda function. */
export interface FunctionSpec {
  /** Entry file, relative to the project root; it exports `handler`. */
  entry: string;
  description: string;
  trigger: Trigger;
  /** Memory in MB (ARM64; CPU scales with it). */
  memoryMb: number;
  /** Timeout in seconds. */
  timeoutSeconds: number;
  /**
   * Whether the function may take reserved concurrency from `cld:reservedConcurrency` (opt-in:
   * the default reserves none, infra/lib/config.ts). Only functions whose fan-out would be costly
   * (many model or tool calls per user message) or that are open to unauthenticated floods
   * (the webhooks) may be capped; the others share the account's unreserved pool.
   */
  boundedConcurrency: boolean;
  /**
   * Whether the function runs inside the system's Lambda → S3 → EventBridge → Lambda chains
   * (and, for the dead-letter consumer, Lambda → SQS → Lambda): it then gets `RecursiveLoop:
   * Allow`. Lambda's recursive loop detection stops a chain after about 16 invocations of the same
   * function in it (AWS Lambda, "Use Lambda recursive loop detection to prevent infinite loops");
   * a conversation's chain is longer with more turns, tasks or corrective rounds, and the system
   * bounds it itself (depth, turns, rounds, subtasks and budgets: shared/domain/limits.ts). The
   * function also gets an alarm on `RecursiveInvocationsDropped`, in case Lambda stops one anyway.
   * False for the functions API Gateway invokes: a request starts a chain, never continues one.
   */
  allowRecursiveLoop: boolean;
  /** Calls the Bedrock model: gets `CLD_MODEL_ID` and `bedrock:InvokeModel` on its ARNs. */
  model: boolean;
  storage: StorageAccess;
  /**
   * Projections-table actions, granted with `CLD_TABLE`; none → no `CLD_TABLE`. Set from what
   * the function's code path calls (shared/projections/dynamodb.ts): the completion counters and
   * budgets are one `TransactWriteItems` each (`applyOnce`: a conditional `PutItem` of the member
   * item and an `UpdateItem` of the counter) and a consistent `GetItem`.
   * `PutItem`/`DeleteItem` are Powertools idempotency's (side effects that leave the system: the
   * channels' reply); `Query` lists a conversation's projections for rebuilds and cleanup, which
   * no step does.
   */
  table: readonly TableAction[];
  /**
   * Partition-key (`pk`) values of the projections table the function may touch, as IAM
   * `StringLike` patterns on `dynamodb:LeadingKeys` (condition `ForAllValues:StringLike`); absent →
   * any partition of the table. Item shapes: shared/projections/port.ts.
   */
  tablePartitions?: readonly string[];
  /**
   * Channel secrets the function reads, by the variable that names each (its ARN): the function
   * gets `secretsmanager:GetSecretValue` on exactly those secrets (infra/lib/secrets.ts).
   */
  secrets?: Readonly<Partial<Record<string, ChannelSecretName>>>;
  /**
   * Serves the web console (issue 15): its assets are built into the function's asset
   * (`console/`, named by `CLD_CONSOLE_DIR`) and `CLD_CONSOLE_AUTH` comes from `cld:consoleAuth`.
   */
  console?: boolean;
  /**
   * Runs discovered MCP tools: gets `CLD_MCP_SERVERS` (the `cld:mcpServers` context, as JSON) and
   * `secretsmanager:GetSecretValue` on exactly the secrets their headers name.
   */
  mcpServers?: boolean;
  /** Serves the operator routes: gets `CLD_OPERATOR_SUBJECTS` (the `cld:operatorSubjects` context). */
  operators?: boolean;
  /** Further environment variables (static values; a variable the construct sets itself fails synth). */
  environment?: Readonly<Record<string, string>>;
  /** `eventbridge` functions: what becomes of their dead letters (required for them, synth fails otherwise). */
  deadLetters?: DeadLetterDisposition;
  /**
   * An `eventbridge` function invoked by a scheduled rule (every `rateMinutes` minutes, on the
   * default bus) instead of by routes of the routing table.
   */
  schedule?: { rateMinutes: number };
  /**
   * Puts events on the default bus: gets `events:PutEvents` on the default bus only, for events of
   * source `cld` only (condition `events:source`), with `CLD_EVENT_BUS` naming the bus.
   */
  putEvents?: boolean;
}

/**
 * Counters and budgets (shared/projections/counters.ts, budget.ts): `applyOnce` is one
 * `TransactWriteItems` of a conditional `Put` (the member item) and an `Update` (the counter),
 * which IAM authorizes as `PutItem` and `UpdateItem`; then a consistent `GetItem`.
 */
const COUNTERS_AND_BUDGETS: readonly TableAction[] = ['GetItem', 'PutItem', 'UpdateItem'];

/**
 * What Powertools' `DynamoDBPersistenceLayer` calls (@aws-lambda-powertools/idempotency 2.35
 * `DynamoDBPersistenceLayer`): a conditional `PutItem` (the in-progress record), a consistent
 * `GetItem` (a duplicate reads the stored result), `UpdateItem` (completed, with the result) and
 * `DeleteItem` (the effect failed: forget the key so a retry runs it).
 */
export const IDEMPOTENCY_ACTIONS: readonly TableAction[] = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'];

/**
 * Partitions of conversation projections: `pk` is the conversation URN (shared/projections/port.ts),
 * `cld:common.Conversation.<hash>` — a URN, not an object key.
 */
const CONVERSATION_PARTITIONS = ['cld:common.Conversation.*'] as const;

/**
 * The steps that advance the task tree also touch their conversation's item in the open-conversations
 * partition (shared/projections/open-conversations.ts; `UpdateItem`, already granted for the counters).
 */
const STEP_PARTITIONS = [...CONVERSATION_PARTITIONS, OPEN_PARTITION] as const;

/** Partitions of the conversations-per-user projection (shared/projections/user-conversations.ts). */
const USER_PARTITIONS = userPartition('*');

/** Minutes between two runs of the sweeper (its scheduled rule). */
export const SWEEP_RATE_MINUTES = 5;

/**
 * Timeout of one delivery call of the reply function (`CLD_DELIVERY_TIMEOUT_MS`), in ms. Slack's
 * API answers in well under a second; 5 s keeps the function's worst case (two Slack calls —
 * progress and answer — of up to 3 attempts each) within its timeout.
 */
export const REPLY_DELIVERY_TIMEOUT_MS = 5_000;

/**
 * Timeout of the reply function, in s: above the worst case of {@link REPLY_DELIVERY_TIMEOUT_MS}
 * (2 calls × 3 attempts × 5 s + the client's backoff ≈ 35 s) and at most the delivery lock
 * (`DELIVERY_LOCK_MS`, 60 s), so an invocation that times out mid-post is gone before its lock
 * lets a retry post.
 */
export const REPLY_TIMEOUT_SECONDS = Math.min(45, DELIVERY_LOCK_MS / 1000);

/** The catalog, read by every function (the election of Assistants, the tool definitions). */
const CATALOG_READS = [KEYS.assistants, KEYS.tools] as const;

/**
 * The function table. Timeouts: a model call may take up to 3 attempts × 120 s
 * (shared/llm/bedrock.ts defaults), so the model-calling steps get 420 s; a tool runs with
 * its own 10 s timeout (the catalog's `timeoutMs`) after the index is loaded; the channel entry
 * points answer within Slack's 3 s and Teams' 5 s (10 s leaves room for a cold start); the reply
 * function, see {@link REPLY_TIMEOUT_SECONDS}; the dead-letter consumer handles a batch of at
 * most 10 letters, each a few S3 and DynamoDB calls, in 60 s (its queues' visibility timeout is
 * 6 × that, {@link DEAD_LETTER_CONSUMPTION}).
 *
 * No function writes the catalog: the stack seeds it at deploy (infra/lib/catalog-seed.ts), and a
 * cold start writes nothing. Only the tool step opens the chunk index (lists `indexes/chunks.`,
 * reads the newest generation) and searches documents (the `search` and `read` tools), so only it
 * gets `indexes/*` (`FUNCTION_USES` in shared/runtime/function-uses.ts; test/infra/stack.test.ts asserts
 * both agree); besides it, only the HTTP API function reads documents (`cld/doc.*`: a cited
 * Document or Chunk by URN, `GET /resources/<urn>`), without listing them.
 * A function with no list prefix still gets `s3:ListBucket` without a prefix, so a missing key
 * is a 404 (see `storageStatements` in infra/lib/access.ts).
 */
export const FUNCTIONS = {
  plan: {
    entry: 'functions/plan/handler.ts',
    trigger: 'eventbridge',
    description: 'cld plan step: a user Message → Task tree; root outputs → the final answer',
    memoryMb: 1024,
    timeoutSeconds: 420,
    boundedConcurrency: false,
    allowRecursiveLoop: true,
    model: true,
    storage: {
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations],
    },
    table: COUNTERS_AND_BUDGETS,
    tablePartitions: STEP_PARTITIONS,
    deadLetters: 'fail-task',
  },
  assistant: {
    entry: 'functions/assistant/handler.ts',
    trigger: 'eventbridge',
    description: 'cld assistant step: the inner loop of a leaf Task; supervision of subtasks',
    memoryMb: 1024,
    timeoutSeconds: 420,
    boundedConcurrency: true,
    allowRecursiveLoop: true,
    model: true,
    storage: {
      // Tasks, turns and tool results of its conversation; never a document (it cites the chunk
      // URNs that tool results returned) nor the index (FUNCTION_USES: no tools).
      read: [KEYS.conversations, ...CATALOG_READS, KEYS.registry],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations, LIST_PREFIXES.registry],
    },
    table: COUNTERS_AND_BUDGETS,
    tablePartitions: STEP_PARTITIONS,
    deadLetters: 'fail-task',
  },
  tool: {
    entry: 'functions/tool/handler.ts',
    trigger: 'eventbridge',
    description: 'cld tool step: executes one persisted tool.Call and stores its result',
    memoryMb: 1024,
    timeoutSeconds: 60,
    boundedConcurrency: true,
    allowRecursiveLoop: true,
    model: false,
    storage: {
      // The only function that searches (the chunk index) and reads documents (the `read` tool).
      // The registry: it runs a discovered MCP tool only when an operator approved it.
      read: [KEYS.conversations, KEYS.documents, KEYS.index, ...CATALOG_READS, KEYS.registry],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations, LIST_PREFIXES.index, LIST_PREFIXES.registry],
    },
    // The tool step reads and writes resources only; its budget is charged by the assistant.
    table: [],
    // CLD_MCP_SERVERS from `cld:mcpServers`, with GetSecretValue on exactly their header secrets.
    mcpServers: true,
    deadLetters: 'fail-task',
  },
  reply: {
    entry: 'functions/reply/handler.ts',
    description: 'cld reply step: delivers final answers to Slack/Teams exactly once; Slack progress updates',
    trigger: 'eventbridge',
    memoryMb: 512,
    timeoutSeconds: REPLY_TIMEOUT_SECONDS,
    // It fans out on every task output, but most invocations are one S3 GET and return.
    boundedConcurrency: false,
    allowRecursiveLoop: true,
    model: false,
    storage: {
      // Reads the answer, its Conversation and the user Message's task subtree; writes nothing.
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [],
      list: [LIST_PREFIXES.conversations],
    },
    // deps.idempotency: Powertools records in the `idempotency` partition only.
    table: IDEMPOTENCY_ACTIONS,
    tablePartitions: [IDEMPOTENCY_PK],
    // The Teams webhook URL is read here, when a reply is posted: conversations hold a reference.
    secrets: { CLD_SLACK_BOT_TOKEN_ARN: 'slackBotToken', CLD_TEAMS_WEBHOOK_URL_ARN: 'teamsWebhookUrl' },
    environment: { CLD_DELIVERY_TIMEOUT_MS: String(REPLY_DELIVERY_TIMEOUT_MS) },
    // An undelivered answer has no task to fail (the dead-letter step ignores it): the letter stays
    // in the queue, with its alarm, for the operator to inspect and send again.
    deadLetters: 'retain',
  },
  deadletter: {
    entry: 'functions/dead-letter/handler.ts',
    description: 'cld dead-letter consumer: fails the task of an event that failed every attempt of its step',
    trigger: 'sqs',
    // The memory of the steps it stands in for. Its cold start composes less than theirs (no
    // model, no chunk index: FUNCTION_USES), but a batch of 10 letters is 10 sequential steps,
    // and CPU scales with memory.
    memoryMb: 1024,
    // A batch of 10 letters is at most 10 dead-letter steps of a few S3/DynamoDB calls each.
    timeoutSeconds: 60,
    // Bounded by the event source mappings' maximum concurrency instead (DEAD_LETTER_CONSUMPTION).
    boundedConcurrency: false,
    allowRecursiveLoop: true,
    model: false,
    storage: {
      // Reads the task, the Plan and root outputs (as the plan and assistant actors); creates only
      // a failed Plan, a failed task output or the final answer (policies/rules.json "deadletter").
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations],
    },
    // Counts a dead-lettered output for its parent and reads the counter (shared/projections/counters.ts).
    table: COUNTERS_AND_BUDGETS,
    tablePartitions: CONVERSATION_PARTITIONS,
  },
  sweeper: {
    entry: 'functions/sweeper/handler.ts',
    description: 'cld sweeper: re-drives stalled conversations (PutEvents), fails those that stay stalled',
    trigger: 'eventbridge',
    schedule: { rateMinutes: SWEEP_RATE_MINUTES },
    memoryMb: 512,
    // Lists, repairs and re-drives the stalled conversations of one sweep (a few S3, DynamoDB and
    // PutEvents calls each), well within one rate period so that two runs do not overlap.
    timeoutSeconds: 120,
    // One run per schedule: no fan-out.
    boundedConcurrency: false,
    // It starts chains (its events invoke the steps); nothing invokes it but its schedule.
    allowRecursiveLoop: false,
    model: false,
    storage: {
      // Reads a stalled conversation's subtree (as the plan actor); creates only the answer of a
      // message it gives up on (policies/rules.json "sweeper").
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations],
    },
    // The open-conversations partition (Query, UpdateItem, DeleteItem) and the repair of a
    // conversation's counters and budget (Query lists them; a missing member is applied as the
    // steps apply it: PutItem of the member item, UpdateItem of the counter).
    table: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query'],
    tablePartitions: STEP_PARTITIONS,
    putEvents: true,
    // A failed sweep has no task to fail; the next scheduled run sweeps again.
    deadLetters: 'retain',
  },
  http: {
    entry: 'functions/http/handler.ts',
    description: 'cld HTTP API: start/continue conversations, status view, policy-gated resource reads',
    trigger: 'http-api',
    memoryMb: 1024,
    timeoutSeconds: 10,
    boundedConcurrency: false,
    allowRecursiveLoop: false,
    model: false,
    storage: {
      // Conversation + user Message (create-only), the status view (lists a conversation's
      // subtree) and GET /resources (one resource of the caller's conversations, or a Document or
      // Chunk an answer cites: policy rule user-read-corpora, get only, so no list prefix).
      // The operator routes (GET /tools, POST /tools/{name}/approve|revoke) read the registry and
      // create decisions only.
      read: [KEYS.conversations, KEYS.documents, ...CATALOG_READS, KEYS.registry],
      create: [KEYS.conversations, KEYS.toolApprovals],
      list: [LIST_PREFIXES.conversations, LIST_PREFIXES.registry],
    },
    // The conversations-per-user projection (`UpdateItem` to record a message, `Query` for
    // GET /conversations) and the open-conversations item a new message opens (`UpdateItem`).
    table: ['UpdateItem', 'Query'],
    tablePartitions: [USER_PARTITIONS, OPEN_PARTITION],
    console: true,
    // CLD_OPERATOR_SUBJECTS from `cld:operatorSubjects`: who may approve and revoke tools.
    operators: true,
  },
  slack: {
    entry: 'functions/slack/handler.ts',
    description: 'cld Slack: verifies signatures, stores the message, acknowledges within 3 s',
    trigger: 'http-api',
    memoryMb: 1024,
    timeoutSeconds: 10,
    // Unauthenticated at the gateway (the function checks the signature): a flood of forged
    // requests is capped here instead of taking the account's concurrency.
    boundedConcurrency: true,
    allowRecursiveLoop: false,
    model: false,
    storage: {
      // Conversation + user Message (create-only); a thread follow-up reads the thread's Conversation;
      // an Approve/Deny button names its request by URN (no listing) and creates the decision.
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [KEYS.conversations],
      list: [],
    },
    table: [],
    secrets: { CLD_SLACK_SIGNING_SECRET_ARN: 'slackSigningSecret' },
  },
  teams: {
    entry: 'functions/teams/handler.ts',
    description: 'cld Teams: verifies the HMAC, stores the message or decision, acknowledges within 5 s',
    trigger: 'http-api',
    memoryMb: 1024,
    timeoutSeconds: 10,
    boundedConcurrency: true,
    allowRecursiveLoop: false,
    model: false,
    storage: {
      // Conversation + user Message (create-only); a reply `approve <id>` finds the request of
      // that public id among the conversation's approval requests (a listing of its subtree) and
      // creates the decision under it (policies/rules.json user-decide-call).
      read: [KEYS.conversations, ...CATALOG_READS],
      create: [KEYS.conversations],
      list: [LIST_PREFIXES.conversations],
    },
    table: [],
    // Only the HMAC key: a Conversation's address references the webhook secret, which only the
    // reply function reads (shared/channels/secrets.ts TEAMS_WEBHOOK_SECRET).
    secrets: { CLD_TEAMS_SECRET_ARN: 'teamsSecurityToken' },
  },
} as const satisfies Record<string, FunctionSpec>;

/** Names of the functions in the table. */
export type FunctionName = keyof typeof FUNCTIONS;

/** The table as a plain record (for lookups by a route's `target`). */
export const FUNCTION_TABLE: Readonly<Record<string, FunctionSpec>> = FUNCTIONS;
