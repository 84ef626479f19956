import { outcomeOf } from '../shared/domain/outcome.js';
import { conversationProgress } from '../shared/domain/progress.js';
import type {
  AnyResource,
  Chunk,
  Document,
  Message,
  Plan,
  Task,
  ToolCallResource,
  Verdict,
} from '../shared/resources/schemas.js';
import { parentOf } from '../shared/urn.js';

/**
 * Renders a stored subtree as the task tree the CLI shows: each task's status (derived from its
 * child resources: output, failure, verdicts), elected assistant with similarity score and
 * runner-up, tool calls with their result status, and corrective rounds.
 */

/** Derived status of a task. */
export type TaskStatus = 'pending' | 'running' | 'waiting' | 'done' | 'partial' | 'failed';

interface Index {
  byParent: Map<string, AnyResource[]>;
}

function indexOf(resources: readonly AnyResource[]): Index {
  const byParent = new Map<string, AnyResource[]>();
  for (const resource of resources) {
    const parent = parentOf(resource.meta.id) ?? '';
    const list = byParent.get(parent) ?? [];
    list.push(resource);
    byParent.set(parent, list);
  }
  return { byParent };
}

/** Status of a task from its children. */
export function statusOf(task: Task, children: readonly AnyResource[]): TaskStatus {
  const output = children.find((c) => c.meta.type === 'common.Message' && c.meta.name === 'output') as
    | Message
    | undefined;
  if (output) return outcomeOf(output);
  if (task.subtasks.length > 0) return 'waiting';
  return children.length > 0 ? 'running' : 'pending';
}

const ICON: Record<TaskStatus, string> = {
  pending: '○',
  running: '◐',
  waiting: '◔',
  done: '●',
  partial: '◑',
  failed: '✗',
};

/** ` PARTIAL (not answered: …)` for a partial output or answer, else nothing. */
function partialNote(message: Message): string {
  if (!message.unanswered?.length) return '';
  return ` PARTIAL (not answered: ${short(message.unanswered.map((p) => p.title).join('; '), 80)})`;
}

function short(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Lines of the tree under `root` (a Conversation or any URN in it). */
export function renderTree(resources: readonly AnyResource[], root: string): string[] {
  const index = indexOf(resources);
  const lines: string[] = [];
  const rootResource = resources.find((r) => r.meta.id === root);
  lines.push(rootResource ? describe(rootResource, index) : root);
  walk(root, '', index, lines);
  return lines;
}

const ORDER: Record<string, number> = {
  'plan.Plan': 0,
  'plan.Task': 1,
  'tool.Call': 2,
  'common.Message': 3,
  'plan.Verdict': 4,
};

/** Rank of a Message among things created in the same millisecond: user, tool result, output, answer. */
function messageRank(resource: AnyResource): number {
  if (resource.meta.type !== 'common.Message') return 0;
  const message = resource as Message;
  if (message.role === 'user') return 0;
  if (message.role === 'tool') return 1;
  return message.inReplyTo ? 3 : 2;
}

/** An inner-loop turn: shown through its tool calls and the task's output, not on its own line. */
function isTurn(resource: AnyResource): boolean {
  return resource.meta.type === 'common.Message' && /^turn-\d+$/.test(resource.meta.name);
}

/**
 * Order of things happening: creation time; within one millisecond a parent before its
 * children, then by type (a plan, tasks, a call before its result, messages, verdicts).
 */
function byCausality(a: AnyResource, b: AnyResource): number {
  return (
    (a.meta.createdAt ?? '').localeCompare(b.meta.createdAt ?? '') ||
    a.meta.id.split('/').length - b.meta.id.split('/').length ||
    (ORDER[a.meta.type] ?? 9) - (ORDER[b.meta.type] ?? 9) ||
    messageRank(a) - messageRank(b) ||
    a.meta.name.localeCompare(b.meta.name, 'en', { numeric: true })
  );
}

/** Resources in the order they happened ({@link byCausality}), inner-loop turns left out. */
export function causalOrder(resources: readonly AnyResource[]): AnyResource[] {
  return resources.filter((r) => !isTurn(r)).sort(byCausality);
}

/** Children in the order things happened: creation time, then type (a call before its result). */
function children(index: Index, urn: string): AnyResource[] {
  return causalOrder(index.byParent.get(urn) ?? []);
}

/** One line for a resource seen for the first time (plain, non-TTY progress). */
export function describeNew(resource: AnyResource, resources: readonly AnyResource[]): string {
  const depth = resource.meta.id.split('/').length - 1;
  // A line is printed once: a task's status would be stale at once, its output line says how it ended.
  const line =
    resource.meta.type === 'plan.Task'
      ? `task ${taskLine(resource as Task)}`
      : describe(resource, indexOf(resources));
  return `${'  '.repeat(depth)}${line}`;
}

/** A task's title, elected assistant with score and runner-up, and corrective round. */
function taskLine(task: Task): string {
  const e = task.election;
  const runnerUp = e.runnerUp ? `; runner-up ${e.runnerUp.name} ${e.runnerUp.score.toFixed(2)}` : '';
  const round = task.round > 0 ? ` [corrective round ${task.round}]` : '';
  return `${short(task.title, 70)} — ${e.name} (${e.score.toFixed(2)}${runnerUp})${round}`;
}

function walk(urn: string, prefix: string, index: Index, lines: string[]): void {
  const list = children(index, urn);
  list.forEach((resource, i) => {
    const last = i === list.length - 1;
    lines.push(`${prefix}${last ? '└─ ' : '├─ '}${describe(resource, index)}`);
    const nested =
      resource.meta.type === 'plan.Task' ||
      (resource.meta.type === 'common.Message' && (resource as Message).role === 'user');
    if (nested) {
      walk(resource.meta.id, `${prefix}${last ? '   ' : '│  '}`, index, lines);
    }
  });
}

function describe(resource: AnyResource, index: Index): string {
  switch (resource.meta.type) {
    case 'common.Conversation':
      return `conversation ${resource.meta.id}`;
    case 'common.Message': {
      const message = resource as Message;
      if (message.role === 'user') return `user: "${short(message.content, 100)}"`;
      if (message.role === 'tool')
        return `result ${message.status}${message.error ? `: ${short(message.error.message, 80)}` : ''}`;
      if (message.meta.name === 'output') {
        return message.error
          ? `output FAILED: ${short(message.error.message, 100)}`
          : `output${partialNote(message)}: ${message.citations?.length ?? 0} citation(s)`;
      }
      return `answer${message.error ? ` (error: ${short(message.error.message, 60)})` : partialNote(message)}: ${message.citations?.length ?? 0} citation(s)`;
    }
    case 'plan.Plan': {
      const plan = resource as Plan;
      return plan.error
        ? `plan FAILED: ${plan.error.message}`
        : `plan: ${plan.tasks.length} root task(s), model ${plan.model}`;
    }
    case 'plan.Task': {
      const task = resource as Task;
      const status = statusOf(task, index.byParent.get(task.meta.id) ?? []);
      return `${ICON[status]} ${status} ${taskLine(task)}`;
    }
    case 'tool.Call': {
      const call = resource as ToolCallResource;
      return `tool ${call.call.name}(${short(JSON.stringify(call.call.input), 60)})`;
    }
    case 'plan.Verdict': {
      const verdict = resource as Verdict;
      return `verdict round ${verdict.round}: ${verdict.pass ? 'pass' : 'FAIL'} — ${short(verdict.reason, 90)}`;
    }
    case 'doc.Document': {
      const document = resource as Document;
      return `document ${document.path} — ${document.chunks} chunk(s), ${(document.bytes / 1024).toFixed(1)} KB`;
    }
    case 'doc.Chunk': {
      const chunk = resource as Chunk;
      const heading = chunk.heading ? ` ${short(chunk.heading, 60)}` : '';
      return `chunk ${chunk.index + 1}${heading} — ${chunk.meta.id}`;
    }
    default:
      return `${resource.meta.type} ${resource.meta.name}`;
  }
}

/**
 * Status lines of a conversation (`show`): its status (the most severe of its messages') and, per
 * message, its status and, when unanswered, what it waits for and when it last made progress.
 * @param resources the Conversation and its subtree
 * @param stallAfterMs an unanswered message without progress for this long (ms) is `stalled`
 */
export function statusLines(
  resources: readonly AnyResource[],
  conversation: string,
  stallAfterMs: number,
  now: Date = new Date(),
): string[] {
  const progress = conversationProgress(conversation, resources, { now, stallAfterMs });
  const lines = [`status: ${progress.status}`];
  for (const [i, turn] of progress.turns.entries()) {
    const waiting = turn.waitingFor.length
      ? ` — waiting for ${turn.waitingFor.join('; ')} (last progress ${turn.lastProgress ?? 'never'})`
      : '';
    lines.push(`  message ${i + 1}: ${turn.status}${waiting}`);
  }
  return lines;
}
