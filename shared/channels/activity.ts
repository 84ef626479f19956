import { NAMES, outputUrn } from '../domain/common.js';
import { outcomeOf } from '../domain/outcome.js';
import type { ResourceTree } from '../domain/progress.js';
import type { AnyResource, Message, Plan, Task, ToolCallResource, Verdict } from '../resources/schemas.js';
import { childUrn, rootOf } from '../urn.js';
import type { CallView, TaskTimes, TimelineStep, UsageView } from './api-schemas.js';

/**
 * What a task did, read from its resources for the status view and the console (issue 15): its
 * tool calls with arguments and results, its model calls and tokens, when it was queued, started
 * and finished, and a timeline of a user Message's steps. Everything comes from the stored
 * resources' contents and `createdAt` times (the event log), nothing from a projection.
 */

/** Largest tool result text a view carries, in characters (the rest is cut, `truncated` set). */
export const MAX_RESULT_CHARS = 2_000;

/** Views of a task's activity: zod schemas in api-schemas.ts, the one source of the API's contract. */
export type { CallView, TaskTimes, TimelineStep, UsageView } from './api-schemas.js';

/** The tool calls of a task, oldest first, each with its result when stored. */
export function callsOf(task: Task, tree: ResourceTree): CallView[] {
  return (tree.byParent.get(task.meta.id) ?? [])
    .filter((r): r is ToolCallResource => r.meta.type === 'tool.Call')
    .sort(byCreation)
    .map((call) => {
      const result = tree.byUrn.get(childUrn(task.meta.id, 'common.Message', NAMES.result(call.meta.name))) as
        | Message
        | undefined;
      const requestedAt = call.meta.createdAt;
      return {
        urn: call.meta.id,
        name: call.call.name,
        input: call.call.input,
        ...(requestedAt ? { requestedAt } : {}),
        ...(result ? { result: resultView(result, requestedAt) } : {}),
      };
    });
}

function resultView(result: Message, requestedAt: string | undefined): NonNullable<CallView['result']> {
  const at = result.meta.createdAt;
  return {
    status: result.status ?? (result.error ? 'ERROR' : 'OK'),
    bytes: Buffer.byteLength(result.content),
    content: result.content.slice(0, MAX_RESULT_CHARS),
    truncated: result.content.length > MAX_RESULT_CHARS,
    ...(at ? { at } : {}),
    ...(at && requestedAt ? { ms: Date.parse(at) - Date.parse(requestedAt) } : {}),
  };
}

/** Model calls (turns with usage), their tokens and tool calls of a task's own resources. */
export function usageOf(task: Task, tree: ResourceTree): UsageView {
  const usage: UsageView = { modelCalls: 0, tokens: 0, toolCalls: 0 };
  for (const child of tree.byParent.get(task.meta.id) ?? []) add(usage, child);
  return usage;
}

/** Adds one resource's charge (as the budget projection counts it: shared/projections/replay.ts). */
function add(usage: UsageView, resource: AnyResource): void {
  if (resource.meta.type === 'tool.Call') usage.toolCalls++;
  if ('usage' in resource && resource.usage) {
    usage.modelCalls++;
    usage.tokens += resource.usage.totalTokens;
  }
}

/** What a user Message's subtree (its answer included) has used. */
export function turnUsage(message: Message, tree: ResourceTree, answer: Message | undefined): UsageView {
  const usage: UsageView = { modelCalls: 0, tokens: 0, toolCalls: 0 };
  const stack = [message.meta.id];
  while (stack.length > 0) {
    for (const child of tree.byParent.get(stack.pop() as string) ?? []) {
      add(usage, child);
      stack.push(child.meta.id);
    }
  }
  if (answer) add(usage, answer);
  return usage;
}

/**
 * When a task was queued (stored), started (the first resource under it that is not a subtask:
 * a model turn, a tool call, a verdict) and finished (its output).
 */
export function taskTimes(task: Task, tree: ResourceTree): TaskTimes {
  const own = (tree.byParent.get(task.meta.id) ?? []).filter(
    (r) => r.meta.type !== 'plan.Task' && r.meta.name !== NAMES.output,
  );
  const started = own
    .map((r) => r.meta.createdAt)
    .filter((at): at is string => !!at)
    .sort()[0];
  const subtasks = (tree.byParent.get(task.meta.id) ?? []).filter((r) => r.meta.type === 'plan.Task');
  const firstSubtask = subtasks
    .map((r) => r.meta.createdAt)
    .filter((at): at is string => !!at)
    .sort()[0];
  const finished = tree.byUrn.get(outputUrn(task.meta.id))?.meta.createdAt;
  const startedAt = [started, firstSubtask].filter((at): at is string => !!at).sort()[0];
  return {
    ...(task.meta.createdAt ? { queuedAt: task.meta.createdAt } : {}),
    ...(startedAt ? { startedAt } : {}),
    ...(finished ? { finishedAt: finished } : {}),
  };
}

/**
 * The steps of one user Message on a time axis, ordered by when they were queued: the plan (from
 * the message to the Plan), each task (stored → first write → output), each tool call (call →
 * result), each verdict (the last subtask output it judged → the verdict) and the answer (the
 * last root output → the answer).
 */
export function timelineOf(message: Message, tree: ResourceTree): TimelineStep[] {
  const steps: TimelineStep[] = [];
  const urn = message.meta.id;
  const plan = tree.byUrn.get(childUrn(urn, 'plan.Plan', NAMES.plan)) as Plan | undefined;
  steps.push({
    kind: 'plan',
    urn: plan?.meta.id ?? urn,
    label: 'plan',
    depth: 0,
    ...at('queuedAt', message.meta.createdAt),
    ...at('finishedAt', plan?.meta.createdAt),
    outcome: plan ? (plan.error ? 'failed' : 'ok') : 'open',
  });
  const walk = (parent: string) => {
    const tasks = (tree.byParent.get(parent) ?? []).filter((r): r is Task => r.meta.type === 'plan.Task');
    for (const task of tasks) {
      const times = taskTimes(task, tree);
      const output = tree.byUrn.get(outputUrn(task.meta.id)) as Message | undefined;
      steps.push({
        kind: 'task',
        urn: task.meta.id,
        label: task.title,
        depth: task.depth,
        ...at('queuedAt', times.queuedAt),
        ...at('startedAt', times.startedAt),
        ...at('finishedAt', times.finishedAt),
        outcome: output ? stepOutcome(output) : 'open',
      });
      for (const call of callsOf(task, tree))
        steps.push({
          kind: 'tool',
          urn: call.urn,
          label: call.name,
          depth: task.depth + 1,
          ...at('queuedAt', call.requestedAt),
          ...at('finishedAt', call.result?.at),
          outcome: call.result ? (call.result.status === 'OK' ? 'ok' : 'failed') : 'open',
        });
      for (const verdict of (tree.byParent.get(task.meta.id) ?? []).filter(
        (r): r is Verdict => r.meta.type === 'plan.Verdict',
      )) {
        const judged = verdict.subtasks
          .map((s) => tree.byUrn.get(outputUrn(s.urn))?.meta.createdAt)
          .filter((t): t is string => !!t)
          .sort()
          .at(-1);
        steps.push({
          kind: 'verdict',
          urn: verdict.meta.id,
          label: `verdict round ${verdict.round} on ${task.title}`,
          depth: task.depth + 1,
          ...at('queuedAt', judged),
          ...at('finishedAt', verdict.meta.createdAt),
          outcome: verdict.pass ? 'ok' : 'failed',
        });
      }
      walk(task.meta.id);
    }
  };
  walk(urn);
  const answer = tree.byUrn.get(childUrn(rootOf(urn), 'common.Message', NAMES.answer(urn))) as
    | Message
    | undefined;
  if (answer) {
    const lastRoot = (plan?.tasks ?? [])
      .map((task) => tree.byUrn.get(outputUrn(task))?.meta.createdAt)
      .filter((t): t is string => !!t)
      .sort()
      .at(-1);
    steps.push({
      kind: 'answer',
      urn: answer.meta.id,
      label: 'answer',
      depth: 0,
      ...at('queuedAt', lastRoot ?? plan?.meta.createdAt),
      ...at('finishedAt', answer.meta.createdAt),
      outcome: stepOutcome(answer),
    });
  }
  return steps.sort((a, b) => (a.queuedAt ?? '').localeCompare(b.queuedAt ?? ''));
}

/** The timeline outcome of a stored task output or answer. */
function stepOutcome(message: Message): TimelineStep['outcome'] {
  const outcome = outcomeOf(message);
  return outcome === 'done' ? 'ok' : outcome;
}

function at<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value ? { [key]: value } : {}) as { [P in K]?: string };
}

function byCreation(a: AnyResource, b: AnyResource): number {
  return (a.meta.createdAt ?? '').localeCompare(b.meta.createdAt ?? '') || a.meta.id.localeCompare(b.meta.id);
}
