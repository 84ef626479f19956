import { approvalsOf } from '../domain/approval.js';
import { NAMES, outputUrn } from '../domain/common.js';
import { userActor } from '../domain/conversation.js';
import type { Limits } from '../domain/limits.js';
import { outcomeOf } from '../domain/outcome.js';
import { type ProgressOptions, type TurnStatus, turnProgress, worstStatus } from '../domain/progress.js';
import { sourcesOf } from '../domain/sources.js';
import { NotFoundError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { AnyResource, Conversation, Message, Plan, Task, Verdict } from '../resources/schemas.js';
import { childUrn, parentOf, parseUrn, rootOf } from '../urn.js';
import { callsOf, taskTimes, timelineOf, turnUsage, usageOf } from './activity.js';
import type {
  AnswerView,
  ConversationView,
  TaskStatus,
  TaskView,
  TurnView,
  UsageView,
} from './api-schemas.js';

/**
 * Conversations as a channel caller sees them: ownership (callers see only their own
 * conversations), the status view of `GET /conversations/{id}` derived from the stored resources
 * (nothing here is a projection that could drift), and policy-gated reads of single resources
 * (the caller's own conversations, and the shared document corpora its answers cite).
 */

/** The policy user of an HTTP API caller (JWT `sub`), namespaced by channel. */
export function httpUser(subject: string): string {
  return `http:${subject}`;
}

/**
 * Conversation name of an HTTP conversation: the caller and the public id, so the same public id
 * used by another caller names another conversation (another URN, hence 404, not 403).
 */
export function httpConversationName(user: string, publicId: string): string {
  return `${user}/${publicId}`;
}

/** URN of a caller's HTTP conversation. */
export function httpConversationUrn(user: string, publicId: string): string {
  return childUrn(undefined, 'common.Conversation', httpConversationName(user, publicId));
}

/**
 * Reads a conversation as `user` and checks the user started it.
 * @throws NotFoundError when it does not exist or belongs to someone else (existence is not revealed)
 */
export async function ownConversation(
  resources: ResourceIndex,
  user: string,
  urn: string,
): Promise<Conversation> {
  const conversation = await resources.find(userActor(user, urn), 'common.Conversation', urn);
  if (!conversation || conversation.actor !== user) throw new NotFoundError('conversation not found');
  return conversation;
}

/** Root types whose resources are shared document corpora (DESIGN.md "Flow": what answers cite). */
const CORPUS_ROOT = 'doc.Document';

/**
 * The policy actor of a channel caller reading shared document corpora: the caller alone, with
 * no `{conversation}` (rule `user-read-corpora` in policies/rules.json is not scoped to one).
 */
export function corpusReader(user: string): Actor {
  return { kind: 'user', id: user };
}

/**
 * One resource for `GET /resources/{urn}`, through the policy gate:
 * - under a `doc.Document` root (a Document or one of its Chunks, what an answer's `citations`
 *   name): read as {@link corpusReader}; corpora are shared, so no ownership check applies and
 *   the policy alone decides (rule `user-read-corpora`, granted by the `http` bundle: get only);
 * - under a `common.Conversation` root: only when the caller started that conversation, read as
 *   `userActor(user, conversation)`;
 * - under any other root: not found.
 * @throws InvalidUrnError for a malformed URN; NotFoundError when the resource does not exist,
 *   has another root, or its conversation is someone else's; PolicyDeniedError when the policy
 *   denies (e.g. a bundle without `user-read-corpora`, or a URN below a Chunk)
 */
export async function readCallerResource(
  resources: ResourceIndex,
  user: string,
  urn: string,
): Promise<AnyResource> {
  parseUrn(urn);
  const root = rootOf(urn);
  const type = parseUrn(root).elements[0]?.type;
  if (type === CORPUS_ROOT) return readOrNotFound(resources, corpusReader(user), urn);
  if (type !== 'common.Conversation') throw new NotFoundError('resource not found');
  await ownConversation(resources, user, root);
  return readOrNotFound(resources, userActor(user, root), urn);
}

/** `resources.get`, with a missing object reported without its storage key. */
async function readOrNotFound(resources: ResourceIndex, actor: Actor, urn: string): Promise<AnyResource> {
  try {
    return await resources.get(actor, urn);
  } catch (error) {
    if (error instanceof NotFoundError) throw new NotFoundError('resource not found', { cause: error });
    throw error;
  }
}

/**
 * The status view's types: `z.infer` of the zod schemas in api-schemas.ts, from which the OpenAPI
 * document is generated too (`TaskStatus`: `pending|running|waiting|done|failed`; `TurnView.status`
 * and `ConversationView.status`: `ConversationStatus`).
 */
export type { AnswerView, ConversationView, TaskStatus, TaskView, TurnView } from './api-schemas.js';

/** A task as progress displays show it (Slack/Teams progress, the status view's base). */
export type TaskSummary = Omit<
  TaskView,
  'evaluation' | 'calls' | 'usage' | 'times' | 'citations' | 'sources' | 'subtasks'
> & {
  subtasks: TaskSummary[];
};

/**
 * Builds the status view of a conversation from its stored subtree (read as `user`): each user
 * Message with its plan, task tree (statuses, assistants, verdicts) and final answer.
 * @throws PolicyDeniedError
 */
export async function conversationView(
  resources: ResourceIndex,
  user: string,
  conversation: Conversation,
  publicId: string,
  options: ProgressOptions & { limits?: Limits } = { now: new Date() },
): Promise<ConversationView> {
  const urn = conversation.meta.id;
  const subtree = await resources.list(userActor(user, urn), urn);
  const { byParent, byUrn } = indexed(subtree);
  const userMessages = (byParent.get(urn) ?? [])
    .filter((r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'user')
    .sort(byCreation);
  const messages = userMessages.map((message) => turnView(message, byParent, byUrn, options));
  const answered = messages.filter((m) => m.answer).at(-1)?.answer;
  return {
    id: publicId,
    urn,
    channel: conversation.channel.kind,
    ...(conversation.meta.createdAt ? { createdAt: conversation.meta.createdAt } : {}),
    status: messages.length ? worstStatus(messages.map((m) => m.status)) : 'pending',
    messages,
    ...(answered ? { answer: answered } : {}),
    approvals: approvalsOf(subtree, options.now),
    budget: {
      used: {
        modelCalls: sum(messages, 'modelCalls'),
        tokens: sum(messages, 'tokens'),
        toolCalls: sum(messages, 'toolCalls'),
      },
      limits: {
        modelCalls: options.limits?.conversationModelCalls ?? 0,
        tokens: options.limits?.conversationTokens ?? 0,
        toolCalls: options.limits?.conversationToolCalls ?? 0,
      },
    },
  };
}

/**
 * The view of one user Message (its plan, task tree and answer), read as `user` of its
 * conversation: what a progress display needs without reading the whole conversation.
 * @throws NotFoundError when the message does not exist, PolicyDeniedError
 */
export async function turnOf(resources: ResourceIndex, user: string, messageUrn: string): Promise<TurnView> {
  const conversation = rootOf(messageUrn);
  const actor = userActor(user, conversation);
  const message = await resources.getAs(actor, 'common.Message', messageUrn);
  const answer = await resources.find(
    actor,
    'common.Message',
    childUrn(conversation, 'common.Message', NAMES.answer(messageUrn)),
  );
  const { byParent, byUrn } = indexed([
    ...(await resources.list(actor, messageUrn)),
    ...(answer ? [answer] : []),
  ]);
  return turnView(message, byParent, byUrn, { now: new Date() });
}

function sum(messages: readonly TurnView[], key: keyof UsageView): number {
  return messages.reduce((total, m) => total + m.usage[key], 0);
}

function indexed(resources: readonly AnyResource[]) {
  const byParent = new Map<string, AnyResource[]>();
  const byUrn = new Map<string, AnyResource>();
  for (const resource of resources) {
    byUrn.set(resource.meta.id, resource);
    const parent = parentOf(resource.meta.id) ?? '';
    byParent.set(parent, [...(byParent.get(parent) ?? []), resource]);
  }
  return { byParent, byUrn };
}

function turnView(
  message: Message,
  byParent: ReadonlyMap<string, AnyResource[]>,
  byUrn: ReadonlyMap<string, AnyResource>,
  options: ProgressOptions,
): TurnView & { status: TurnStatus } {
  const urn = message.meta.id;
  const plan = byUrn.get(childUrn(urn, 'plan.Plan', NAMES.plan)) as Plan | undefined;
  const answer = byUrn.get(childUrn(rootOf(urn), 'common.Message', NAMES.answer(urn))) as Message | undefined;
  const tasks = tasksUnder(urn, byParent, byUrn);
  const progress = turnProgress(message, { byParent, byUrn }, options);
  return {
    urn,
    content: message.content,
    ...(message.meta.createdAt ? { createdAt: message.meta.createdAt } : {}),
    status: progress.status,
    ...(progress.waitingFor.length ? { waitingFor: progress.waitingFor } : {}),
    ...(progress.lastProgress ? { lastProgress: progress.lastProgress } : {}),
    ...(plan
      ? {
          plan: { tasks: plan.tasks.length, model: plan.model, ...(plan.error ? { error: plan.error } : {}) },
        }
      : {}),
    tasks,
    ...(answer ? { answer: answerView(answer) } : {}),
    usage: turnUsage(message, { byParent, byUrn }, answer),
    timeline: timelineOf(message, { byParent, byUrn }),
  };
}

/** The answer part of a final assistant Message. */
export function answerView(answer: Message): AnswerView {
  return {
    urn: answer.meta.id,
    status: outcomeOf(answer),
    content: answer.content,
    citations: answer.citations ?? [],
    sources: sourcesOf(answer),
    ...(answer.error ? { error: answer.error } : {}),
    ...(answer.unanswered ? { unanswered: answer.unanswered } : {}),
    ...(answer.meta.createdAt ? { createdAt: answer.meta.createdAt } : {}),
  };
}

function tasksUnder(
  parent: string,
  byParent: ReadonlyMap<string, AnyResource[]>,
  byUrn: ReadonlyMap<string, AnyResource>,
): TaskView[] {
  return (byParent.get(parent) ?? [])
    .filter((r): r is Task => r.meta.type === 'plan.Task')
    .sort(
      (a, b) =>
        a.round - b.round ||
        byCreation(a, b) ||
        a.meta.name.localeCompare(b.meta.name, 'en', { numeric: true }),
    )
    .map((task) => {
      const children = byParent.get(task.meta.id) ?? [];
      const output = byUrn.get(outputUrn(task.meta.id)) as Message | undefined;
      const status: TaskStatus = output
        ? outcomeOf(output)
        : task.subtasks.length > 0
          ? 'waiting'
          : children.length > 0
            ? 'running'
            : 'pending';
      const verdicts = children
        .filter((r): r is Verdict => r.meta.type === 'plan.Verdict')
        .sort((a, b) => a.round - b.round)
        .map((v) => ({
          round: v.round,
          pass: v.pass,
          reason: v.reason,
          subtasks: v.subtasks,
          corrective: v.corrective,
        }));
      const tree = { byParent, byUrn };
      const runnerUp = task.election.runnerUp;
      return {
        urn: task.meta.id,
        title: task.title,
        status,
        assistant: task.election.name,
        score: task.election.score,
        ...(runnerUp ? { runnerUp: { name: runnerUp.name, score: runnerUp.score } } : {}),
        evaluation: task.meta.evaluation,
        depth: task.depth,
        round: task.round,
        ...(task.corrects ? { corrects: task.corrects } : {}),
        ...(output?.error ? { error: output.error } : {}),
        ...(output?.unanswered ? { unanswered: output.unanswered } : {}),
        verdicts,
        calls: callsOf(task, tree),
        usage: usageOf(task, tree),
        times: taskTimes(task, tree),
        citations: output?.citations ?? [],
        sources: output ? sourcesOf(output) : [],
        subtasks: tasksUnder(task.meta.id, byParent, byUrn),
      };
    });
}

function byCreation(a: AnyResource, b: AnyResource): number {
  return (a.meta.createdAt ?? '').localeCompare(b.meta.createdAt ?? '');
}

/** Counts of a user message's tasks (any depth, corrective ones included), for progress displays. */
export function taskCounts(tasks: readonly TaskView[]): { total: number; done: number; failed: number } {
  let total = 0;
  let done = 0;
  let failed = 0;
  const walk = (list: readonly TaskView[]) => {
    for (const task of list) {
      total++;
      if (task.status === 'done') done++;
      if (task.status === 'failed') failed++;
      walk(task.subtasks);
    }
  };
  walk(tasks);
  return { total, done, failed };
}
