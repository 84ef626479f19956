import type {
  AnyResource,
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
export type TaskStatus = 'pending' | 'running' | 'waiting' | 'done' | 'failed';

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
  if (output) return output.error ? 'failed' : 'done';
  if (task.subtasks.length > 0) return 'waiting';
  return children.length > 0 ? 'running' : 'pending';
}

const ICON: Record<TaskStatus, string> = { pending: '○', running: '◐', waiting: '◔', done: '●', failed: '✗' };

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

/** Children in the order things happened: creation time, then type (a call before its result). */
function children(index: Index, urn: string): AnyResource[] {
  return (index.byParent.get(urn) ?? [])
    .filter((r) => !(r.meta.type === 'common.Message' && /^turn-\d+$/.test(r.meta.name)))
    .sort(
      (a, b) =>
        (a.meta.createdAt ?? '').localeCompare(b.meta.createdAt ?? '') ||
        (ORDER[a.meta.type] ?? 9) - (ORDER[b.meta.type] ?? 9) ||
        a.meta.name.localeCompare(b.meta.name, 'en', { numeric: true }),
    );
}

/** One line for a resource seen for the first time (plain, non-TTY progress). */
export function describeNew(resource: AnyResource, resources: readonly AnyResource[]): string {
  const depth = resource.meta.id.split('/').length - 1;
  return `${'  '.repeat(depth)}${describe(resource, indexOf(resources))}`;
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
          : `output: ${message.citations?.length ?? 0} citation(s)`;
      }
      return `answer${message.error ? ` (error: ${short(message.error.message, 60)})` : ''}: ${message.citations?.length ?? 0} citation(s)`;
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
      const e = task.election;
      const runnerUp = e.runnerUp ? `; runner-up ${e.runnerUp.name} ${e.runnerUp.score.toFixed(2)}` : '';
      const round = task.round > 0 ? ` [corrective round ${task.round}]` : '';
      return `${ICON[status]} ${status} ${short(task.title, 70)} — ${e.name} (${e.score.toFixed(2)}${runnerUp})${round}`;
    }
    case 'tool.Call': {
      const call = resource as ToolCallResource;
      return `tool ${call.call.name}(${short(JSON.stringify(call.call.input), 60)})`;
    }
    case 'plan.Verdict': {
      const verdict = resource as Verdict;
      return `verdict round ${verdict.round}: ${verdict.pass ? 'pass' : 'FAIL'} — ${short(verdict.reason, 90)}`;
    }
    default:
      return `${resource.meta.type} ${resource.meta.name}`;
  }
}
