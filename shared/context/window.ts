import type { ContentBlock, ConverseMessage, ConverseRequest, ToolSpec } from '../llm/port.js';
import { toDescription } from '../resources/meta.js';
import type { AnyResource, Assistant, Message, Task, Tool } from '../resources/schemas.js';
import { renderTurnResults } from './render-results.js';
import { countTokens } from './tokens.js';

/**
 * Context window assembly (the seeds' Context service `GetWindow`; contract in
 * seeds/context-assembly.md: system + messages + tools within a token budget, with what was
 * dropped recorded). Deterministic for the same input; no I/O.
 */

/** One prior model turn of the inner loop and the results of its tool calls. */
export interface PriorTurn {
  turn: Message;
  /** Tool result Messages, one per tool call of the turn, in call order. */
  results: Message[];
}

/** Input of {@link buildWindow}. */
export interface WindowInput {
  assistant: Assistant;
  tools: readonly Tool[];
  /** Ancestors of the task, root first: Conversation, user Message, parent Tasks. */
  ancestors: readonly AnyResource[];
  task: Task;
  turns: readonly PriorTurn[];
  /** Token budget of the whole request (cl100k estimate). */
  budget: number;
}

/** The assembled window and what it cost. */
export interface Window {
  request: ConverseRequest;
  /** `budget`, the tokens used, and the URNs of resources left out or truncated. */
  report: { budget: number; tokens: number; dropped: string[] };
}

/**
 * What replaces a tool result's content that was dropped (the result stays paired with its call
 * by `toolUseId`; the report names the dropped URN). Short on purpose: a marker naming the URN
 * could cost more tokens than the content it replaces.
 */
export const DROPPED_MARKER = '[content dropped to fit the context budget]';

/** What ends a truncated conversation message. */
export const TRUNCATED_MARKER = ' [truncated]';

const RULES =
  'Use the tools to find facts; do not invent them. Cite the hits you rely on by id ([1], [2]) under "Sources:". Answer concisely.';

/** Text with its runs of whitespace made one space, trimmed (to compare quoted text). */
function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * What a leaf task needs of a parent: its purpose (why the task exists), not how the parent is
 * supervised (its instructions, applicability and evaluation are the supervisor's).
 */
function parentLine(parent: Task): string {
  return `- ${parent.meta.purpose}`;
}

/** The task's own fields in its window: applicability is what elected its assistant, so left out. */
function taskFields(task: Task): { purpose: string; instructions: string; evaluation: string } {
  return {
    purpose: task.meta.purpose,
    instructions: task.meta.instructions,
    evaluation: task.meta.evaluation,
  };
}

/** Converse tool spec of a Tool resource. */
export function toToolSpec(tool: Tool): ToolSpec {
  return {
    name: tool.function.name,
    description: tool.function.description,
    inputSchema: { json: tool.function.parameters as ToolSpec['inputSchema']['json'] },
  };
}

/** The part of a window that depends only on the assistant and its tools, and its tokens. */
interface FixedPart {
  /** What it was built from: the assistant's name and description fields, the tools and their functions. */
  from: readonly unknown[];
  system: string;
  toolSpecs: ToolSpec[];
  tokens: number;
}

/**
 * Fixed parts by assistant object (the catalog's, which lives as long as the container's Deps):
 * every turn of every task of an assistant has the same system prompt and tool specs, built and
 * counted once while the assistant's name and description and its tools (the same objects) stay.
 */
const fixedParts = new WeakMap<Assistant, FixedPart>();

function fixedPart(assistant: Assistant, tools: readonly Tool[]): FixedPart {
  const { name, purpose, instructions, applicability, evaluation } = assistant.meta;
  const from = [
    name,
    purpose,
    instructions,
    applicability,
    evaluation,
    ...tools.flatMap((t) => [t, t.function]),
  ];
  const known = fixedParts.get(assistant);
  if (known && known.from.length === from.length && known.from.every((item, i) => item === from[i]))
    return known;
  // Applicability is what the assistant is elected by (shared/catalog), not what it acts on.
  const system = `You are the assistant "${name}".\n\n${toDescription({ purpose, instructions, evaluation })}\n\n${RULES}`;
  const toolSpecs = tools.map(toToolSpec);
  const part = {
    from,
    system,
    toolSpecs,
    tokens: countTokens(system) + countTokens(JSON.stringify(toolSpecs)),
  };
  fixedParts.set(assistant, part);
  return part;
}

/**
 * Builds the Converse request of one inner-loop turn: system = the assistant's description and
 * house rules; first user message = conversation message, parent tasks and the task; then the
 * prior turns (assistant `toolUse` blocks and user `toolResult` blocks, pairing kept intact; each
 * result rendered for the model by shared/context/render-results.ts: passages, citation ids).
 * Over budget, it drops (1) the oldest tool results' content, replaced by {@link DROPPED_MARKER}
 * (only where that saves tokens): the earlier turns' results, then the latest turn's but its
 * last, which is never dropped, (2) parent task descriptions, farthest first, (3) the tail of the
 * conversation message, as much as is needed and no more — in that order, each step only while
 * the window is over budget — and records each dropped URN. A window that fits keeps everything
 * (`report.tokens <= budget`, nothing dropped); one that does not fit even then (system, tools,
 * the task and the latest turn's last result alone exceed the budget) is returned with
 * `report.tokens > budget`.
 */
export function buildWindow(input: WindowInput): Window {
  const dropped: string[] = [];
  const { system, toolSpecs, tokens: fixed } = fixedPart(input.assistant, input.tools);

  const userMessage = input.ancestors.find(
    (r): r is Message => r.meta.type === 'common.Message' && (r as Message).role === 'user',
  );
  let parents = input.ancestors.filter((r): r is Task => r.meta.type === 'plan.Task');
  // The conversation message once: not when the task or a parent already quotes it whole.
  const quoted = [input.task, ...parents].some((t) =>
    squash(t.meta.purpose).includes(squash(userMessage?.content ?? '')),
  );
  let conversationText = quoted ? '' : (userMessage?.content ?? '');
  const taskText = `## Task\n${toDescription(taskFields(input.task))}`;

  const results = input.turns.flatMap((t) => t.results);
  // Tool results as the model reads them (shared/context/render-results.ts), not as stored.
  const resultText = renderTurnResults(input.turns).texts;
  const turnsTokens = () =>
    input.turns.reduce(
      (sum, t) =>
        sum +
        countTokens(t.turn.content) +
        countTokens(JSON.stringify(t.turn.toolCalls ?? [])) +
        t.results.reduce((s, r) => s + countTokens(resultText.get(r.meta.id) ?? ''), 0),
      0,
    );
  const headTokens = () =>
    countTokens(conversationText) +
    parents.reduce((sum, p) => sum + countTokens(parentLine(p)), 0) +
    countTokens(taskText);

  let total = fixed + headTokens() + turnsTokens();
  // (1) tool results, oldest first: the earlier turns' results, then the latest turn's but its last
  // one, which is never dropped (the newest result is what the next step acts on)
  const latest = input.turns.at(-1)?.results ?? [];
  const droppable = [...results.filter((r) => !latest.includes(r)), ...latest.slice(0, -1)];
  for (const result of droppable) {
    if (total <= input.budget) break;
    if (countTokens(resultText.get(result.meta.id) ?? '') <= countTokens(DROPPED_MARKER)) continue;
    resultText.set(result.meta.id, DROPPED_MARKER);
    dropped.push(result.meta.id);
    total = fixed + headTokens() + turnsTokens();
  }
  // (2) parent task descriptions, farthest first
  while (total > input.budget && parents.length > 0) {
    const [first, ...rest] = parents as [Task, ...Task[]];
    dropped.push(first.meta.id);
    parents = rest;
    total = fixed + headTokens() + turnsTokens();
  }
  // (3) the conversation message's tail: the longest head that fits (binary search over characters;
  // tokens grow with the head's length), or none when not even the marker alone fits
  if (total > input.budget && userMessage && conversationText.length > 0 && !quoted) {
    const original = conversationText;
    const fits = (keep: number) => {
      conversationText = `${original.slice(0, keep)}${TRUNCATED_MARKER}`;
      return fixed + headTokens() + turnsTokens() <= input.budget;
    };
    let low = 0;
    let high = original.length - 1;
    while (low < high) {
      const middle = Math.ceil((low + high) / 2);
      if (fits(middle)) low = middle;
      else high = middle - 1;
    }
    fits(low);
    dropped.push(userMessage.meta.id);
    total = fixed + headTokens() + turnsTokens();
  }

  const head = [
    userMessage && !quoted ? `## Conversation\n${conversationText}` : '',
    parents.length ? `## Parent tasks\n${parents.map(parentLine).join('\n')}` : '',
    taskText,
  ]
    .filter(Boolean)
    .join('\n\n');

  const messages: ConverseMessage[] = [{ role: 'user', content: [{ text: head }] }];
  for (const { turn, results: turnResults } of input.turns) {
    const content: ContentBlock[] = [];
    if (turn.content) content.push({ text: turn.content });
    for (const call of turn.toolCalls ?? []) {
      content.push({ toolUse: { toolUseId: call.id, name: call.name, input: (call.input ?? {}) as never } });
    }
    if (content.length === 0) content.push({ text: '(no text)' });
    messages.push({ role: 'assistant', content });
    if (turnResults.length > 0) {
      messages.push({
        role: 'user',
        content: turnResults.map((r) => ({
          toolResult: {
            toolUseId: r.toolCallId ?? '',
            content: [{ text: resultText.get(r.meta.id) ?? '' }],
            status: r.status === 'OK' ? ('success' as const) : ('error' as const),
          },
        })),
      });
    }
  }

  const request: ConverseRequest = {
    system: [{ text: system }],
    messages,
    ...(toolSpecs.length ? { toolConfig: { tools: toolSpecs.map((toolSpec) => ({ toolSpec })) } } : {}),
  };
  return { request, report: { budget: input.budget, tokens: total, dropped } };
}
