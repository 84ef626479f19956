import type {
  AnyResource,
  ApprovalRequest,
  Message,
  Plan,
  Task,
  ToolCallResource,
} from '../resources/schemas.js';
import { childUrn, parentOf, rootOf } from '../urn.js';
import { approvalIdOf, approvalStatus, approvalUrnOf, decisionUrnOf } from './approval.js';
import { NAMES, outputUrn } from './common.js';
import { answerStatus, answerUrnOf, type TurnStatus } from './turn.js';

/**
 * Progress of a conversation, derived from its stored resources alone (the resource tree is the
 * event log, DESIGN.md principle 1): for each user Message (a *turn*) its status, what it waits
 * for, when it last made progress, and which resources to re-emit as `RESOURCE_PUT` to re-drive
 * its pending work. The steps are idempotent (create-only writes, apply-once projections), so
 * re-emitting an event whose effect exists already changes nothing; re-emitting one whose effect is
 * missing makes the step do it. Used by `resume` (cli), `serve` and `ask` at start, the sweeper
 * (shared/domain/sweep.ts) and the status views (`GET /conversations/{id}`, `show`).
 *
 * What a turn waits for, and what is re-emitted for it (the step-relevant effect of each resource):
 *
 * | state | waits for | re-emitted (step that acts) |
 * |---|---|---|
 * | no `plan.Plan` | the plan | the user Message (plan), and the Tasks already stored under it as below |
 * | a leaf Task without output, with a `tool.Call` without its result | the tool result | the `tool.Call` (tool) |
 * | … whose `tool.Approval` has no decision and has not expired | the user's approval | nothing |
 * | a leaf Task without output, every call answered | the next model turn | the Task (assistant: charges the last turn, persists its calls, or calls the model) |
 * | a Task with an output, under a Task without output | its parent's count (and verdict) | the output (assistant: counts it; a complete round is supervised) |
 * | a root Task with an output, no answer | the plan step's count | the output (plan) |
 * | every root Task has an output (or the Plan failed), no answer | the answer | the user Message (plan: completes the answer from the counters) |
 *
 * Waiting for a person is never a stall: a turn with an approval request that has no decision and
 * has not expired is not `stalled` however long it waits and whatever its other tasks did (finished
 * ones included, whose outputs stay in `redrive` for resume). The sweeper leaves it alone until the
 * decision or the expiry (shared/domain/approval.ts), then judges it as any other turn.
 *
 * Tasks with subtasks are never re-emitted themselves (the assistant step ignores them); their
 * children are walked instead, corrective subtasks included (also those stored before their
 * verdict: the supervisor's repeat finds them stored and emits nothing for them).
 */

/** Status of one turn (a user Message): shared/domain/turn.ts. */
export type { TurnStatus } from './turn.js';

/**
 * Severity of statuses, least severe first: a conversation's status is the most severe of its
 * turns' ({@link worstStatus}). An open turn outranks every closed one (a conversation is not
 * finished while one of its messages is not), and a stalled one outranks every other.
 */
export const STATUS_SEVERITY: readonly TurnStatus[] = [
  'done',
  'partial',
  'failed',
  'pending',
  'running',
  'stalled',
];

/** The progress of one turn. */
export interface TurnProgress {
  /** URN of the user Message. */
  message: string;
  status: TurnStatus;
  /** What the turn waits for, one line each (empty when done or failed). */
  waitingFor: string[];
  /** URNs whose `RESOURCE_PUT` re-drives the pending work (empty when done or failed). */
  redrive: string[];
  /** Creation time (ISO 8601) of the newest resource of the turn (its answer included). */
  lastProgress: string | undefined;
}

/** The progress of a conversation. */
export interface ConversationProgress {
  conversation: string;
  /** The most severe turn status; `done` for a conversation with no user Message. */
  status: TurnStatus;
  /** Turns, oldest first. */
  turns: TurnProgress[];
  /** Creation time of the newest resource of the conversation. */
  lastProgress: string | undefined;
}

/** Options of {@link conversationProgress}. */
export interface ProgressOptions {
  /** The time the status is for. */
  now: Date;
  /** An open turn without progress for longer than this (ms) is `stalled`; undefined → never stalled. */
  stallAfterMs?: number;
}

/** The most severe of `statuses` ({@link STATUS_SEVERITY}); `done` for none. */
export function worstStatus(statuses: readonly TurnStatus[]): TurnStatus {
  let worst: TurnStatus = 'done';
  for (const status of statuses)
    if (STATUS_SEVERITY.indexOf(status) > STATUS_SEVERITY.indexOf(worst)) worst = status;
  return worst;
}

/**
 * Derives the progress of `conversation` from its resources (the Conversation and its subtree, in
 * any order; resources of other conversations are ignored).
 */
export function conversationProgress(
  conversation: string,
  resources: readonly AnyResource[],
  options: ProgressOptions,
): ConversationProgress {
  const tree = indexTree(resources.filter((r) => rootOf(r.meta.id) === conversation));
  const turns = (tree.byParent.get(conversation) ?? [])
    .filter((r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'user')
    .sort(byCreation)
    .map((message) => turnProgress(message, tree, options));
  return {
    conversation,
    status: worstStatus(turns.map((t) => t.status)),
    turns,
    lastProgress: newest(resources.filter((r) => rootOf(r.meta.id) === conversation)),
  };
}

/** Resources by URN and by parent URN. */
export interface ResourceTree {
  byUrn: ReadonlyMap<string, AnyResource>;
  byParent: ReadonlyMap<string, AnyResource[]>;
}

/** Indexes resources by URN and by parent. */
export function indexTree(resources: readonly AnyResource[]): ResourceTree {
  const byUrn = new Map<string, AnyResource>();
  const byParent = new Map<string, AnyResource[]>();
  for (const resource of resources) {
    byUrn.set(resource.meta.id, resource);
    const parent = parentOf(resource.meta.id) ?? '';
    const siblings = byParent.get(parent);
    if (siblings) siblings.push(resource);
    else byParent.set(parent, [resource]);
  }
  return { byUrn, byParent };
}

/**
 * The progress of one turn, from the indexed conversation (`tree` must hold the turn's subtree
 * and its answer).
 */
export function turnProgress(message: Message, tree: ResourceTree, options: ProgressOptions): TurnProgress {
  const urn = message.meta.id;
  const answer = tree.byUrn.get(answerUrnOf(urn)) as Message | undefined;
  const lastProgress = newest([message, ...subtree(urn, tree), ...(answer ? [answer] : [])]);
  if (answer)
    return {
      message: urn,
      status: answerStatus(answer),
      waitingFor: [],
      redrive: [],
      lastProgress,
    };
  const plan = tree.byUrn.get(childUrn(urn, 'plan.Plan', NAMES.plan)) as Plan | undefined;
  const pending: Pending = { waitingFor: [], redrive: [], approvals: 0 };
  if (!plan) {
    pending.waitingFor.push('the plan');
    pending.redrive.push(urn);
    // Tasks stored before an interruption, whose Plan is not: the plan step's repeat finds them
    // stored (no new event), so they are re-driven here; a task does not need the Plan to run.
    const roots = (tree.byParent.get(urn) ?? []).filter((r): r is Task => r.meta.type === 'plan.Task');
    for (const root of roots) {
      const output = tree.byUrn.get(outputUrn(root.meta.id));
      if (output) pending.redrive.push(output.meta.id);
      else pendingOfTask(root, tree, pending, options.now);
    }
  } else {
    const roots = plan.tasks.map((task) => tree.byUrn.get(task) as Task | undefined);
    let open = 0;
    for (const [i, root] of roots.entries()) {
      if (!root) {
        // The plan names a task that is not stored: nothing can re-create it (it is the plan step's write).
        pending.waitingFor.push(`root task ${i + 1} (not stored)`);
        open++;
        continue;
      }
      const output = tree.byUrn.get(outputUrn(root.meta.id));
      if (output) pending.redrive.push(output.meta.id);
      else {
        open++;
        pendingOfTask(root, tree, pending, options.now);
      }
    }
    if (open === 0) {
      pending.waitingFor.push('the answer');
      pending.redrive.push(urn);
    }
  }
  // A turn that waits for a person (an approval request not decided and not expired) is never
  // stalled, whatever its other tasks did: a finished sibling's output is re-emitted for its count
  // (in `redrive`, for resume), but the turn cannot end before the decision (or the expiry) anyway.
  const waitsForPerson = pending.approvals > 0;
  const stalled =
    !waitsForPerson &&
    options.stallAfterMs !== undefined &&
    lastProgress !== undefined &&
    options.now.getTime() - Date.parse(lastProgress) > options.stallAfterMs;
  return {
    message: urn,
    status: stalled ? 'stalled' : plan ? 'running' : 'pending',
    waitingFor: pending.waitingFor,
    redrive: [...new Set(pending.redrive)],
    lastProgress,
  };
}

interface Pending {
  waitingFor: string[];
  redrive: string[];
  /** Calls waiting for the user's decision on an approval request that has not expired. */
  approvals: number;
}

/** Collects what a task without output waits for (walking its subtasks) and what re-drives it. */
function pendingOfTask(task: Task, tree: ResourceTree, pending: Pending, now: Date): void {
  const children = tree.byParent.get(task.meta.id) ?? [];
  const subtasks = children.filter((r): r is Task => r.meta.type === 'plan.Task');
  const title = `"${task.title}"`;
  if (task.subtasks.length > 0 || subtasks.length > 0) {
    let open = 0;
    for (const subtask of subtasks) {
      const output = tree.byUrn.get(outputUrn(subtask.meta.id));
      if (output) pending.redrive.push(output.meta.id);
      else {
        open++;
        pendingOfTask(subtask, tree, pending, now);
      }
    }
    if (open === 0) pending.waitingFor.push(`the supervisor's verdict on ${title}`);
    return;
  }
  const calls = children.filter((r): r is ToolCallResource => r.meta.type === 'tool.Call');
  const unanswered = calls.filter(
    (call) => !tree.byUrn.has(childUrn(task.meta.id, 'common.Message', NAMES.result(call.meta.name))),
  );
  for (const call of unanswered) {
    const request = tree.byUrn.get(approvalUrnOf(call.meta.id)) as ApprovalRequest | undefined;
    const decided = request && tree.byUrn.has(decisionUrnOf(request.meta.id));
    if (request && !decided && approvalStatus(request, undefined, now) === 'pending') {
      // Waiting for a person is not a stall: nothing to re-drive until the decision or the expiry.
      pending.waitingFor.push(
        `the user's approval of tool ${call.call.name} for ${title} (request ${approvalIdOf(request.meta.id)}, expires ${request.expiresAt})`,
      );
      pending.approvals++;
      continue;
    }
    pending.waitingFor.push(`the result of tool ${call.call.name} for ${title}`);
    pending.redrive.push(call.meta.id);
  }
  if (unanswered.length === 0) {
    const turns = children.filter((r) => r.meta.type === 'common.Message' && /^turn-\d+$/.test(r.meta.name));
    pending.waitingFor.push(`model turn ${turns.length + 1} of ${title}`);
    pending.redrive.push(task.meta.id);
  }
}

function subtree(urn: string, tree: ResourceTree): AnyResource[] {
  const found: AnyResource[] = [];
  const stack = [urn];
  while (stack.length > 0) {
    const next = stack.pop() as string;
    for (const child of tree.byParent.get(next) ?? []) {
      found.push(child);
      stack.push(child.meta.id);
    }
  }
  return found;
}

function newest(resources: readonly AnyResource[]): string | undefined {
  let latest: string | undefined;
  for (const resource of resources) {
    const at = resource.meta.createdAt;
    if (at !== undefined && (latest === undefined || at > latest)) latest = at;
  }
  return latest;
}

function byCreation(a: AnyResource, b: AnyResource): number {
  return (a.meta.createdAt ?? '').localeCompare(b.meta.createdAt ?? '') || a.meta.id.localeCompare(b.meta.id);
}
