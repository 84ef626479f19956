import { renderTurnResults, resolveCitationArguments, resolveCitations } from '../context/render-results.js';
import { buildWindow, type PriorTurn } from '../context/window.js';
import { LimitExceededError, ModelError, toErrorInfo, ValidationError } from '../errors.js';
import type { ResourcePutEvent } from '../events/envelope.js';
import type { ContentBlock, ConverseMessage, ConverseRequest, ConverseResponse } from '../llm/port.js';
import { addUsage, correctionTurn } from '../llm/usage.js';
import {
  type BudgetUsage,
  budgetExceeded,
  charge,
  modelCharge,
  readBudget,
  TOOL_CHARGE,
} from '../projections/budget.js';
import { countedOutputs, countOutput } from '../projections/counters.js';
import { toDescription, withMeta } from '../resources/meta.js';
import type {
  Assistant,
  Message,
  Task,
  ToolCall,
  ToolCallResource,
  UnansweredPart,
  Verdict,
} from '../resources/schemas.js';
import { approvedToolsFor } from '../tools/registry.js';
import { ancestorsOf, childUrn, parentOf, rootOf, typeOf } from '../urn.js';
import {
  assistantActor,
  assistantOf,
  buildTasks,
  NAMES,
  outputUrn,
  type StepOutcome,
  toolsOf,
} from './common.js';
import { keepAnswered } from './outcome.js';
import {
  completeCorrective,
  parseVerdictPayload,
  resolveSubtaskId,
  SUBMIT_VERDICT,
  SUBMIT_VERDICT_SPEC,
  subtaskId,
  type TaskPayload,
  type VerdictPayload,
} from './payloads.js';
import type { Deps } from './ports.js';
import { labelCitations } from './sources.js';
import { budgetClock, endedTurn, turnMessageOf } from './turn.js';

/**
 * The assistant step (seed roadmap-v2 "Task Execution"):
 * - direct mode (leaf task): the inner loop, one model turn per invocation; each requested tool
 *   call becomes a `tool.Call` under the task; a tool result triggers the next turn; a turn with
 *   no tool call becomes the task's output Message;
 * - supervisory mode (task with subtasks): on each subtask output, counts it once in the
 *   parent's round counter (shared/projections/counters.ts) and, when the counter reaches the
 *   round's size (planned subtasks for round 0, the corrective subtasks of verdict r for round r),
 *   judges them against the task's evaluation, stores the verdict, and writes the output (pass)
 *   or corrective subtasks (fail, bounded rounds).
 * Every model call is checked against the conversation budget first and charged after
 * (shared/projections/budget.ts); a used-up budget fails the task with `BudgetExceededError`.
 */
export async function assistantStep(event: ResourcePutEvent, deps: Deps): Promise<StepOutcome> {
  if (event.type === 'plan.Task') {
    const task = await deps.resources.getAs(assistantActor(event.urn), 'plan.Task', event.urn);
    if (task.subtasks.length > 0)
      return { action: 'supervising', urn: event.urn, detail: `${task.subtasks.length} subtasks` };
    return advance(task, deps);
  }
  if (event.type !== 'common.Message') return { action: 'ignored', urn: event.urn };
  const taskUrn = parentOf(event.urn) as string;
  const name = await messageName(event.urn, deps);
  if (name.startsWith('result-')) {
    return advance(await deps.resources.getAs(assistantActor(taskUrn), 'plan.Task', taskUrn), deps);
  }
  if (name === NAMES.output) {
    const parent = parentOf(taskUrn) as string;
    if (typeOf(parent) !== 'plan.Task')
      return { action: 'ignored', urn: event.urn, detail: 'root output (plan step)' };
    const actor = assistantActor(parent);
    const [child, supervisor] = await Promise.all([
      deps.resources.getAs(actor, 'plan.Task', taskUrn),
      deps.resources.getAs(actor, 'plan.Task', parent),
    ]);
    const round = roundOf(supervisor, child);
    const done = await countOutput(deps.projections, parent, round, event.urn);
    const size = await roundSize(supervisor, round, deps);
    if (size === undefined || done < size) {
      return {
        action: 'waiting',
        urn: parent,
        detail: `round ${round}: ${done}/${size ?? '?'} subtasks done`,
      };
    }
    return supervise(supervisor, deps);
  }
  return { action: 'ignored', urn: event.urn, detail: name };
}

/**
 * The round of `parent` a direct subtask belongs to: 0 for a planned subtask (listed in
 * `parent.subtasks`), r for a corrective subtask created by the parent's verdict r.
 */
export function roundOf(parent: Task, child: Task): number {
  return parent.subtasks.includes(child.meta.id) ? 0 : child.round;
}

/**
 * How many subtasks round `round` of `task` has: the planned ones for round 0, verdict r's
 * corrective subtasks for r ≥ 1; undefined while verdict r is not stored yet.
 */
async function roundSize(task: Task, round: number, deps: Deps): Promise<number | undefined> {
  if (round === 0) return task.subtasks.length;
  const verdict = await deps.resources.find(
    assistantActor(task.meta.id, task.assistant),
    'plan.Verdict',
    childUrn(task.meta.id, 'plan.Verdict', NAMES.verdict(round)),
  );
  return verdict?.corrective.length;
}

async function messageName(urn: string, deps: Deps): Promise<string> {
  const message = await deps.resources.getAs(assistantActor(parentOf(urn) as string), 'common.Message', urn);
  return message.meta.name;
}

/** Loads the task's turns (with their tool results), sorted by turn number. */
async function loadTurns(task: Task, deps: Deps): Promise<{ turns: PriorTurn[]; calls: ToolCallResource[] }> {
  const actor = assistantActor(task.meta.id, task.assistant);
  const children = await deps.resources.list(actor, task.meta.id, { childrenOnly: true });
  const messages = children.filter((r): r is Message => r.meta.type === 'common.Message');
  const calls = children.filter((r): r is ToolCallResource => r.meta.type === 'tool.Call');
  const turnMessages = messages
    .filter((m) => /^turn-\d+$/.test(m.meta.name))
    .sort((a, b) => turnNumber(a) - turnNumber(b));
  const results = new Map(
    messages.filter((m) => m.meta.name.startsWith('result-')).map((m) => [m.meta.name, m]),
  );
  const turns = turnMessages.map((turn) => {
    const k = turnNumber(turn);
    const found = (turn.toolCalls ?? []).flatMap((c) => {
      const result = results.get(NAMES.result(NAMES.call(k, c.id)));
      return result ? [result] : [];
    });
    return { turn, results: found };
  });
  return { turns, calls };
}

function turnNumber(message: Message): number {
  return Number(message.meta.name.slice('turn-'.length));
}

/**
 * Whether the task's user Message already ended (its answer is stored: done, partial or failed, e.g.
 * by the sweeper or a budget): a late event then calls no model, since no answer can take its
 * output any more. One read (usually from the read cache) before each model call.
 * @returns an `ignored` outcome when it ended, undefined while the turn is open
 */
async function endedMessage(task: Task, deps: Deps): Promise<StepOutcome | undefined> {
  const actor = assistantActor(task.meta.id, task.assistant);
  const ended = await endedTurn(deps.resources, actor, turnMessageOf(task.meta.id));
  if (!ended) return undefined;
  return { action: 'ignored', urn: task.meta.id, detail: `its message already ended (${ended.status})` };
}

/** One step of the inner loop for a leaf task. */
async function advance(task: Task, deps: Deps): Promise<StepOutcome> {
  const actor = assistantActor(task.meta.id, task.assistant);
  if (await deps.resources.find(actor, 'common.Message', outputUrn(task.meta.id))) {
    return { action: 'ignored', urn: task.meta.id, detail: 'task already has output' };
  }
  const { turns } = await loadTurns(task, deps);
  const last = turns.at(-1);
  // The last turn's charge may be missing after a crash between its write and its charge.
  const budget: BudgetUsage = last
    ? await charge(deps.projections, last.turn, modelCharge(last.turn.usage), deps.now())
    : await readBudget(deps.projections, rootOf(task.meta.id));
  if (last) {
    const calls = last.turn.toolCalls ?? [];
    if (calls.length === 0) return writeOutput(task, last.turn, turns, deps); // crash between turn and output
    await persistCalls(task, last.turn, deps); // crash between turn and its calls
    if (last.results.length < calls.length) {
      return {
        action: 'waiting',
        urn: task.meta.id,
        detail: `${last.results.length}/${calls.length} tool results`,
      };
    }
  }
  if (turns.length >= deps.limits.maxTurns) {
    return fail(
      task,
      new LimitExceededError(`inner loop reached ${deps.limits.maxTurns} turns without an answer`),
      deps,
    );
  }
  const spent = turns.reduce((sum, t) => sum + (t.turn.usage?.totalTokens ?? 0), 0);
  if (spent > deps.limits.taskTokens) {
    return fail(
      task,
      new LimitExceededError(`task spent ${spent} tokens; the limit is ${deps.limits.taskTokens}`),
      deps,
    );
  }

  const clock = await budgetClock(deps.resources, actor, task.meta.id, deps.now());
  const overBudget = budgetExceeded(budget, deps.limits, clock);
  if (overBudget) return fail(task, overBudget, deps);
  const ended = await endedMessage(task, deps);
  if (ended) return ended;

  const assistant = assistantOf(deps, task.assistant);
  const ancestors = await deps.resources.getMany(actor, ancestorsOf(task.meta.id));
  const window = buildWindow({
    assistant,
    // Built-in tools it names, then the approved discovered tools it may use (the registry).
    tools: [...toolsOf(deps, assistant), ...(await approvedToolsFor(deps.resources, actor, assistant))],
    ancestors,
    task,
    turns,
    budget: deps.limits.contextTokens,
  });
  let response: Awaited<ReturnType<Deps['model']['converse']>>;
  try {
    // The first turn picks tools; a turn after tool results usually writes the answer.
    response = await deps.model.converse({
      ...window.request,
      step: turns.length === 0 ? 'assistant' : 'answer',
    });
  } catch (error) {
    if (error instanceof ModelError && !error.retryable) return fail(task, error, deps);
    throw error; // retryable: the invocation fails and the event is retried
  }
  const k = turns.length + 1;
  const blocks = response.output.message.content;
  // A citation id given for a URN (`read` of "[3]") is stored and executed as the URN.
  const cited = turns.length ? renderTurnResults(turns).ids : undefined;
  const toolCalls: ToolCall[] = blocks.flatMap((b: ContentBlock) =>
    'toolUse' in b
      ? [
          {
            id: b.toolUse.toolUseId,
            name: b.toolUse.name,
            input: cited ? resolveCitationArguments(b.toolUse.input, cited) : b.toolUse.input,
          },
        ]
      : [],
  );
  if (toolCalls.length > deps.limits.toolCallsPerTurn) {
    return fail(
      task,
      new LimitExceededError(
        `model asked for ${toolCalls.length} tool calls in one turn; the limit is ${deps.limits.toolCallsPerTurn}`,
      ),
      deps,
    );
  }
  const overTools = toolCalls.length
    ? budgetExceeded(budget, deps.limits, { ...clock, now: deps.now() }, { toolCalls: toolCalls.length })
    : undefined;
  if (overTools) return fail(task, overTools, deps);
  const turn: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.turn(k), parent: task.meta.id }, deps.now()),
    role: 'assistant',
    content: blocks.flatMap((b) => ('text' in b ? [b.text] : [])).join('\n'),
    ...(toolCalls.length ? { toolCalls } : {}),
    usage: response.usage,
    window: window.report,
  };
  const stored = (await deps.resources.put(actor, turn)).resource;
  await charge(deps.projections, stored, modelCharge(stored.usage), deps.now());
  if ((stored.toolCalls ?? []).length === 0)
    return writeOutput(task, stored, [...turns, { turn: stored, results: [] }], deps);
  const written = await persistCalls(task, stored, deps);
  return { action: 'tool-calls', urn: stored.meta.id, detail: written.join(', ') };
}

async function persistCalls(task: Task, turn: Message, deps: Deps): Promise<string[]> {
  const actor = assistantActor(task.meta.id, task.assistant);
  const k = turnNumber(turn);
  const names: string[] = [];
  for (const call of turn.toolCalls ?? []) {
    const resource: ToolCallResource = {
      meta: withMeta({ type: 'tool.Call', name: NAMES.call(k, call.id), parent: task.meta.id }, deps.now()),
      call,
      turn: turn.meta.id,
    };
    const stored = (await deps.resources.put(actor, resource)).resource;
    await charge(deps.projections, stored, TOOL_CHARGE, deps.now());
    names.push(call.name);
  }
  return names;
}

const URN_IN_TEXT = /cld:[A-Za-z0-9.:/]+[0-9a-f]/g;

/**
 * Writes the task output from the final turn: its text with the citation ids the model was shown
 * (`[3]`, shared/context/render-results.ts) replaced by the URNs they stand for; citations = URNs
 * in that text that tool results returned, each labelled with its document and heading
 * (`sources`, shared/domain/sources.ts).
 */
async function writeOutput(
  task: Task,
  turn: Message,
  turns: readonly PriorTurn[],
  deps: Deps,
): Promise<StepOutcome> {
  const seen = new Set(turns.flatMap((t) => t.results.flatMap((r) => r.content.match(URN_IN_TEXT) ?? [])));
  const content = resolveCitations(turn.content, renderTurnResults(turns).ids);
  const citations = [...new Set(content.match(URN_IN_TEXT) ?? [])].filter((urn) => seen.has(urn));
  const actor = assistantActor(task.meta.id, task.assistant);
  const results = turns.flatMap((t) => t.results);
  const sources = await labelCitations(deps.resources, actor, citations, results);
  const output: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.output, parent: task.meta.id }, deps.now()),
    role: 'assistant',
    content,
    citations,
    ...(sources.length ? { sources } : {}),
  };
  await deps.resources.put(actor, output);
  return { action: 'output', urn: output.meta.id, detail: `${citations.length} citations` };
}

/**
 * Fails a task: its output Message carries the error (`toErrorInfo`), so the parent (or the
 * plan) is told. Create-only: when the task has an output already, that one stands.
 */
export async function failTask(task: Task, error: unknown, deps: Deps): Promise<StepOutcome> {
  return fail(task, error, deps);
}

async function fail(task: Task, error: unknown, deps: Deps): Promise<StepOutcome> {
  const info = toErrorInfo(error);
  const output: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.output, parent: task.meta.id }, deps.now()),
    role: 'assistant',
    content: '',
    error: info,
  };
  await deps.resources.put(assistantActor(task.meta.id, task.assistant), output);
  deps.logger.warn('task failed', { task: task.meta.id, ...info });
  return { action: 'failed', urn: task.meta.id, detail: info.message };
}

/** Supervisory mode for a task with subtasks. */
/**
 * The error that ends a task whose stored verdict failed with no corrective subtasks: a
 * {@link LimitExceededError} when the round was past `limits.maxCorrectiveRounds` (the
 * supervisor may not correct again), else a {@link ValidationError} (it proposed none). Derived
 * from the stored verdict alone, so the invocation that stored it and a retried one that finds it
 * write the same output (issue 12: a retried step rewrites the same resources).
 */
export function verdictFailure(
  verdict: Verdict,
  limits: Deps['limits'],
): LimitExceededError | ValidationError {
  return verdict.round > limits.maxCorrectiveRounds
    ? new LimitExceededError(
        `still failing after ${limits.maxCorrectiveRounds} corrective rounds: ${verdict.reason}`,
      )
    : new ValidationError(`verdict failed with no corrective subtasks: ${verdict.reason}`);
}

async function supervise(task: Task, deps: Deps): Promise<StepOutcome> {
  const actor = assistantActor(task.meta.id, task.assistant);
  if (await deps.resources.find(actor, 'common.Message', outputUrn(task.meta.id))) {
    return { action: 'ignored', urn: task.meta.id, detail: 'task already has output' };
  }
  const verdicts = (
    await deps.resources.list(actor, task.meta.id, { childrenOnly: true, type: 'plan.Verdict' })
  )
    .map((v) => v as Verdict)
    .sort((a, b) => a.round - b.round);
  // A verdict's charge may be missing after a crash between its write and its charge.
  for (const verdict of verdicts)
    await charge(deps.projections, verdict, modelCharge(verdict.usage), deps.now());
  // The effective subtasks: planned ones, each replaced by the latest corrective that redoes it.
  const slots: string[] = [...task.subtasks];
  for (const verdict of verdicts) {
    const correctives = (await deps.resources.getMany(actor, verdict.corrective)) as Task[];
    for (const corrective of correctives) {
      const index = corrective.corrects ? slots.indexOf(corrective.corrects) : -1;
      if (index === -1) slots.push(corrective.meta.id);
      else slots[index] = corrective.meta.id;
    }
  }
  const outputs = (await deps.resources.getMany(actor, slots.map(outputUrn))) as Message[];
  if (outputs.length < slots.length) {
    return {
      action: 'waiting',
      urn: task.meta.id,
      detail: `${outputs.length}/${slots.length} subtasks done`,
    };
  }
  const subtasks = (await deps.resources.getMany(actor, slots)) as Task[];
  const last = verdicts.at(-1);
  if (last?.pass) return writeCombined(task, subtasks, outputs, deps);
  // A failed verdict with no corrective subtasks ends the task, keeping the parts that passed:
  // the same output whether this invocation stored the verdict or a retried one finds it.
  if (last && last.corrective.length === 0) return endUnresolved(task, last, subtasks, outputs, deps);
  const round = verdicts.length + 1;
  const overBudget = budgetExceeded(
    await readBudget(deps.projections, rootOf(task.meta.id)),
    deps.limits,
    await budgetClock(deps.resources, actor, task.meta.id, deps.now()),
  );
  if (overBudget) return fail(task, overBudget, deps);
  const ended = await endedMessage(task, deps);
  if (ended) return ended;
  const request: ConverseRequest = {
    step: 'judge',
    system: [{ text: judgeSystemPrompt(assistantOf(deps, task.assistant).meta) }],
    messages: [{ role: 'user', content: [{ text: supervisorPrompt(task, subtasks, outputs) }] }],
    toolConfig: {
      tools: [{ toolSpec: SUBMIT_VERDICT_SPEC }],
      toolChoice: { tool: { name: SUBMIT_VERDICT } },
    },
  };
  // One model call; a reply that is not a valid verdict (no submit_verdict call, a field the
  // schema does not have) gets one correction with the error, as a plan does (shared/domain/plan.ts).
  let payload: ReturnType<typeof withSubtaskUrns> | undefined;
  let failure: unknown;
  let usage: ConverseResponse['usage'] = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  for (let attempt = 1; attempt <= 2 && !payload; attempt++) {
    const response = await deps.model.converse(request);
    usage = addUsage(usage, response.usage);
    const use = response.output.message.content.find(
      (b): b is Extract<ContentBlock, { toolUse: unknown }> =>
        'toolUse' in b && b.toolUse.name === SUBMIT_VERDICT,
    );
    try {
      if (!use) throw new ValidationError('model reply has no submit_verdict tool call');
      payload = withSubtaskUrns(parseVerdictPayload(use.toolUse.input, deps.limits, task.depth), subtasks);
    } catch (error) {
      if (!(error instanceof ValidationError)) return fail(task, error, deps);
      failure = error;
      deps.logger.warn('invalid verdict from model', { task: task.meta.id, attempt, error: error.message });
      request.messages.push(
        ...correctionTurn(response.output.message as ConverseMessage, use, error, SUBMIT_VERDICT),
      );
    }
  }
  if (!payload) return fail(task, failure, deps);
  const exhausted = !payload.pass && round > deps.limits.maxCorrectiveRounds;
  const corrective =
    payload.pass || exhausted
      ? []
      : await buildTasks(deps, payload.corrective, task.meta.id, task.depth + 1, round, (i) =>
          NAMES.corrective(round, i + 1),
        );
  for (const sub of corrective) await deps.resources.put(actor, sub);
  const verdict: Verdict = {
    meta: withMeta(
      {
        type: 'plan.Verdict',
        name: NAMES.verdict(round),
        parent: task.meta.id,
        evaluation: task.meta.evaluation,
      },
      deps.now(),
    ),
    round,
    pass: payload.pass,
    reason: payload.reason,
    subtasks: payload.subtasks.flatMap(({ id, ...s }) => (slots.includes(id) ? [{ urn: id, ...s }] : [])),
    corrective: corrective
      .filter((t) => t.round === round && parentOf(t.meta.id) === task.meta.id)
      .map((t) => t.meta.id),
    usage,
  };
  const stored = (await deps.resources.put(actor, verdict)).resource;
  await charge(deps.projections, stored, modelCharge(stored.usage), deps.now());
  if (stored.pass) return writeCombined(task, subtasks, outputs, deps);
  if (stored.corrective.length === 0) return endUnresolved(task, stored, subtasks, outputs, deps);
  // The corrective round may have finished before its verdict was stored (a retried crash).
  if ((await countedOutputs(deps.projections, task.meta.id, round)) >= stored.corrective.length)
    return supervise(task, deps);
  return {
    action: 'corrective',
    urn: stored.meta.id,
    detail: `round ${round}: ${stored.corrective.length} corrective subtask(s)`,
  };
}

/**
 * The judge's system prompt: the supervising assistant's name, purpose, instructions and
 * evaluation. Its applicability (what it is chosen for) is left out, as for an assistant in the
 * inner loop (shared/context/window.ts): it tells the judge nothing (issue 25).
 */
function judgeSystemPrompt(meta: Assistant['meta']): string {
  return `You are the supervisor "${meta.name}".\n\n${toDescription(withoutApplicability(meta))}`;
}

/** A description without its `applicability` (see {@link judgeSystemPrompt}). */
function withoutApplicability<T extends { applicability?: string }>({
  applicability: _,
  ...rest
}: T): Omit<T, 'applicability'> {
  return rest;
}

/**
 * A verdict with its subtask ids (`s1` …, or URNs) resolved to the URNs of `subtasks` (the
 * effective ones, in the order the judge's prompt numbered them): each judged subtask's `id`, and
 * each corrective subtask's `corrects` (dropped when it names no subtask, so the corrective is
 * added as a new part rather than replacing an unknown one); each corrective completed with the
 * title and applicability it left out ({@link completeCorrective}).
 */
function withSubtaskUrns(
  payload: VerdictPayload,
  subtasks: readonly Task[],
): Omit<VerdictPayload, 'corrective'> & { corrective: (TaskPayload & { corrects?: string })[] } {
  const slots = subtasks.map((s) => s.meta.id);
  return {
    ...payload,
    subtasks: payload.subtasks.map((s) => ({ ...s, id: resolveSubtaskId(s.id, slots) ?? s.id })),
    corrective: payload.corrective.map(({ corrects, ...c }) => {
      const urn = corrects === undefined ? undefined : resolveSubtaskId(corrects, slots);
      const redone = urn === undefined ? undefined : subtasks[slots.indexOf(urn)];
      if (!urn || !redone) return completeCorrective(c);
      return {
        ...completeCorrective(c, { title: redone.title, applicability: redone.meta.applicability }),
        corrects: urn,
      };
    }),
  };
}

/**
 * The judge's prompt (issue 25: sent compact): the task's description, then one line of JSON with
 * each subtask's short id (`s1` …, {@link subtaskId}), its title when its purpose does not hold
 * it, purpose, instructions (for a corrective subtask only: they record the attempt it redoes),
 * evaluation, output (its "Sources:" list left out: `sources` names the same once), sources
 * ({@link sourcesOf}), error (when it failed) and unanswered parts.
 */
function supervisorPrompt(task: Task, subtasks: readonly Task[], outputs: readonly Message[]): string {
  const view = {
    subtasks: subtasks.map((s, i) => ({
      id: subtaskId(i),
      ...(s.meta.purpose.includes(s.title) ? {} : { title: s.title }),
      purpose: s.meta.purpose,
      ...(s.corrects ? { instructions: s.meta.instructions } : {}),
      evaluation: s.meta.evaluation,
      output: withoutSourceList(outputs[i]?.content ?? ''),
      sources: sourcesOf(outputs[i]),
      ...(outputs[i]?.error ? { error: outputs[i]?.error } : {}),
      // A partial subtask says which of its own parts it did not answer.
      ...(outputs[i]?.unanswered ? { unanswered: outputs[i]?.unanswered } : {}),
    })),
  };
  return `## Task\n${toDescription(withoutApplicability(task.meta))}\n\n## Subtask outputs\n\`\`\`json\n${JSON.stringify(view)}\n\`\`\`\n\nJudge each output against its evaluation and the task's, then call submit_verdict. For one that falls short, ask for a corrective subtask ("corrects": the id of the subtask it redoes).`;
}

/**
 * What an output cites, as the judge reads it: each source's label (`aws-s3 README › Bucket
 * Notifications`, Message `sources`), or its URN where it has none (issue 25: a label is about a
 * third of a URN's tokens, and tells the judge which document and section it is).
 */
function sourcesOf(output: Message | undefined): string[] {
  const labels = new Map((output?.sources ?? []).map((s) => [s.urn, s.label]));
  return (output?.citations ?? []).map((urn) => labels.get(urn) ?? urn);
}

/** An answer without its trailing "Sources:" list (the URNs the Message's `citations` hold). */
function withoutSourceList(content: string): string {
  return content.replace(/\n\s*Sources:\s*\n(?:\s*-[^\n]*(?:\n|$))+\s*$/, '');
}

/**
 * The output of a task whose last verdict passed: every subtask output combined. A subtask that
 * failed with an error is not an answer even so: when another subtask answered, it is named under
 * "Not answered" and the output is partial (shared/domain/outcome.ts), as is an output combining a
 * partial subtask.
 */
async function writeCombined(
  task: Task,
  subtasks: readonly Task[],
  outputs: readonly Message[],
  deps: Deps,
): Promise<StepOutcome> {
  const titles = await plannedTitles(task, subtasks, deps);
  const parts = subtasks.map((s, i) => ({
    task: s,
    title: titles[i] ?? s.title,
    output: outputs[i] as Message,
  }));
  const answered = parts.filter((p) => !p.output.error);
  const kept = answered.length > 0 ? answered : parts;
  const missed =
    answered.length > 0
      ? parts
          .filter((p) => p.output.error)
          .map((p) => unansweredPart(p.task, p.title, p.output.error?.message ?? 'failed'))
      : [];
  return writeKept(task, kept, missed, deps, `supervised ${subtasks.length} subtasks`);
}

/**
 * Ends a task whose last verdict failed and will not be corrected (its corrective rounds are used
 * up, or the supervisor proposed no corrective subtask), keeping what was done (issue 21):
 * - a subtask the verdict passed (or did not judge) and whose output has no error is answered;
 * - one the verdict failed, or whose output has an error, is not: it is named under "Not answered"
 *   with its error, else the verdict's objection to it, else the verdict's reason;
 * - with at least one answered subtask, the output is partial: the answered outputs plus that
 *   section (and `unanswered` on the Message); when every subtask passed and the verdict still
 *   failed (an objection to the whole), the task itself is named, with the verdict's reason;
 * - with none answered, the task fails as before ({@link verdictFailure}).
 * Derived from the stored verdict and outputs alone, so a retried invocation writes the same.
 */
async function endUnresolved(
  task: Task,
  verdict: Verdict,
  subtasks: readonly Task[],
  outputs: readonly Message[],
  deps: Deps,
): Promise<StepOutcome> {
  const failure = verdictFailure(verdict, deps.limits);
  const exhausted = verdict.round > deps.limits.maxCorrectiveRounds;
  const rounds = deps.limits.maxCorrectiveRounds;
  const after = exhausted
    ? ` (still failing after ${rounds} corrective round${rounds === 1 ? '' : 's'})`
    : '';
  const judged = new Map(verdict.subtasks.map((s) => [s.urn, s]));
  const titles = await plannedTitles(task, subtasks, deps);
  const answered: { title: string; output: Message }[] = [];
  const missed: UnansweredPart[] = [];
  for (const [i, subtask] of subtasks.entries()) {
    const output = outputs[i] as Message;
    const title = titles[i] ?? subtask.title;
    const verdictOn = judged.get(subtask.meta.id);
    if (!output.error && verdictOn?.pass !== false) {
      answered.push({ title, output });
      continue;
    }
    const why =
      output.error?.message || (verdictOn && !verdictOn.pass && verdictOn.reason.trim()) || verdict.reason;
    missed.push(unansweredPart(subtask, title, `${why}${after}`));
  }
  if (answered.length === 0) return fail(task, failure, deps);
  if (missed.length === 0) missed.push(unansweredPart(task, task.title, failure.message));
  deps.logger.warn('task partial', {
    task: task.meta.id,
    answered: answered.length,
    unanswered: missed.map((m) => m.task),
  });
  return writeKept(task, answered, missed, deps, `partial: ${missed.length} part(s) not answered`);
}

/** Writes a supervised task's output from the parts kept ({@link keepAnswered}). */
async function writeKept(
  task: Task,
  answered: readonly { title: string; output: Message }[],
  missed: readonly UnansweredPart[],
  deps: Deps,
  detail: string,
): Promise<StepOutcome> {
  const { content, citations, sources, unanswered } = keepAnswered(answered, missed);
  const output: Message = {
    meta: withMeta({ type: 'common.Message', name: NAMES.output, parent: task.meta.id }, deps.now()),
    role: 'assistant',
    content,
    citations,
    ...(sources.length ? { sources } : {}),
    ...(unanswered.length ? { unanswered } : {}),
  };
  await deps.resources.put(assistantActor(task.meta.id, task.assistant), output);
  return { action: unanswered.length ? 'partial' : 'output', urn: output.meta.id, detail };
}

function unansweredPart(task: Task, title: string, reason: string): UnansweredPart {
  return { task: task.meta.id, title: title.slice(0, 200), reason: reason.slice(0, 2_000) };
}

/**
 * The title each effective subtask answers: the planned subtask's for a slot a corrective task
 * took over (not "Retry: …"), the subtask's own for one a verdict added.
 */
async function plannedTitles(task: Task, subtasks: readonly Task[], deps: Deps): Promise<string[]> {
  const replaced = subtasks.some((s, i) => s.meta.id !== task.subtasks[i] && i < task.subtasks.length);
  if (!replaced) return subtasks.map((s) => s.title);
  const planned = (await deps.resources.getMany(
    assistantActor(task.meta.id, task.assistant),
    task.subtasks,
  )) as Task[];
  const byUrn = new Map(planned.map((p) => [p.meta.id, p.title]));
  return subtasks.map((s, i) => byUrn.get(task.subtasks[i] ?? '') ?? s.title);
}
