import * as z from 'zod';
import { ValidationError } from '../errors.js';
import type { JsonValue, ToolSpec } from '../llm/port.js';
import { lazyStrictObject } from '../resources/lazy-schema.js';
import type { Limits } from './limits.js';

/**
 * Payloads the model produces through tool calls: the recursive plan (`create_plan`, seed
 * roadmap-v2 "Tasks are created by the Plan service through a single Tool call with a recursive
 * JSON payload") and the supervisor's verdict (`submit_verdict`). The zod schemas are the
 * source of the tools' JSON schemas, so what the model is told and what is validated agree.
 */

const text = (max: number, description: string) => z.string().trim().min(1).max(max).describe(description);

/** One task of a plan, recursively. */
export interface TaskPayload {
  title: string;
  purpose: string;
  instructions: string;
  applicability: string;
  evaluation: string;
  subtasks?: TaskPayload[] | undefined;
}

/** Longest text of each task field, in characters (what the model is told and what is validated). */
export const TASK_TEXT_LIMITS = {
  title: 200,
  purpose: 2_000,
  instructions: 2_000,
  applicability: 1_000,
  evaluation: 1_000,
} as const;

export const TaskPayloadSchema: z.ZodType<TaskPayload> = lazyStrictObject(() => ({
  title: text(TASK_TEXT_LIMITS.title, 'Short title of the task'),
  purpose: text(
    TASK_TEXT_LIMITS.purpose,
    'What the task must accomplish (for a question: the question itself)',
  ),
  instructions: text(TASK_TEXT_LIMITS.instructions, 'How to carry it out'),
  applicability: text(TASK_TEXT_LIMITS.applicability, 'What kind of task this is, for choosing an assistant'),
  evaluation: text(
    TASK_TEXT_LIMITS.evaluation,
    'What a successful result looks like; judged by the supervisor',
  ),
  get subtasks() {
    return z
      .array(TaskPayloadSchema)
      .optional()
      .describe('Subtasks; omit for a task one assistant can do directly');
  },
}));

/** The `create_plan` tool input. */
export const PlanPayloadSchema = lazyStrictObject(() => ({
  tasks: z
    .array(TaskPayloadSchema)
    .min(1)
    .describe('Root tasks; a multi-part request is one root task with subtasks'),
}));
export type PlanPayload = z.infer<typeof PlanPayloadSchema>;

/**
 * A corrective subtask: a task payload plus the id of the subtask it corrects, if any. Its title
 * and applicability may be left out (issue 25: fewer tokens in every verdict request): they
 * default to the redone subtask's ("Retry: <title>", its applicability), or to the purpose for a
 * new part ({@link completeCorrective}). Recursive in itself (its subtasks are of the same
 * shape), so its JSON schema is one `$defs` entry rather than the task's fields inline plus the
 * task schema again. `corrects` is read on the verdict's own corrective subtasks only.
 */
export interface CorrectivePayload extends Omit<TaskPayload, 'title' | 'applicability' | 'subtasks'> {
  title?: string | undefined;
  applicability?: string | undefined;
  corrects?: string | undefined;
  subtasks?: CorrectivePayload[] | undefined;
}

export const CorrectivePayloadSchema: z.ZodType<CorrectivePayload> = lazyStrictObject(() => ({
  title: z
    .string()
    .trim()
    .min(1)
    .max(TASK_TEXT_LIMITS.title)
    .optional()
    .describe("Default: the redone subtask's"),
  purpose: text(
    TASK_TEXT_LIMITS.purpose,
    'What the task must accomplish (for a question: the question itself)',
  ),
  instructions: text(TASK_TEXT_LIMITS.instructions, 'How to carry it out'),
  applicability: z
    .string()
    .trim()
    .min(1)
    .max(TASK_TEXT_LIMITS.applicability)
    .optional()
    .describe("Default: the redone subtask's"),
  evaluation: text(
    TASK_TEXT_LIMITS.evaluation,
    'What a successful result looks like; judged by the supervisor',
  ),
  get subtasks() {
    return z
      .array(CorrectivePayloadSchema)
      .optional()
      .describe('Subtasks; omit for a task one assistant can do directly');
  },
  corrects: z.string().optional().describe('Id of the subtask it redoes'),
}));

/**
 * A corrective subtask as a task payload: its title and applicability filled in where it left
 * them out, from `redone` (the subtask it redoes: "Retry: <its title>", its applicability) or
 * else from its purpose (cut to the field's limit); its own subtasks likewise, from themselves.
 * Its `corrects` and its subtasks' are left out: the caller resolves the top-level one to a URN
 * (a stored Task's `corrects` is a URN; a nested one, which no supervisor reads, would be the
 * model's short id and fail the Task schema, so the corrective round could not be stored).
 */
export function completeCorrective(
  payload: CorrectivePayload,
  redone?: { title: string; applicability: string },
): TaskPayload {
  const { subtasks, title, applicability, corrects: _ignored, ...rest } = payload;
  const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
  return {
    ...rest,
    title:
      title ??
      clip(
        redone ? `Retry: ${redone.title.replace(/^Retry: /, '')}` : payload.purpose,
        TASK_TEXT_LIMITS.title,
      ),
    applicability:
      applicability ?? redone?.applicability ?? clip(payload.purpose, TASK_TEXT_LIMITS.applicability),
    ...(subtasks ? { subtasks: subtasks.map((s) => completeCorrective(s)) } : {}),
  };
}

/**
 * The `submit_verdict` tool input. Subtasks are named by the short ids of the judge's prompt
 * (`s1`, `s2`, … in order; a URN is accepted too) rather than their URNs (issue 25: about 45
 * tokens less per subtask); the assistant step maps them back ({@link resolveSubtaskId}).
 */
export const VerdictPayloadSchema = lazyStrictObject(() => ({
  pass: z.boolean().describe('True when the subtasks together meet the task evaluation'),
  reason: text(2_000, 'Why'),
  subtasks: z
    .array(
      z.strictObject({
        id: z.string().max(1_024).describe('s1, s2, …'),
        pass: z.boolean(),
        reason: z.string().max(2_000),
        missing: z
          .array(z.string().trim().min(1).max(200))
          .max(50)
          .optional()
          .describe('What it lacks (terms, identifiers, facts)'),
      }),
    )
    .describe('Judgement of each subtask output'),
  corrective: z
    .array(CorrectivePayloadSchema)
    .max(8)
    .default([])
    .describe('Corrective subtasks when pass is false'),
}));
export type VerdictPayload = z.infer<typeof VerdictPayloadSchema>;

/** The short id of the judge's prompt for the subtask at `index` (0-based): `s1`, `s2`, …. */
export function subtaskId(index: number): string {
  return `s${index + 1}`;
}

/**
 * The URN a verdict's subtask id stands for: `sN` (also `SN`, `s N` or a bare `N`, as a model may
 * mistype it) → `slots[N - 1]` (undefined when there is no such subtask); anything else is taken
 * as a URN, unchanged.
 */
export function resolveSubtaskId(id: string, slots: readonly string[]): string | undefined {
  const n = /^s?\s*(\d{1,4})$/i.exec(id.trim())?.[1];
  return n === undefined ? id : slots[Number(n) - 1];
}

/** Name of the planner tool. */
export const CREATE_PLAN = 'create_plan';
/** Name of the supervisor tool. */
export const SUBMIT_VERDICT = 'submit_verdict';

/**
 * A Converse tool spec from a zod schema, as the model reads it (`inputSchema.json` computed at its
 * first read, then kept): the JSON Schema of its input without `$schema` and without `minLength: 1` (a text must not be empty: every model writes
 * one, and the zod schema, which validates the reply, still says so after trimming; issue 25:
 * fewer tokens in every planner and judge request).
 */
function toolSpec(name: string, description: string, schema: z.ZodType): ToolSpec {
  // Computed at the first read, not at import: converting the schema costs ≈ 10 ms of CPU at
  // every cold start of the functions that import it, most of which never send it.
  let json: Record<string, JsonValue> | undefined;
  return {
    name,
    description,
    inputSchema: {
      get json(): Record<string, JsonValue> {
        if (!json) {
          const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<
            string,
            JsonValue
          >;
          json = withoutMinLengthOne(rest) as Record<string, JsonValue>;
        }
        return json;
      },
    },
  };
}

function withoutMinLengthOne(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withoutMinLengthOne);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, v]) => !(key === 'minLength' && v === 1))
      .map(([key, v]) => [key, withoutMinLengthOne(v)]),
  );
}

/** Converse tool spec of `create_plan`. */
export const CREATE_PLAN_SPEC: ToolSpec = toolSpec(
  CREATE_PLAN,
  'Create the task tree for the user message.',
  PlanPayloadSchema,
);

/** Converse tool spec of `submit_verdict`. */
export const SUBMIT_VERDICT_SPEC: ToolSpec = toolSpec(
  SUBMIT_VERDICT,
  'Judge the subtask outputs; ask for corrective subtasks where they fall short.',
  VerdictPayloadSchema,
);

/**
 * Validates a plan from the model and enforces depth and breadth limits.
 * @throws ValidationError naming the first problem (shape, depth or breadth)
 */
export function parsePlanPayload(input: unknown, limits: Limits, baseDepth = 0): PlanPayload {
  const parsed = PlanPayloadSchema.safeParse(input);
  if (!parsed.success)
    throw new ValidationError(`model reply is not a valid plan: ${z.prettifyError(parsed.error)}`);
  checkBounds(parsed.data.tasks, baseDepth + 1, limits);
  return parsed.data;
}

/**
 * Validates a verdict from the model.
 * @throws ValidationError
 */
export function parseVerdictPayload(input: unknown, limits: Limits, depth: number): VerdictPayload {
  const parsed = VerdictPayloadSchema.safeParse(input);
  if (!parsed.success) {
    throw new ValidationError(`model reply is not a valid verdict: ${z.prettifyError(parsed.error)}`);
  }
  checkBounds(parsed.data.corrective, depth + 1, limits, true);
  return parsed.data;
}

/** A payload tree as {@link checkBounds} walks it. */
interface Nested {
  subtasks?: readonly Nested[] | undefined;
}

function checkBounds(tasks: readonly Nested[], depth: number, limits: Limits, allowEmpty = false): void {
  if (!allowEmpty && tasks.length === 0) throw new ValidationError('plan has no tasks');
  if (tasks.length > limits.maxSubtasks) {
    throw new ValidationError(
      `plan has ${tasks.length} tasks at depth ${depth}; the limit is ${limits.maxSubtasks}`,
    );
  }
  if (depth > limits.maxDepth) {
    throw new ValidationError(`plan nests tasks to depth ${depth}; the limit is ${limits.maxDepth}`);
  }
  for (const task of tasks) if (task.subtasks?.length) checkBounds(task.subtasks, depth + 1, limits);
}
