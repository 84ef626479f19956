import { LimitExceededError, ModelError, toErrorInfo, ValidationError } from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import { typePathOf } from '../events/routing.js';
import type { ContentBlock, ConverseMessage, ConverseRequest, ConverseResponse } from '../llm/port.js';
import { addUsage, correctionTurn } from '../llm/usage.js';
import { budgetExceeded, charge, modelCharge, readBudget } from '../projections/budget.js';
import { countedOutputs, countOutput } from '../projections/counters.js';
import { withMeta } from '../resources/meta.js';
import type { Message, Plan } from '../resources/schemas.js';
import { childUrn, parentOf, rootOf } from '../urn.js';
import { answerMessage, buildTasks, NAMES, outputUrn, planActor, type StepOutcome } from './common.js';
import { MAX_MESSAGE_CHARS } from './limits.js';
import { keepAnswered } from './outcome.js';
import { CREATE_PLAN, CREATE_PLAN_SPEC, type PlanPayload, parsePlanPayload } from './payloads.js';
import type { Deps } from './ports.js';

/**
 * The plan step (DESIGN.md "Flow"; seed roadmap-v2 steps 3 and 5):
 * - on a user Message under a Conversation: one model call with the `create_plan` tool, the
 *   validated task tree persisted with an elected Assistant per task, then the `plan.Plan`;
 * - on the output of a root task: counts it once in the message's round counter
 *   (shared/projections/counters.ts); when the counter reaches the plan's root tasks, the final
 *   assistant Message under the conversation.
 * Decisions come from stored state, so duplicates and any delivery order give one result. The
 * plan's model call is checked against and charged to the conversation budget.
 */
export async function planStep(event: ResourcePutEvent, deps: Deps): Promise<StepOutcome> {
  const path = typePathOf(event.urn);
  if (path === 'common.Conversation/common.Message') return onConversationMessage(event.urn, deps);
  if (path === 'common.Conversation/common.Message/plan.Task/common.Message') {
    const task = parentOf(event.urn) as string;
    if (event.urn !== outputUrn(task))
      return { action: 'ignored', urn: event.urn, detail: 'not a task output' };
    const messageUrn = parentOf(task) as string;
    const done = await countOutput(deps.projections, messageUrn, 0, event.urn);
    return completeAnswer(messageUrn, deps, done);
  }
  return { action: 'ignored', urn: event.urn, detail: `not for plan: ${path}` };
}

const PLANNER =
  'You are the planner. Turn the user message into a task tree with ONE call of the create_plan tool. ' +
  'Make one root task per independent request; split a request with several parts into subtasks ' +
  '(one per part), nesting only as deep as the work needs. Give every task a purpose, instructions, ' +
  'applicability and evaluation: the evaluation is what a supervisor will check. Each subtask must stand ' +
  'on its own: when a part refers to an earlier one ("that bucket", "it"), name the referent in its purpose ' +
  '("... that bucket (that bucket: the versioned S3 bucket)"), because the subtask is searched and answered ' +
  'without the other parts. For a "how do I" question over code documentation, the evaluation asks for the ' +
  'identifier or code that does it, from a cited chunk.';

async function onConversationMessage(messageUrn: string, deps: Deps): Promise<StepOutcome> {
  const actor = planActor(messageUrn);
  const message = await deps.resources.getAs(actor, 'common.Message', messageUrn);
  if (message.role !== 'user') return { action: 'ignored', urn: messageUrn, detail: `role ${message.role}` };
  const planUrn = childUrn(messageUrn, 'plan.Plan', NAMES.plan);
  const existing = await deps.resources.find(actor, 'plan.Plan', planUrn);
  if (existing) {
    // A crash between the Plan's write and its charge leaves the charge to this repeat.
    if (existing.usage) await charge(deps.projections, existing, modelCharge(existing.usage), deps.now());
    return completeAnswer(messageUrn, deps);
  }
  // Channels that do not check the length themselves (Slack, Teams) are told the limit here.
  if (message.content.length > MAX_MESSAGE_CHARS)
    return failPlanning(messageUrn, messageTooLong(message.content.length), deps);
  const over = budgetExceeded(await readBudget(deps.projections, rootOf(messageUrn)), deps.limits, {
    now: deps.now(),
    messageStartedAt: message.meta.createdAt,
  });
  if (over) return failPlanning(messageUrn, over, deps);

  const assistants = deps.catalog.assistants.map((a) => `- ${a.meta.name}: ${a.meta.purpose}`).join('\n');
  const request: ConverseRequest = {
    step: 'plan',
    system: [{ text: `${PLANNER}\n\nAvailable assistants:\n${assistants}` }],
    messages: [{ role: 'user', content: [{ text: message.content }] }],
    toolConfig: { tools: [{ toolSpec: CREATE_PLAN_SPEC }], toolChoice: { tool: { name: CREATE_PLAN } } },
  };

  let payload: PlanPayload | undefined;
  let failure: unknown;
  let usage: ConverseResponse['usage'] = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  // One model call; a reply that is not a valid plan gets one correction with the error.
  for (let attempt = 1; attempt <= 2 && !payload; attempt++) {
    let response: Awaited<ReturnType<typeof deps.model.converse>>;
    try {
      response = await deps.model.converse(request);
    } catch (error) {
      // Retryable (throttled, unavailable): the invocation fails, so the event is retried (as in
      // the assistant step). A malformed reply gets the second attempt, as an invalid plan does.
      // A rejected request (access denied, a bad request) fails the same way on every retry: the
      // answer says so now, with what earlier attempts used.
      if (!(error instanceof ModelError) || error.retryable) throw error;
      if (error.malformed && attempt < 2) {
        failure = error;
        deps.logger.warn('malformed reply from model', { messageUrn, attempt, error: error.message });
        continue;
      }
      return failPlanning(messageUrn, error, deps, usage.totalTokens > 0 ? usage : undefined);
    }
    usage = addUsage(usage, response.usage);
    const use = response.output.message.content.find(
      (b): b is Extract<ContentBlock, { toolUse: unknown }> =>
        'toolUse' in b && b.toolUse.name === CREATE_PLAN,
    );
    try {
      if (!use) throw new ValidationError('model reply has no create_plan tool call');
      payload = parsePlanPayload(use.toolUse.input, deps.limits);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      failure = error;
      deps.logger.warn('invalid plan from model', { messageUrn, attempt, error: error.message });
      request.messages.push(
        ...correctionTurn(response.output.message as ConverseMessage, use, error, CREATE_PLAN),
      );
    }
  }

  if (!payload) return failPlanning(messageUrn, failure, deps, usage);

  const tasks = await buildTasks(deps, payload.tasks, messageUrn, 1, 0);
  for (const task of tasks) await deps.resources.put(actor, task);
  const plan: Plan = {
    meta: withMeta(
      {
        type: 'plan.Plan',
        name: NAMES.plan,
        parent: messageUrn,
        purpose: `Plan for: ${message.content.slice(0, 200)}`,
      },
      deps.now(),
    ),
    tasks: tasks.filter((t) => t.depth === 1).map((t) => t.meta.id),
    model: deps.model.name,
    usage,
  };
  const stored = (await deps.resources.put(actor, plan)).resource;
  if (stored.usage) await charge(deps.projections, stored, modelCharge(stored.usage), deps.now());
  deps.logger.info('planned', { messageUrn, tasks: tasks.length, roots: plan.tasks.length });
  // A fast leaf may have finished before the Plan existed: check completion now as well.
  const completion = await completeAnswer(messageUrn, deps);
  return completion.action === 'answered'
    ? completion
    : { action: 'planned', urn: planUrn, detail: `${tasks.length} tasks` };
}

/**
 * Stores a `plan.Plan` with no tasks and the error (an invalid plan after the correction, a model
 * call the service rejected, a used-up budget, a dead-lettered user Message), then the final answer that says planning failed.
 * Create-only: when a Plan exists already, that one stands. A Plan carries `usage` (and is
 * charged as a model call) only when a model call was made.
 */
export async function failPlanning(
  messageUrn: string,
  error: unknown,
  deps: Deps,
  usage?: { inputTokens: number; outputTokens: number; totalTokens: number },
): Promise<StepOutcome> {
  const plan: Plan = {
    meta: withMeta({ type: 'plan.Plan', name: NAMES.plan, parent: messageUrn }, deps.now()),
    tasks: [],
    model: deps.model.name,
    ...(usage ? { usage } : {}),
    error: toErrorInfo(error),
  };
  const stored = (await deps.resources.put(planActor(messageUrn), plan)).resource;
  if (stored.usage) await charge(deps.projections, stored, modelCharge(stored.usage), deps.now());
  return completeAnswer(messageUrn, deps);
}

/**
 * Writes the final assistant Message under the conversation once every root task has output:
 * the round counter of the message (`done`, read when not given) must have reached the plan's
 * root tasks before the outputs are read. What the root tasks answered is kept: a failed root
 * task among answered ones is named under "Not answered" and the answer is partial (`unanswered`,
 * no `error`; shared/domain/outcome.ts), as it is when a root task's own output is partial; only
 * when every root task failed does the answer carry the first one's `error`.
 */
async function completeAnswer(messageUrn: string, deps: Deps, done?: number): Promise<StepOutcome> {
  const actor = planActor(messageUrn);
  const plan = await deps.resources.find(actor, 'plan.Plan', childUrn(messageUrn, 'plan.Plan', NAMES.plan));
  if (!plan) return { action: 'waiting', urn: messageUrn, detail: 'no plan yet' };
  const counted = done ?? (plan.tasks.length ? await countedOutputs(deps.projections, messageUrn, 0) : 0);
  if (counted < plan.tasks.length) {
    return { action: 'waiting', urn: messageUrn, detail: `${counted}/${plan.tasks.length} root tasks done` };
  }
  const outputs = await deps.resources.getMany(actor, plan.tasks.map(outputUrn));
  if (outputs.length < plan.tasks.length) {
    return {
      action: 'waiting',
      urn: messageUrn,
      detail: `${outputs.length}/${plan.tasks.length} root tasks done`,
    };
  }
  const roots = await deps.resources.getMany(actor, plan.tasks);
  const parts = (outputs as Message[]).map((output, i) => ({
    urn: plan.tasks[i] as string,
    title: (roots[i] as { title?: string } | undefined)?.title ?? `Task ${i + 1}`,
    output,
  }));
  const failed = parts.filter((p) => p.output.error);
  const answered = parts.filter((p) => !p.output.error);
  let fields: Parameters<typeof answerMessage>[1];
  if (plan.error) {
    fields = { content: `I could not plan this request: ${plan.error.message}`, error: plan.error };
  } else if (answered.length === 0 && failed.length > 0) {
    // Every root task failed: nothing to keep, the answer fails with the first error.
    fields = {
      content: `Not completed: ${failed.map((f) => `${f.title}: ${f.output.error?.message}`).join('; ')}`,
      citations: [],
      ...(failed[0]?.output.error ? { error: failed[0].output.error } : {}),
    };
  } else {
    // What was answered stays; a failed root task is named under "Not answered" (partial).
    const kept = keepAnswered(
      answered,
      failed.map((f) => ({
        task: f.urn,
        title: f.title.slice(0, 200),
        reason: (f.output.error?.message ?? 'failed').slice(0, 2_000),
      })),
    );
    fields = {
      content: kept.content,
      citations: kept.citations,
      ...(kept.sources.length ? { sources: kept.sources } : {}),
      ...(kept.unanswered.length ? { unanswered: kept.unanswered } : {}),
    };
  }
  const answer = answerMessage(messageUrn, fields, deps.now());
  const { created } = await deps.resources.put(actor, answer);
  return {
    action: created ? 'answered' : 'ignored',
    urn: answer.meta.id,
    detail: created ? undefined : 'answer existed',
  };
}

/**
 * The error of a user message over {@link MAX_MESSAGE_CHARS}, naming the limit; `more` when only
 * the first `chars` characters were read.
 */
export function messageTooLong(chars: number, more = false): LimitExceededError {
  return new LimitExceededError(
    `the message is ${more ? 'more than ' : ''}${chars.toLocaleString('en-US')} characters; the limit is ${MAX_MESSAGE_CHARS.toLocaleString('en-US')} (MAX_MESSAGE_CHARS): shorten it or send it in parts`,
    { details: { chars, limit: MAX_MESSAGE_CHARS } },
  );
}
