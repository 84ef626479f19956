import { NotFoundError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import { withMeta } from '../resources/meta.js';
import type { Assistant, Message, SourceRef, Task, Tool } from '../resources/schemas.js';
import { electAssistant } from '../search/similarity.js';
import { childUrn, OUTPUT_NAME, rootOf } from '../urn.js';
import type { TaskPayload } from './payloads.js';
import type { Deps } from './ports.js';
import { sourcesBlock, sourcesOf } from './sources.js';
import { sourcesBlockAt } from './sources-block.js';

/**
 * Names and helpers shared by the steps. Every resource a step writes has a deterministic
 * name, hence a deterministic URN: a retried or duplicated invocation writes the same keys and
 * its creates are no-ops (DESIGN.md principle 1).
 */
export const NAMES = {
  plan: 'plan',
  /** A task's output Message; its key's shape ends in `Output` (shared/urn.ts `shapeOf`). */
  output: OUTPUT_NAME,
  turn: (k: number) => `turn-${k}`,
  call: (k: number, toolUseId: string) => `call-${k}-${toolUseId}`,
  result: (callName: string) => `result-${callName}`,
  verdict: (round: number) => `verdict-${round}`,
  task: (i: number) => `task-${i}`,
  corrective: (round: number, i: number) => `corrective-${round}-${i}`,
  answer: (messageUrn: string) => `answer-${messageUrn.slice(messageUrn.lastIndexOf('.') + 1)}`,
} as const;

/** What a step did, for logs and the progress display. */
export interface StepOutcome {
  action: string;
  urn: string;
  detail?: string;
}

/** URN of a task's output Message. */
export function outputUrn(taskUrn: string): string {
  return childUrn(taskUrn, 'common.Message', NAMES.output);
}

/** The plan function's actor for a user Message. */
export function planActor(messageUrn: string): Actor {
  return { kind: 'plan', id: 'function:plan', conversation: rootOf(messageUrn), message: messageUrn };
}

/** The assistant function's actor on a task (`id` = the assigned Assistant when known). */
export function assistantActor(taskUrn: string, assistant = 'function:assistant'): Actor {
  return { kind: 'assistant', id: assistant, conversation: rootOf(taskUrn), task: taskUrn };
}

/** The tool function's actor executing a call of `taskUrn`. */
export function toolActor(taskUrn: string, tool: string): Actor {
  return { kind: 'tool', id: `tool:${tool}`, conversation: rootOf(taskUrn), task: taskUrn, tool };
}

/** The catalog Assistant with this URN. @throws NotFoundError */
export function assistantOf(deps: Deps, urn: string): Assistant {
  const assistant = deps.catalog.assistants.find((a) => a.meta.id === urn);
  if (!assistant) throw new NotFoundError(`assistant ${urn} is not in the catalog`);
  return assistant;
}

/** The catalog Tools an assistant may use, in the assistant's order. */
export function toolsOf(deps: Deps, assistant: Assistant): Tool[] {
  return assistant.tools.flatMap((name) => deps.catalog.tools.filter((t) => t.function.name === name));
}

/**
 * Builds Task resources for a payload tree under `parent`, parents before children, electing an
 * Assistant for each by similarity of descriptions.
 * @param names name of the i-th (0-based) task at the top level
 */
export async function buildTasks(
  deps: Deps,
  payloads: readonly (TaskPayload & { corrects?: string | undefined })[],
  parent: string,
  depth: number,
  round: number,
  names: (i: number) => string = (i) => NAMES.task(i + 1),
): Promise<Task[]> {
  const tasks: Task[] = [];
  for (const [i, payload] of payloads.entries()) {
    const meta = withMeta(
      {
        type: 'plan.Task',
        name: names(i),
        parent,
        purpose: payload.purpose,
        instructions: payload.instructions,
        applicability: payload.applicability,
        evaluation: payload.evaluation,
      },
      deps.now(),
    );
    const children = payload.subtasks ?? [];
    const election = await electAssistant(deps.embedder, meta, deps.catalog.assistants);
    const corrects = 'corrects' in payload ? payload.corrects : undefined;
    tasks.push({
      meta,
      title: payload.title,
      subtasks: children.map((_, j) => childUrn(meta.id, 'plan.Task', NAMES.task(j + 1))),
      assistant: election.assistant,
      election,
      status: 'pending',
      depth,
      round,
      ...(corrects ? { corrects } : {}),
    });
    tasks.push(...(await buildTasks(deps, children, meta.id, depth + 1, round)));
  }
  return tasks;
}

/** Text of a Message without its trailing "Sources:" block. */
export function withoutSources(content: string): string {
  const index = sourcesBlockAt(content);
  return (index === -1 ? content : content.slice(0, index)).trim();
}

/**
 * Combines outputs into one answer: sections titled by task (`### <title>`), then one merged
 * "Sources:" block listing each cited source by its label (`- aws-ssm README › Lookups`,
 * {@link sourcesBlock}); `citations` and `sources` are the parts' merged, in order, without repeats.
 * A single output keeps its text, its own "Sources:" block (the model's, often bare URNs) replaced
 * by the labelled one.
 */
export function combineOutputs(parts: readonly { title: string; output: Message }[]): {
  content: string;
  citations: string[];
  sources: SourceRef[];
} {
  const byUrn = new Map<string, SourceRef>();
  for (const part of parts)
    for (const s of sourcesOf(part.output)) if (!byUrn.has(s.urn)) byUrn.set(s.urn, s);
  const sources = [...byUrn.values()];
  const citations = sources.map((s) => s.urn);
  const block = sourcesBlock(sources);
  if (parts.length === 1) {
    const only = parts[0] as { output: Message };
    const content = block ? `${withoutSources(only.output.content)}\n\n${block}` : only.output.content;
    return { content, citations, sources };
  }
  const body = parts.map((p) => `### ${p.title}\n${withoutSources(p.output.content)}`).join('\n\n');
  return { content: block ? `${body}\n\n${block}` : body, citations, sources };
}

/**
 * The final assistant Message answering a user Message (DESIGN.md "Flow": written directly under
 * the conversation, named `NAMES.answer(messageUrn)`, so every writer — the plan step, the
 * dead-letter step — targets the same URN and the first create wins).
 * @param messageUrn the user Message answered
 * @param fields content, citations and their labelled sources, error (failed) or unanswered parts
 *   (partial) of the answer
 */
export function answerMessage(
  messageUrn: string,
  fields: Pick<Message, 'content'> & Partial<Pick<Message, 'citations' | 'sources' | 'error' | 'unanswered'>>,
  now: Date,
): Message {
  return {
    meta: withMeta(
      {
        type: 'common.Message',
        name: NAMES.answer(messageUrn),
        parent: rootOf(messageUrn),
        purpose: 'Final answer to the user message',
      },
      now,
    ),
    role: 'assistant',
    content: fields.content,
    ...(fields.citations ? { citations: fields.citations } : {}),
    ...(fields.sources?.length ? { sources: fields.sources } : {}),
    inReplyTo: messageUrn,
    ...(fields.error ? { error: fields.error } : {}),
    ...(fields.unanswered?.length ? { unanswered: fields.unanswered } : {}),
  };
}
