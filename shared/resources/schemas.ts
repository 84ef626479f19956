import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { isUrn } from '../urn.js';
import { lazyStrictObject } from './lazy-schema.js';

/**
 * zod schemas: the single source of the resource types (DESIGN.md "URNs"; seed roadmap-v1
 * steps 06 and 08). Every resource has `meta`; state changes are new child resources, so
 * nothing here is ever edited after it is stored.
 */

/** A string that parses as a `cld:` URN. */
export const UrnSchema = z.string().refine(isUrn, { message: 'not a valid cld: URN' });

/** Resource `meta` (seed step 06): identity plus the four description fields. */
export const ResourceMetaSchema = lazyStrictObject(() => ({
  /** URN of the resource. */
  id: UrnSchema,
  /** Logical name; with parent and type it determines the hash. */
  name: z.string().min(1).max(512),
  /** `namespace.Name`, for example `plan.Task`. */
  type: z.string().regex(/^[a-z]+\.[A-Z][A-Za-z0-9]*$/),
  /** Parent URN; absent for root resources. */
  parent: UrnSchema.optional(),
  hash: z.string().regex(/^[0-9a-f]{16}$/),
  /**
   * Content version of a catalog definition (shared/catalog/catalog.ts `contentVersion`: 16 hex of
   * the SHA-256 of its definition file). Part of the identity with parent, type and name
   * (shared/resources/meta.ts `identityName`), so an edited Assistant or Tool is a new resource
   * under a new URN, never an overwrite of the old one (DESIGN.md principle 1).
   */
  version: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .optional(),
  /** What the resource is meant to accomplish. */
  purpose: z.string().default(''),
  /** How to execute or work with the resource. */
  instructions: z.string().default(''),
  /** When or when not to use the resource. */
  applicability: z.string().default(''),
  /** What successful execution looks like. */
  evaluation: z.string().default(''),
  /** Tokens in the resource's content (cl100k estimate). */
  tokens: z.number().int().nonnegative().optional(),
  /** Similarity score, when the resource came from a search. */
  score: z.number().optional(),
  /** ISO 8601 creation time; excluded from content comparisons. */
  createdAt: z.string().optional(),
}));
export type ResourceMeta = z.infer<typeof ResourceMetaSchema>;

/** The actor that started a conversation and where replies go. */
export const ChannelSchema = z.strictObject({
  kind: z.enum(['cli', 'http', 'slack', 'teams']),
  /** Channel-specific reply address (Slack channel + thread, Teams webhook, ...). */
  address: z.record(z.string(), z.string()).optional(),
});

/** `common.Conversation`: root of every conversation subtree. */
export const ConversationSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** Identity of the user who started it (the policy's `user`). */
  actor: z.string().min(1),
  channel: ChannelSchema,
}));
export type Conversation = z.infer<typeof ConversationSchema>;

/** A tool call requested by the model (Bedrock Converse `toolUse`). */
export const ToolCallSchema = lazyStrictObject(() => ({
  /** `toolUseId` from the model. */
  id: z.string().min(1).max(128),
  /** Tool function name. */
  name: z.string().min(1).max(64),
  /** Arguments as given by the model (validated against the tool's schema when executed). */
  input: z.unknown(),
}));
export type ToolCall = z.infer<typeof ToolCallSchema>;

/** Error info stored on failed outputs and tool results. */
export const ErrorInfoSchema = z.strictObject({ code: z.string(), message: z.string() });

/**
 * Token usage of a model call (Bedrock Converse `usage`); with prompt caching, `inputTokens` are
 * the tokens neither read from nor written to the cache, the cache fields the others.
 */
export const UsageSchema = z.strictObject({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
  cacheReadInputTokens: z.number().int().nonnegative().optional(),
  cacheWriteInputTokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/**
 * Tool result status (seeds/tool-protocol.md `ToolStatus`), plus `DENIED`: a call that needed the
 * user's approval was denied, or its request expired undecided (shared/domain/approval.ts; the
 * result's `error.code` says which: `APPROVAL_DENIED`, `APPROVAL_EXPIRED`).
 */
export const ToolStatusSchema = z.enum([
  'OK',
  'ERROR',
  'TIMEOUT',
  'NOT_FOUND',
  'INVALID_ARGUMENTS',
  'DENIED',
]);
export type ToolStatus = z.infer<typeof ToolStatusSchema>;

/** What the context window left out of a model call (seeds/context-assembly.md `droppedMessages`). */
export const WindowReportSchema = lazyStrictObject(() => ({
  budget: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  dropped: z.array(z.string()),
}));

/**
 * A part of a task that was not answered, named on a partial output or final answer (issue 21):
 * the subtask (or root task) that did not pass, its title, and why (the supervisor's last
 * objection, or the task's failure).
 */
export const UnansweredPartSchema = lazyStrictObject(() => ({
  /** URN of the task that was not answered (for a corrected part: its last corrective task). */
  task: UrnSchema,
  /** The part as the user asked it (the planned task's title). */
  title: z.string().max(200),
  /** Why: the supervisor's last objection, or the task's error message. */
  reason: z.string().max(2_000),
}));
export type UnansweredPart = z.infer<typeof UnansweredPartSchema>;

/** A cited source as a person reads it: its URN and its label (document › heading). */
export const SourceRefSchema = lazyStrictObject(() => ({
  /** URN of the cited resource (a `doc.Chunk`, a `doc.Document`, ...). */
  urn: UrnSchema,
  /** Document and heading, `aws-ssm README › Lookups`; the URN when neither is known. */
  label: z.string().min(1).max(300),
}));
export type SourceRef = z.infer<typeof SourceRefSchema>;

/**
 * `common.Message` (seed step 06 `MessageV2`, now simply Message): role
 * `system|user|assistant|tool`, content, tool calls (role assistant) or tool call id (role tool).
 * A task's output is the Message named `output` under it; `error` set means the task failed;
 * `unanswered` set (and no `error`) means it is partial: the content carries the parts that were
 * answered (shared/domain/outcome.ts).
 */
export const MessageSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().default(''),
  toolCalls: z.array(ToolCallSchema).optional(),
  toolCallId: z.string().optional(),
  /** Tool result status, for role `tool`. */
  status: ToolStatusSchema.optional(),
  /** URNs of the sources the content relies on. */
  citations: z.array(UrnSchema).optional(),
  /**
   * How each citation reads (issue 21 item 4), in the order of `citations`, one per citation:
   * `label` is the document and heading (`aws-ssm README › Lookups`, shared/search/source-label.ts),
   * or the URN itself when the source has neither. The "Sources:" block of an answer's content
   * shows the labels; the URNs stay here and in `citations`.
   */
  sources: z.array(SourceRefSchema).optional(),
  error: ErrorInfoSchema.optional(),
  /**
   * For a task output or final answer that is partial: the parts not answered and why (in the
   * order asked; a partial subtask's own parts included). Never set together with `error`.
   */
  unanswered: z.array(UnansweredPartSchema).min(1).optional(),
  usage: UsageSchema.optional(),
  window: WindowReportSchema.optional(),
  /** For a final answer: the user Message it answers. */
  inReplyTo: UrnSchema.optional(),
  /**
   * For a user Message stored by a request with an `Idempotency-Key`: the SHA-256 (hex) of that
   * request's parsed body, so a retry with another body is refused (shared/channels/idempotency.ts).
   */
  requestHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
}));
export type Message = z.infer<typeof MessageSchema>;

/** Why an assistant was elected for a task. */
export const ElectionSchema = lazyStrictObject(() => ({
  assistant: UrnSchema,
  name: z.string(),
  score: z.number(),
  runnerUp: z.strictObject({ assistant: UrnSchema, name: z.string(), score: z.number() }).optional(),
}));
export type Election = z.infer<typeof ElectionSchema>;

/** `plan.Task` (seed step 08): a node of the task tree. */
export const TaskSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** Short title for display. */
  title: z.string().min(1).max(200),
  /** URNs of the planned subtasks (corrective subtasks are listed by verdicts). */
  subtasks: z.array(UrnSchema),
  /** URN of the assigned Assistant. */
  assistant: UrnSchema,
  election: ElectionSchema,
  /** Status at creation; later status is derived from child resources (output, verdicts). */
  status: z.literal('pending'),
  /** Depth in the tree; root tasks are 1. */
  depth: z.number().int().positive(),
  /** Corrective round that created the task (0 for planned tasks). */
  round: z.number().int().nonnegative(),
  /** For a corrective subtask: the subtask it redoes. */
  corrects: UrnSchema.optional(),
}));
export type Task = z.infer<typeof TaskSchema>;

/** Name of a configured MCP server: lowercase letters, digits and single `-` (no `_`, which joins server and tool names). */
export const McpServerNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/, 'lowercase letters, digits and single "-"')
  .max(30);

/** Where a discovered tool lives and which definition of it this resource is. */
export const McpToolRefSchema = z.strictObject({
  /** The MCP server's configured name. */
  server: McpServerNameSchema,
  /** The tool's name on the server, as `tools/call` takes it. */
  tool: z.string().min(1).max(128),
  /** SHA-256 (hex) of the canonical JSON of the tool's `{name, description, inputSchema}` as `tools/list` returned them. */
  schemaHash: z.string().regex(/^[0-9a-f]{64}$/),
});

/** `common.Assistant`: a role with instructions and the tools it may use. */
export const AssistantSchema = z.strictObject({
  meta: ResourceMetaSchema,
  /** Names of the tools this assistant may call (built-in, or a discovered `<server>__<tool>`). */
  tools: z.array(z.string()),
  /**
   * MCP servers whose approved tools this assistant may call, all of them (shared/tools/registry.ts):
   * the assistant's level of the registry. Absent: only the tools it names.
   */
  servers: z.array(McpServerNameSchema).optional(),
});
export type Assistant = z.infer<typeof AssistantSchema>;

/** JSON Schema of tool parameters (an object schema, as Bedrock `inputSchema.json` expects). */
export const JsonSchemaObjectSchema = z.looseObject({
  type: z.literal('object'),
  properties: z.record(z.string(), z.unknown()),
  required: z.array(z.string()).optional(),
});

/** `common.Tool` (seed step 06 `Tool`/`ToolFunction`): function name, description, parameters. */
export const ToolSchema = z.strictObject({
  meta: ResourceMetaSchema,
  function: z.strictObject({
    name: z.string().regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/),
    description: z.string().min(1),
    parameters: JsonSchemaObjectSchema,
  }),
  /** Execution timeout, in milliseconds. */
  timeoutMs: z.number().int().positive().max(900_000).default(10_000),
  /**
   * Whether each call needs the approval of the conversation's user before it runs
   * (shared/domain/approval.ts): `always` or `never`; absent, the policy's default decides
   * (`approval.always` of policies/rules.json: tool names with side effects).
   */
  approval: z.enum(['always', 'never']).optional(),
  /** Set on a tool discovered on an MCP server (shared/tools/registry.ts); absent on built-in tools. */
  mcp: McpToolRefSchema.optional(),
});
export type Tool = z.infer<typeof ToolSchema>;

/**
 * `tool.Approval`: the request for the user's approval of one call of a tool that needs it, written
 * by the tool function instead of running the call, directly under the `tool.Call` (name
 * `approval`, so one per call). Its decision is a `tool.Decision` under it.
 */
export const ApprovalRequestSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** The call's tool function name and arguments, as the model gave them (what the user approves). */
  tool: z.string().min(1).max(64),
  input: z.unknown(),
  /** Title of the task that asked (for display). */
  task: z.string().max(200),
  /** The conversation's user (`Conversation.actor`): the only one who may decide. */
  user: z.string().min(1),
  /** When the request expires undecided (ISO 8601); a decision after it is refused. */
  expiresAt: z.iso.datetime(),
}));
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/**
 * `tool.Decision`: the user's decision on a `tool.Approval`, directly under it (name `decision`,
 * so the first decision is the only one). Only the channel functions (http, slack, teams) may
 * write it, as the conversation's user (policies/rules.json `user-decide-call`); its
 * `RESOURCE_PUT` resumes the call in the tool function.
 */
export const ApprovalDecisionSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  decision: z.enum(['approve', 'deny']),
  /** Who decided (the channel's user id, e.g. `http:<sub>`, `slack:<team>:<user>`). */
  by: z.string().min(1),
  /** The channel the decision came through. */
  channel: z.enum(['cli', 'http', 'slack', 'teams']),
  /** Why, as the user gave it (shown to the model on a denial). */
  reason: z.string().max(1_000).optional(),
}));
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/**
 * `tool.Execution`: the claim the tool function writes (create-only) before it runs an approved
 * call, directly under the `tool.Approval` (name `execution`). Only the invocation that created
 * it runs the call, so a duplicated or replayed decision event never runs it twice; a claim
 * older than the tool's timeout without a result means the run died, and the call is answered
 * with an ERROR rather than run again (at most once).
 */
export const ExecutionClaimSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** The decision the run is authorised by. */
  decision: UrnSchema,
  /** When the claim expires (ISO 8601): the tool's timeout after the claim. */
  deadline: z.iso.datetime(),
}));
export type ExecutionClaim = z.infer<typeof ExecutionClaimSchema>;

/** SHA-256, lowercase hex. */
const Sha256Hex = z.lazy(() => z.string().regex(/^[0-9a-f]{64}$/));

/**
 * `tool.ToolApproval`: an operator's decision on one discovered tool (shared/tools/registry.ts),
 * stored under the `common.Tool` it decides on, named `approval-<n>` (n = 1, 2, … zero-padded):
 * the one with the highest n is the tool's status. Nothing is edited: revoking writes the next one.
 */
export const ToolApprovalSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  decision: z.enum(['approved', 'revoked']),
  /** Who decided: the operator's identity (`cli:<os user>`, `http:<JWT sub>`). */
  by: z.string().min(1).max(256),
  /** ISO 8601 time of the decision. */
  at: z.iso.datetime(),
  /** The `mcp.schemaHash` of the tool decided on: a decision covers exactly that name, description and input schema. */
  schemaHash: Sha256Hex,
  /** Why, as the operator wrote it. */
  reason: z.string().max(2_000).optional(),
}));
export type ToolApproval = z.infer<typeof ToolApprovalSchema>;

/**
 * `tool.Discovery`: what one `tools/list` of an MCP server returned, stored under the server's
 * `tool.Server` element of the registry, named `discovery-<ISO time>`: the newest one is the
 * server's current tool set (a tool absent from it is no longer offered).
 */
export const ToolDiscoverySchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  server: McpServerNameSchema,
  /** ISO 8601 time of the discovery. */
  at: z.iso.datetime(),
  tools: z.array(
    z.strictObject({
      /** Function name the model sees (`<server>__<tool>`). */
      name: z.string().min(1).max(64),
      /** URN of the `common.Tool` stored for this name and schema. */
      tool: UrnSchema,
      schemaHash: Sha256Hex,
    }),
  ),
}));
export type ToolDiscovery = z.infer<typeof ToolDiscoverySchema>;

/** `tool.Call`: one requested tool call, stored under its task; the tool function reacts to it. */
export const ToolCallResourceSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  call: ToolCallSchema,
  /** URN of the assistant turn (Message) that requested the call. */
  turn: UrnSchema,
}));
export type ToolCallResource = z.infer<typeof ToolCallResourceSchema>;

/** `plan.Plan`: the planner's result for one user Message. */
export const PlanSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** Root task URNs, in order. */
  tasks: z.array(UrnSchema),
  model: z.string(),
  usage: UsageSchema.optional(),
  error: ErrorInfoSchema.optional(),
}));
export type Plan = z.infer<typeof PlanSchema>;

/** `plan.Verdict`: a supervisor's judgement of a round of subtasks. */
export const VerdictSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  round: z.number().int().positive(),
  pass: z.boolean(),
  reason: z.string(),
  subtasks: z.array(
    z.strictObject({
      urn: UrnSchema,
      pass: z.boolean(),
      reason: z.string(),
      /** What the supervisor found missing from the subtask's output (terms, identifiers), when it said. */
      missing: z.array(z.string().max(200)).max(50).optional(),
    }),
  ),
  /** Corrective subtasks created by this verdict (empty on pass). */
  corrective: z.array(UrnSchema),
  usage: UsageSchema.optional(),
}));
export type Verdict = z.infer<typeof VerdictSchema>;

/** `doc.Document`: one ingested file; its chunks are children. */
export const DocumentSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** Path as given to ingest, relative to the working directory. */
  path: z.string(),
  /** SHA-256 of the file content. */
  contentHash: z.string(),
  bytes: z.number().int().nonnegative(),
  chunks: z.number().int().nonnegative(),
}));
export type Document = z.infer<typeof DocumentSchema>;

/** `doc.Chunk`: a piece of a document, the unit of search and citation. */
export const ChunkSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  text: z.string(),
  index: z.number().int().nonnegative(),
  /** Heading trail of the chunk, when the splitter kept it. */
  heading: z.string().optional(),
}));
export type Chunk = z.infer<typeof ChunkSchema>;

/**
 * `doc.Graph`: linked data from one source document (seed roadmap-v2 step 16), stored once
 * under that Document as N-Quads text. A large source is split into shards (one resource per
 * shard, `name` = `graph-<shard>`), so a query loads only the shards it needs.
 */
export const GraphSchema = lazyStrictObject(() => ({
  meta: ResourceMetaSchema,
  /** Always `application/n-quads`. */
  format: z.literal('application/n-quads'),
  /** Shard name: a jsii submodule (`aws_s3`, `core`) or `all` for a file read whole. */
  shard: z.string().min(1).max(200),
  /** Quads in `quads`. */
  triples: z.number().int().nonnegative(),
  /** The N-Quads document. */
  quads: z.string(),
}));
export type Graph = z.infer<typeof GraphSchema>;

/** Schema per resource type: `parseResource` picks by `meta.type`. */
export const RESOURCE_SCHEMAS = {
  'common.Conversation': ConversationSchema,
  'common.Message': MessageSchema,
  'common.Assistant': AssistantSchema,
  'common.Tool': ToolSchema,
  'plan.Task': TaskSchema,
  'plan.Plan': PlanSchema,
  'plan.Verdict': VerdictSchema,
  'tool.Call': ToolCallResourceSchema,
  'tool.Approval': ApprovalRequestSchema,
  'tool.Decision': ApprovalDecisionSchema,
  'tool.Execution': ExecutionClaimSchema,
  'tool.ToolApproval': ToolApprovalSchema,
  'tool.Discovery': ToolDiscoverySchema,
  'doc.Document': DocumentSchema,
  'doc.Chunk': ChunkSchema,
  'doc.Graph': GraphSchema,
} as const;

/** A known resource type name. */
export type ResourceType = keyof typeof RESOURCE_SCHEMAS;

/** Resource type name → TypeScript type. */
export type ResourceOf<T extends ResourceType> = z.infer<(typeof RESOURCE_SCHEMAS)[T]>;

/** Any resource. */
export type AnyResource = { [T in ResourceType]: ResourceOf<T> }[ResourceType];

/**
 * Parses stored or received JSON into a typed resource, choosing the schema by `meta.type`.
 * @throws ValidationError for an unknown type or a shape that does not match its schema.
 */
export function parseResource(value: unknown): AnyResource {
  const type = (value as { meta?: { type?: unknown } } | null)?.meta?.type;
  if (typeof type !== 'string' || !Object.hasOwn(RESOURCE_SCHEMAS, type)) {
    throw new ValidationError(`unknown resource type: ${String(type)}`);
  }
  const result = RESOURCE_SCHEMAS[type as ResourceType].safeParse(value);
  if (!result.success) {
    throw new ValidationError(`invalid ${type}: ${z.prettifyError(result.error)}`, { cause: result.error });
  }
  return result.data as AnyResource;
}

/**
 * Parses `value` as a resource of the given type.
 * @throws ValidationError when the value is another type or malformed.
 */
export function parseAs<T extends ResourceType>(type: T, value: unknown): ResourceOf<T> {
  const resource = parseResource(value);
  if (resource.meta.type !== type) {
    throw new ValidationError(`expected ${type}, got ${resource.meta.type} (${resource.meta.id})`);
  }
  return resource as ResourceOf<T>;
}
