import * as z from 'zod';
import { HTTP_ERROR_CODES } from './http-error-codes.js';

export { HTTP_ERROR_CODES } from './http-error-codes.js';

import type {
  ApprovalStatus as DomainApprovalStatus,
  ApprovalView as DomainApprovalView,
} from '../domain/approval.js';
import type { TurnStatus } from '../domain/turn.js';
import { ERROR_CODES } from '../errors.js';
import { ChannelSchema, ErrorInfoSchema, ToolStatusSchema } from '../resources/schemas.js';

/**
 * The HTTP API's response bodies as zod schemas, in one place: the handlers' view types are
 * `z.infer` of these (conversations.ts, activity.ts, conversation-list.ts, shared/domain/approval.ts
 * re-export them), and the OpenAPI document (openapi.ts) is generated from them, so the contract
 * and the code cannot say different things. Objects are strict: a field the document does not
 * name fails the response validation of the HTTP tests (test/channels/http-api.test.ts).
 * Every schema with an `id` in {@link API_SCHEMAS} becomes `#/components/schemas/<id>`.
 */

/** The registry of named schemas: `id` is the OpenAPI component name. */
export const API_SCHEMAS = z.registry<{ id: string; description?: string }>();

const Iso = z.string().describe('ISO 8601 date and time');

/**
 * A conversation's or a user message's status (shared/domain/progress.ts): `pending` (not
 * planned yet), `running`, `stalled` (no progress for the stall time), `done`, `failed` (answered
 * with an error: a failed task, a used-up budget, a dead letter, a stall the sweeper gave up on),
 * `partial` (answered, with part of the work failed).
 */
export const TurnStatusSchema = z
  .enum(['pending', 'running', 'stalled', 'done', 'failed', 'partial'])
  .describe(
    '`pending` (not planned yet), `running`, `stalled` (no progress for the stall time), `done`, ' +
      '`failed` (answered with an error: a failed task, a used-up budget, a dead letter, a stall the ' +
      'sweeper gave up on), `partial` (answered, with part of the work failed).',
  );
API_SCHEMAS.add(TurnStatusSchema, { id: 'ConversationStatus' });
// Every status the domain produces is one the contract names.
const statusCovered: readonly z.infer<typeof TurnStatusSchema>[] = [] as TurnStatus[];
void statusCovered;

/** The `{code, message}` a failed step, plan or answer stores (`code`: an {@link ERROR_CODES} value, or `ERROR`). */
export const ErrorInfoViewSchema = ErrorInfoSchema.describe(
  `A stored failure. \`code\` is one of ${ERROR_CODES.map((c) => `\`${c}\``).join(', ')}, or \`ERROR\` for an unexpected one.`,
).register(API_SCHEMAS, { id: 'ErrorInfo' });

/** Model calls and tokens of a task's own turns, or of a user Message's whole subtree. */
export const UsageViewSchema = z
  .strictObject({
    modelCalls: z.number().int().nonnegative(),
    tokens: z.number().int().nonnegative(),
    toolCalls: z.number().int().nonnegative(),
  })
  .register(API_SCHEMAS, { id: 'Usage' });

/** Times of a task (ISO 8601): stored (queued), first resource of its own (started), output (finished). */
export const TaskTimesSchema = z
  .strictObject({ queuedAt: Iso.optional(), startedAt: Iso.optional(), finishedAt: Iso.optional() })
  .register(API_SCHEMAS, { id: 'TaskTimes' });

/** One tool call of a task and its result. */
export const CallViewSchema = z
  .strictObject({
    urn: z.string(),
    /** Tool function name. */
    name: z.string(),
    /** Arguments as the model gave them. */
    input: z.unknown(),
    /** When the call was stored (ISO 8601). */
    requestedAt: Iso.optional(),
    /** The result, once the tool step stored it. */
    result: z
      .strictObject({
        status: ToolStatusSchema,
        /** Size of the result's content, in bytes (UTF-8). */
        bytes: z.number().int().nonnegative(),
        /** The content, cut to `MAX_RESULT_CHARS` characters (activity.ts). */
        content: z.string(),
        truncated: z.boolean(),
        /** When the result was stored (ISO 8601). */
        at: Iso.optional(),
        /** Milliseconds between the call and its result. */
        ms: z.number().optional(),
      })
      .optional(),
  })
  .register(API_SCHEMAS, { id: 'Call' });

/** One step on a user Message's timeline. */
export const TimelineStepSchema = z
  .strictObject({
    /** `plan`, `task`, `tool`, `verdict` or `answer`. */
    kind: z.enum(['plan', 'task', 'tool', 'verdict', 'answer']),
    /** URN of the resource the step is about (the task, the call, the verdict...). */
    urn: z.string(),
    label: z.string(),
    /** Depth in the task tree (0 for the plan and the answer). */
    depth: z.number().int().nonnegative(),
    /** When the step's input was stored (what made it runnable), ISO 8601. */
    queuedAt: Iso.optional(),
    /** When the step first wrote something (tasks only). */
    startedAt: Iso.optional(),
    /** When the step's result was stored; absent while it runs. */
    finishedAt: Iso.optional(),
    /** `ok`, `partial` (a task or answer that left parts unanswered), `failed` or `open` (not finished). */
    outcome: z.enum(['ok', 'partial', 'failed', 'open']),
  })
  .register(API_SCHEMAS, { id: 'TimelineStep' });

/**
 * Where an approval request stands: waiting, decided either way, expired undecided, or `closed`:
 * undecided when its message ended (answered, partial or failed), so a decision is refused (409
 * `MESSAGE_ENDED`) and the call never runs.
 */
export const ApprovalStatusSchema = z.enum(['pending', 'approved', 'denied', 'expired', 'closed']);

/**
 * One approval request as channels show it: an element of `approvals` in `GET /conversations/{id}`
 * (newest first), and the body of `POST /conversations/{id}/approvals/{approvalId}`'s answer.
 */
export const ApprovalViewSchema = z
  .strictObject({
    /** Public id (16 hex): the `{approvalId}` of the decide route, and what a Teams reply names. */
    id: z.string().regex(/^[0-9a-f]{16}$/),
    /** URN of the `tool.Approval`. */
    urn: z.string(),
    /** URN of the `tool.Call` it is about. */
    call: z.string(),
    /** Tool function name and the arguments the model gave it. */
    tool: z.string(),
    input: z.unknown(),
    /** Title of the task that made the call. */
    task: z.string(),
    status: ApprovalStatusSchema,
    /** When it was requested and when it expires undecided (ISO 8601). */
    requestedAt: Iso.optional(),
    expiresAt: Iso,
    /** The decision, once there is one. */
    decision: z
      .strictObject({
        decision: z.enum(['approve', 'deny']),
        by: z.string(),
        channel: z.string(),
        reason: z.string().optional(),
        decidedAt: Iso.optional(),
      })
      .optional(),
  })
  .register(API_SCHEMAS, { id: 'Approval' });

/**
 * Status of a task, derived from its children (the same rule as the CLI tree): `partial` when its
 * output keeps the parts that passed and names the ones that did not (shared/domain/outcome.ts).
 */
export const TaskStatusSchema = z.enum(['pending', 'running', 'waiting', 'done', 'partial', 'failed']);

/** A part a partial output does not answer (`task`, `title`), and why (`reason`). */
const UnansweredViewSchema = z.strictObject({ task: z.string(), title: z.string(), reason: z.string() });

/**
 * A cited source (issue 21 item 4): `urn` of the chunk or document, `label` its document and
 * heading as the answer's "Sources:" block shows it (`aws-ssm README › Lookups`; the URN when
 * neither is known).
 */
export const SourceViewSchema = z
  .strictObject({ urn: z.string(), label: z.string() })
  .register(API_SCHEMAS, { id: 'Source' });

const VerdictViewSchema = z.strictObject({
  round: z.number().int().nonnegative(),
  pass: z.boolean(),
  reason: z.string(),
  /** Per subtask, what the supervisor found `missing`, when it said. */
  subtasks: z.array(
    z.strictObject({
      urn: z.string(),
      pass: z.boolean(),
      reason: z.string(),
      missing: z.array(z.string()).optional(),
    }),
  ),
  corrective: z.array(z.string()),
});

/** A task in the status view (recursive: `subtasks`). */
export const TaskViewSchema = z.strictObject({
  urn: z.string(),
  title: z.string(),
  status: TaskStatusSchema,
  /** Name of the elected Assistant and its similarity score. */
  assistant: z.string(),
  score: z.number(),
  /** The assistant with the next best score, when there was one. */
  runnerUp: z.strictObject({ name: z.string(), score: z.number() }).optional(),
  /** What the task's output must meet (the task's `evaluation`, what its supervisor judges by). */
  evaluation: z.string(),
  depth: z.number().int().nonnegative(),
  /** Corrective round that created it (0 for planned tasks). */
  round: z.number().int().nonnegative(),
  /** For a corrective task: the task it redoes. */
  corrects: z.string().optional(),
  /** The failure of a failed task. */
  error: ErrorInfoViewSchema.optional(),
  /** For a partial task: the parts its output does not answer, and why. */
  unanswered: z.array(UnansweredViewSchema).optional(),
  /** Supervisor verdicts on this task's subtasks, by round, with the corrective subtasks each added. */
  verdicts: z.array(VerdictViewSchema),
  /** Its tool calls with arguments and results. */
  calls: z.array(CallViewSchema),
  /** Model calls and tokens of its own turns and verdicts, and its tool calls. */
  usage: UsageViewSchema,
  /** When it was queued, started and finished. */
  times: TaskTimesSchema,
  /** Citations of its output. */
  citations: z.array(z.string()),
  /** The citations as people read them, in the same order: `{ urn, label }` per citation. */
  sources: z.array(SourceViewSchema),
  get subtasks(): z.ZodArray<typeof TaskViewSchema> {
    return z.array(TaskViewSchema);
  },
});
API_SCHEMAS.add(TaskViewSchema, { id: 'Task' });

/** The final answer to one user message. */
export const AnswerViewSchema = z
  .strictObject({
    urn: z.string(),
    /**
     * `done`; `partial`: the content answers some parts and names under "Not answered:" the ones it
     * does not (listed in `unanswered`); `failed`: `error` says why.
     */
    status: z.enum(['done', 'partial', 'failed']),
    content: z.string(),
    /** URNs of the document chunks the answer relies on. */
    citations: z.array(z.string()),
    /**
     * The citations as people read them, in the same order, one per citation: `label` is what the
     * content's "Sources:" block shows (`aws-ssm README › Lookups`), `urn` what to open
     * (`GET /resources/{urn}`).
     */
    sources: z.array(SourceViewSchema),
    error: ErrorInfoViewSchema.optional(),
    /** For a partial answer: each part not answered (`task`, `title`), and why (`reason`). */
    unanswered: z.array(UnansweredViewSchema).optional(),
    createdAt: Iso.optional(),
  })
  .register(API_SCHEMAS, { id: 'Answer' });

/** One user message and what the system did with it. */
export const TurnViewSchema = z
  .strictObject({
    urn: z.string(),
    content: z.string(),
    createdAt: Iso.optional(),
    status: TurnStatusSchema,
    /** What an unanswered message waits for (shared/domain/progress.ts), e.g. `the result of tool search for "…"`. */
    waitingFor: z.array(z.string()).optional(),
    /** When the message last made progress: the newest resource of its subtree (ISO 8601). */
    lastProgress: Iso.optional(),
    plan: z
      .strictObject({
        tasks: z.number().int().nonnegative(),
        model: z.string(),
        error: ErrorInfoViewSchema.optional(),
      })
      .optional(),
    tasks: z.array(TaskViewSchema),
    answer: AnswerViewSchema.optional(),
    /** What the message's steps used (model calls, tokens, tool calls), answer included. */
    usage: UsageViewSchema,
    /** Its steps on a time axis (activity.ts). */
    timeline: z.array(TimelineStepSchema),
  })
  .register(API_SCHEMAS, { id: 'Message' });

/** `GET /conversations/{id}`: status, task tree, answers, approvals and budget of a conversation. */
export const ConversationViewSchema = z
  .strictObject({
    id: z.string(),
    urn: z.string(),
    channel: ChannelSchema.shape.kind,
    createdAt: Iso.optional(),
    /**
     * The most severe status of its messages (shared/domain/progress.ts `STATUS_SEVERITY`): `done`
     * only when every message is answered, `failed` when every message is answered and one failed.
     */
    status: TurnStatusSchema,
    messages: z.array(TurnViewSchema),
    /** The latest final answer, when there is one. */
    answer: AnswerViewSchema.optional(),
    /** Requests for the user's approval of a tool call, at any task depth, newest first. */
    approvals: z.array(ApprovalViewSchema),
    /** The conversation's budgets (limits) and what its messages used, summed from their resources. */
    budget: z.strictObject({ used: UsageViewSchema, limits: UsageViewSchema }),
  })
  .register(API_SCHEMAS, { id: 'Conversation' });

/** One row of `GET /conversations`. */
export const ConversationSummarySchema = z
  .strictObject({
    /** Public id (`GET /conversations/{id}`). */
    id: z.string(),
    urn: z.string(),
    /** The first message, cut to 200 characters. */
    title: z.string(),
    createdAt: Iso,
    /**
     * `running` while a message is unanswered; else `failed` when an answer failed, else `partial`
     * when an answer left parts unanswered, else `done`.
     */
    status: z.enum(['running', 'done', 'failed', 'partial']),
    /** How many user messages it holds. */
    messages: z.number().int().nonnegative(),
  })
  .register(API_SCHEMAS, { id: 'ConversationSummary' });

/** The body of `GET /conversations`. */
export const ConversationListSchema = z
  .strictObject({
    conversations: z.array(ConversationSummarySchema),
    /** Cursor of the next (older) page: pass it as `?after=`. */
    next: z.string().optional(),
  })
  .register(API_SCHEMAS, { id: 'ConversationList' });

/** What `POST /conversations` and `POST /conversations/{id}/messages` answer (202). */
export const AcceptedSchema = z
  .strictObject({
    /** Public conversation id (use it in `GET /conversations/{id}`). */
    id: z.uuid(),
    /** Conversation URN. */
    conversation: z.string(),
    /** URN of the stored user Message. */
    message: z.string(),
    /**
     * Absolute URL of the status view: `CLD_PUBLIC_BASE_URL` or the API's domain, never the
     * request's `Host` header (`Location` holds the relative path).
     */
    statusUrl: z.url(),
  })
  .register(API_SCHEMAS, { id: 'Accepted' });

/** The answer of `POST /conversations/{id}/approvals/{approvalId}`. */
export const ApprovalDecidedSchema = z.strictObject({ approval: ApprovalViewSchema }).register(API_SCHEMAS, {
  id: 'ApprovalDecided',
});

/** The JSON body of every error response. */
export const ErrorBodySchema = z
  .strictObject({
    /** Stable machine-readable code. */
    code: z.enum(HTTP_ERROR_CODES),
    /** Human-readable explanation; safe to show. */
    message: z.string(),
    /**
     * Machine-readable facts, only for codes whose details are about the caller's own resources:
     * for `MESSAGE_ENDED`, the message's `message` URN, `status` and `endedAt`.
     */
    details: z.record(z.string(), z.unknown()).optional(),
    /** For a 409 `DECISION_CONFLICT`: the state that won (`{status, decision}`), so the caller need not read again. */
    current: z.record(z.string(), z.unknown()).optional(),
  })
  .register(API_SCHEMAS, { id: 'Error' });

const ToolDecisionSchema = z.strictObject({
  decision: z.enum(['approved', 'revoked']),
  by: z.string(),
  at: Iso,
  reason: z.string().optional(),
});

/** The body of `GET /tools` (operator-routes.ts): one page of the discovered tools, by server. */
export const ToolsPageSchema = z
  .strictObject({
    servers: z.array(
      z.strictObject({
        server: z.string(),
        discoveredAt: Iso,
        tools: z.array(
          z.strictObject({
            /** Function name the model sees (`<server>__<tool>`). */
            name: z.string(),
            status: z.enum(['pending', 'approved', 'revoked']),
            server: z.string(),
            /** URN of the `common.Tool` of this definition. */
            tool: z.string().optional(),
            schemaHash: z.string().optional(),
            description: z.string(),
            decisions: z.array(ToolDecisionSchema),
          }),
        ),
      }),
    ),
    /** Cursor of the next page: pass it as `?cursor=`. */
    nextCursor: z.string().optional(),
  })
  .register(API_SCHEMAS, { id: 'ToolsPage' });

/** The body of `POST /tools/{name}/approve|revoke`. */
export const ToolDecidedSchema = z
  .strictObject({
    name: z.string(),
    status: z.enum(['pending', 'approved', 'revoked']),
    decision: ToolDecisionSchema.extend({ schemaHash: z.string() }),
  })
  .register(API_SCHEMAS, { id: 'ToolDecided' });

/** A stored resource as `GET /resources/{urn}` returns it (shared/resources/schemas.ts; its `meta.type` names its kind). */
export const ResourceBodySchema = z
  .looseObject({
    meta: z.looseObject({ id: z.string(), name: z.string(), type: z.string(), hash: z.string() }),
  })
  .register(API_SCHEMAS, { id: 'Resource' });

export type UsageView = z.infer<typeof UsageViewSchema>;
export type TaskTimes = z.infer<typeof TaskTimesSchema>;
export type CallView = z.infer<typeof CallViewSchema>;
export type TimelineStep = z.infer<typeof TimelineStepSchema>;
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;
export type ApprovalView = z.infer<typeof ApprovalViewSchema>;
/** Whether types `A` and `B` are assignable both ways. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// The contract's approval views are exactly the domain's (shared/domain/approval.ts).
const approvalCovered: [Same<ApprovalStatus, DomainApprovalStatus>, Same<ApprovalView, DomainApprovalView>] =
  [true, true];
void approvalCovered;
export type TaskStatus = z.infer<typeof TaskStatusSchema>;
export type TaskView = z.infer<typeof TaskViewSchema>;
export type AnswerView = z.infer<typeof AnswerViewSchema>;
export type TurnView = z.infer<typeof TurnViewSchema>;
export type ConversationView = z.infer<typeof ConversationViewSchema>;
export type ConversationSummary = z.infer<typeof ConversationSummarySchema>;
export type ConversationList = z.infer<typeof ConversationListSchema>;
export type Accepted = z.infer<typeof AcceptedSchema>;
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
export type ToolsPage = z.infer<typeof ToolsPageSchema>;
export type ToolDecided = z.infer<typeof ToolDecidedSchema>;
