import { describe, expect, it } from 'vitest';
import {
  buildWindow,
  DROPPED_MARKER,
  type PriorTurn,
  TRUNCATED_MARKER,
  type WindowInput,
} from '../../shared/context/window.js';
import type { Message } from '../../shared/resources/schemas.js';
import { assistant, conversation, message, task, tool } from './builders.js';

/**
 * The context-window budget (shared/context/window.ts): the request fits `budget` tokens, and
 * what had to go is recorded. Each budget is pinned on both sides: at the full size nothing is
 * dropped, one token less drops the next thing in the documented order.
 */

const CONVERSATION = conversation('window');
const USER = message(
  CONVERSATION.meta.id,
  'question',
  `How do I grant a role access to a bucket? ${'context '.repeat(40)}`,
);
const PARENT = task(USER.meta.id, 'parent');
const TASK = task(PARENT.meta.id, 'child', 2);

function turn(name: string, results: string[]): PriorTurn {
  const calls = results.map((_, i) => ({ id: `${name}-call-${i}`, name: 'search', input: { query: name } }));
  const turnMessage: Message = {
    ...message(TASK.meta.id, name, `Looking up ${name}.`, 'assistant'),
    toolCalls: calls,
  };
  return {
    turn: turnMessage,
    results: results.map((content, i) => ({
      ...message(TASK.meta.id, `${name}-result-${i}`, content, 'tool'),
      toolCallId: `${name}-call-${i}`,
      status: 'OK' as const,
    })),
  };
}

const OLD = turn('first', [`old result ${'alpha '.repeat(60)}`]);
const LATEST = turn('second', [
  `latest result A ${'beta '.repeat(60)}`,
  `latest result B ${'gamma '.repeat(60)}`,
]);

function input(budget: number, overrides: Partial<WindowInput> = {}): WindowInput {
  return {
    assistant: assistant(),
    tools: [tool()],
    ancestors: [CONVERSATION, USER, PARENT],
    task: TASK,
    turns: [OLD, LATEST],
    budget,
    ...overrides,
  };
}

/** Tokens of the whole window when nothing is dropped. */
const FULL = buildWindow(input(1_000_000)).report.tokens;

/** The tool result texts the request carries, in order. */
function resultTexts(window: ReturnType<typeof buildWindow>): string[] {
  return window.request.messages.flatMap((m) =>
    m.content.flatMap((block) =>
      'toolResult' in block ? block.toolResult.content.map((c) => ('text' in c ? c.text : '')) : [],
    ),
  );
}

describe('buildWindow within its token budget', () => {
  it('drops nothing when the whole window fits exactly (budget = its size)', () => {
    const window = buildWindow(input(FULL));

    expect(FULL).toBeGreaterThan(300);
    expect(window.report).toEqual({ budget: FULL, tokens: FULL, dropped: [] });
    expect(resultTexts(window)).toEqual([
      OLD.results[0]?.content,
      LATEST.results[0]?.content,
      LATEST.results[1]?.content,
    ]);
  });

  it('one token over: drops the oldest tool result first, marks it, and fits', () => {
    const window = buildWindow(input(FULL - 1));
    const oldest = OLD.results[0]?.meta.id as string;

    expect(window.report.dropped).toEqual([oldest]);
    expect(window.report.tokens).toBeLessThanOrEqual(FULL - 1);
    expect(resultTexts(window)[0]).toBe(DROPPED_MARKER);
    expect(resultTexts(window).slice(1)).toEqual([LATEST.results[0]?.content, LATEST.results[1]?.content]);
  });

  it('two results over: drops a second tool result, still before any parent task, and fits', () => {
    const withoutOld = buildWindow(input(FULL - 1)).report.tokens;

    const atSize = buildWindow(input(withoutOld));
    const tight = buildWindow(input(withoutOld - 1));

    expect(atSize.report.dropped).toEqual([OLD.results[0]?.meta.id]);
    expect(tight.report.dropped).toHaveLength(2);
    expect(tight.report.dropped[0]).toBe(OLD.results[0]?.meta.id);
    // The latest turn's earlier result goes; its last result stays.
    expect(tight.report.dropped[1]).toBe(LATEST.results[0]?.meta.id);
    expect(resultTexts(tight)).toEqual([DROPPED_MARKER, DROPPED_MARKER, LATEST.results[1]?.content]);
    expect(tight.report.tokens).toBeLessThanOrEqual(withoutOld - 1);
  });

  it('never drops the last result of the latest turn: past the other results, parent tasks go next', () => {
    const twoGone = buildWindow(input(buildWindow(input(FULL - 1)).report.tokens - 1)).report.tokens;

    const window = buildWindow(input(twoGone - 1));

    expect(window.report.dropped).toEqual([
      OLD.results[0]?.meta.id,
      LATEST.results[0]?.meta.id,
      PARENT.meta.id,
    ]);
    expect(resultTexts(window).at(-1)).toBe(LATEST.results[1]?.content);
    expect(window.report.tokens).toBeLessThanOrEqual(twoGone - 1);
  });

  it('drops the parent task descriptions next, then truncates the conversation message', () => {
    const noTurns = { turns: [] as PriorTurn[] };
    const full = buildWindow(input(1_000_000, noTurns)).report.tokens;

    const atSize = buildWindow(input(full, noTurns));
    const parentGone = buildWindow(input(full - 1, noTurns));
    const truncated = buildWindow(input(parentGone.report.tokens - 1, noTurns));

    expect(atSize.report.dropped).toEqual([]);
    expect(parentGone.report.dropped).toEqual([PARENT.meta.id]);
    expect(parentGone.report.tokens).toBeLessThanOrEqual(full - 1);
    expect(truncated.report.dropped).toEqual([PARENT.meta.id, USER.meta.id]);
    expect(truncated.report.tokens).toBeLessThanOrEqual(parentGone.report.tokens - 1);
    const head = truncated.request.messages[0]?.content[0];
    expect(head && 'text' in head ? head.text : '').toContain(TRUNCATED_MARKER);
    // As much as is needed and no more: one token more of budget keeps a longer head.
    const roomier = buildWindow(input(parentGone.report.tokens, noTurns));
    expect(roomier.report.dropped).toEqual([PARENT.meta.id]);
  });
});

describe('buildWindow sends what the model needs (issue 25)', () => {
  const CHUNK = 'cld:doc.Document.a9c63d412f9b2e34/doc.Chunk.4e611be1fc76b038';
  const head = (window: ReturnType<typeof buildWindow>) => {
    const first = window.request.messages[0]?.content[0];
    return first && 'text' in first ? first.text : '';
  };

  it('renders a search result with citation ids and passages, not its stored JSON', () => {
    const stored = JSON.stringify({
      results: [
        {
          urn: CHUNK,
          title: 'S3 > Notifications',
          text: "```ts\nnew s3.Bucket(this, 'B');\n```",
          score: 3.2,
        },
      ],
    });
    const window = buildWindow(input(1_000_000, { turns: [turn('search', [stored])] }));

    expect(resultTexts(window)).toEqual(["[1] S3 › Notifications\n```ts\nnew s3.Bucket(this, 'B');\n```"]);
    expect(JSON.stringify(window.request)).not.toContain(CHUNK);
  });

  it('leaves the conversation out when a parent quotes it, and gives a parent by its purpose only', () => {
    const quoting = {
      ...PARENT,
      meta: {
        ...PARENT.meta,
        purpose: `Answer every part: ${USER.content}`,
        instructions: 'Supervise the parts.',
      },
    };
    const window = buildWindow(input(1_000_000, { ancestors: [CONVERSATION, USER, quoting], turns: [] }));

    expect(head(window)).not.toContain('## Conversation');
    expect(head(window)).toContain(`## Parent tasks\n- Answer every part: ${USER.content}`);
    expect(head(window)).not.toContain('Supervise the parts.');
    // Not quoted: the conversation stays.
    expect(head(buildWindow(input(1_000_000, { turns: [] })))).toContain(`## Conversation\n${USER.content}`);
  });
});
