import { describe, expect, it } from 'vitest';
import { outcomeOf } from '../../shared/domain/outcome.js';
import { CREATE_PLAN, SUBMIT_VERDICT, type TaskPayload } from '../../shared/domain/payloads.js';
import { conversationProgress } from '../../shared/domain/progress.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
} from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, Task, Verdict } from '../../shared/resources/schemas.js';
import { parentOf } from '../../shared/urn.js';
import { lastText, runScripted, scriptedReply, toolUse } from '../helpers/scripted-run.js';

/**
 * What a parent's verdict means when some children pass (issue 21, "Nothing done is thrown
 * away"), with a scripted model whose supervisor objects to the parts named in `failing` on every
 * round (and records what each lacks in `missing`):
 * - a supervised task whose corrective rounds run out with some subtasks passed ends partial: the
 *   passed subtasks' outputs, then "Not answered: <part> — <objection> (still failing after N
 *   corrective rounds)", and `unanswered` on the output and on the final answer;
 * - one whose every subtask failed still fails (test/faults/corrective-rounds.test.ts pins that);
 * - a verdict that objects to the whole while passing every subtask names the task itself;
 * - of several root tasks, one that failed leaves the answer partial; all failed leave it failed.
 */

interface Script {
  /** Root tasks: each a title and, for a supervised one, its parts (leaf titles). */
  roots: { title: string; parts?: string[] }[];
  /** Leaf titles (planned) the supervisor objects to on every round. */
  failing: string[];
  /** Whether the supervisor objects to the whole (fails the verdict, no corrective) while passing every part. */
  objectToWhole?: boolean;
}

/** A model scripted per {@link Script}; leaves answer "Answer to <title>." in one turn. */
class PartScripted implements ChatModel {
  readonly name = 'part-scripted';
  constructor(private readonly script: Script) {}

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      const task = (title: string, parts?: string[]): TaskPayload => ({
        title,
        purpose: `Answer: ${title}`,
        instructions: `Answer ${title}.`,
        applicability: parts
          ? 'A multi-part request split into subtasks that must be combined.'
          : 'One part.',
        evaluation: `${title} is answered.`,
        ...(parts ? { subtasks: parts.map((p) => task(p)) } : {}),
      });
      content = [
        toolUse(CREATE_PLAN, {
          tasks: this.script.roots.map((r) => task(r.title, r.parts)),
        } as unknown as JsonValue),
      ];
    } else if (tools.includes(SUBMIT_VERDICT)) {
      const prompt = lastText(request);
      const view = JSON.parse(/```json\s*([\s\S]*?)```/.exec(prompt)?.[1] ?? '{}') as {
        subtasks?: { id: string; title?: string; purpose: string }[];
      };
      const subtasks = view.subtasks ?? [];
      // A corrective task keeps the planned purpose ("Answer: <title>"): that is what is judged.
      const fails = (s: { purpose: string }) => this.script.failing.some((f) => s.purpose === `Answer: ${f}`);
      const failing = subtasks.filter(fails);
      const whole = this.script.objectToWhole === true;
      const verdict = {
        pass: failing.length === 0 && !whole,
        reason: whole ? 'the parts do not add up to one answer' : `${failing.length} part(s) fall short`,
        subtasks: subtasks.map((s) =>
          fails(s)
            ? {
                id: s.id,
                pass: false,
                reason: `does not mention ${s.purpose.slice(8)}`,
                missing: ['SqsDlq'],
              }
            : { id: s.id, pass: true, reason: 'ok' },
        ),
        corrective: failing.map((s) => ({
          title: `Retry: ${s.title ?? s.purpose}`,
          purpose: s.purpose,
          instructions: 'Search again.',
          applicability: 'One part.',
          evaluation: 'Answered.',
          corrects: s.id,
        })),
      };
      content = [toolUse(SUBMIT_VERDICT, verdict as unknown as JsonValue)];
    } else {
      const first = allText(request);
      const task = first.slice(first.lastIndexOf('## Task'));
      const purpose = /\*\*Purpose:\*\*\s*Answer: (.+)/.exec(task)?.[1]?.trim() ?? 'the task';
      content = [{ text: `Answer to ${purpose}.` }];
    }
    return scriptedReply(content);
  }
}

function allText(request: ConverseRequest): string {
  return (request.messages[0]?.content ?? []).flatMap((b) => ('text' in b ? [b.text] : [])).join('\n');
}

/** Runs one conversation with the script and reads what it left. */
async function run(script: Script, limits: { maxCorrectiveRounds?: number } = {}) {
  const { runtime, started, all, tasks } = await runScripted(new PartScripted(script), {
    content: 'A question in parts.',
    name: `partial-${crypto.randomUUID()}`,
    limits,
  });
  const conversation = await runtime.deps.resources.get(SYSTEM_ACTOR, started.conversation);
  const roots = tasks.filter((t) => t.depth === 1);
  const outputOf = (task: Task) =>
    all.find(
      (r): r is Message =>
        r.meta.type === 'common.Message' && r.meta.name === 'output' && parentOf(r.meta.id) === task.meta.id,
    );
  const verdicts = all
    .filter((r): r is Verdict => r.meta.type === 'plan.Verdict')
    .sort((a, b) => a.round - b.round);
  const answer = all.find((r) => r.meta.id === started.answer) as Message | undefined;
  const progress = conversationProgress(started.conversation, [conversation, ...all], { now: new Date() });
  return { tasks, roots, outputOf, verdicts, answer, progress, deadLetters: runtime.bus.deadLetters };
}

const THREE_PARTS = {
  roots: [{ title: 'Answer 3 parts', parts: ['part one', 'part two', 'part three'] }],
};

describe('a supervised task whose corrective rounds run out with some subtasks passed', () => {
  it.each([
    0, 2,
  ])('ends partial with maxCorrectiveRounds %i: the passed parts kept, the failed one named with the objection', async (rounds) => {
    const outcome = await run({ ...THREE_PARTS, failing: ['part three'] }, { maxCorrectiveRounds: rounds });

    const root = outcome.roots[0] as Task;
    const output = outcome.outputOf(root) as Message;
    expect(output.error).toBeUndefined();
    expect(outcomeOf(output)).toBe('partial');
    expect(outcome.verdicts.map((v) => v.pass)).toEqual(Array(rounds + 1).fill(false));
    const after = `still failing after ${rounds} corrective round${rounds === 1 ? '' : 's'}`;
    expect(output.content).toBe(
      [
        '### part one\nAnswer to part one.',
        '### part two\nAnswer to part two.',
        `Not answered:\n- part three — does not mention part three (${after})`,
      ].join('\n\n'),
    );
    // The part is named as planned, with the URN of the task that last tried it.
    const last = outcome.tasks
      .filter((t) => t.title.endsWith('part three'))
      .sort((a, b) => b.round - a.round)[0];
    expect(output.unanswered).toEqual([
      { task: last?.meta.id, title: 'part three', reason: `does not mention part three (${after})` },
    ]);
    expect(last?.round).toBe(rounds);
    // The final answer is the root's output, partial, and the turn is closed as `partial`.
    expect(outcome.answer?.error).toBeUndefined();
    expect(outcome.answer?.content).toBe(output.content);
    expect(outcome.answer?.unanswered).toEqual(output.unanswered);
    expect(outcome.progress.turns.map((t) => [t.status, t.redrive])).toEqual([['partial', []]]);
    expect(outcome.progress.status).toBe('partial');
    expect(outcome.deadLetters).toEqual([]);
  }, 60_000);

  it('records per verdict what the supervisor found missing', async () => {
    const outcome = await run({ ...THREE_PARTS, failing: ['part three'] }, { maxCorrectiveRounds: 1 });

    for (const verdict of outcome.verdicts) {
      const judged = verdict.subtasks.filter((s) => !s.pass);
      expect(judged).toHaveLength(1);
      expect(judged[0]?.missing).toEqual(['SqsDlq']);
      expect(verdict.subtasks.filter((s) => s.pass).every((s) => s.missing === undefined)).toBe(true);
    }
  }, 60_000);

  it('fails as before when every subtask failed', async () => {
    const outcome = await run(
      { ...THREE_PARTS, failing: ['part one', 'part two', 'part three'] },
      { maxCorrectiveRounds: 1 },
    );

    const output = outcome.outputOf(outcome.roots[0] as Task) as Message;
    expect(output.error?.message).toBe('still failing after 1 corrective rounds: 3 part(s) fall short');
    expect(output.unanswered).toBeUndefined();
    expect(outcome.answer?.error?.code).toBe('LIMIT_EXCEEDED');
    expect(outcome.progress.status).toBe('failed');
  }, 60_000);

  it('names the task itself when the verdict objects to the whole while every subtask passes', async () => {
    const outcome = await run(
      { ...THREE_PARTS, failing: [], objectToWhole: true },
      { maxCorrectiveRounds: 1 },
    );

    const root = outcome.roots[0] as Task;
    const output = outcome.outputOf(root) as Message;
    expect(outcome.verdicts.map((v) => [v.pass, v.corrective.length])).toEqual([[false, 0]]);
    expect(output.unanswered).toEqual([
      {
        task: root.meta.id,
        title: 'Answer 3 parts',
        reason: 'verdict failed with no corrective subtasks: the parts do not add up to one answer',
      },
    ]);
    expect(output.content).toMatch(
      /^### part one\n[\s\S]*### part three\nAnswer to part three\.\n\nNot answered:\n- Answer 3 parts — verdict failed/,
    );
    expect(outcome.progress.status).toBe('partial');
  }, 60_000);
});

describe('the final answer over several root tasks', () => {
  it('keeps the root tasks that answered and names the one that failed (partial)', async () => {
    const outcome = await run(
      {
        roots: [{ title: 'first question' }, { title: 'second question', parts: ['half a', 'half b'] }],
        failing: ['half a', 'half b'],
      },
      { maxCorrectiveRounds: 0 },
    );

    expect(outcome.answer?.error).toBeUndefined();
    expect(outcome.answer?.content).toBe(
      '### first question\nAnswer to first question.\n\nNot answered:\n- second question — still failing after 0 corrective rounds: 2 part(s) fall short',
    );
    expect(outcome.answer?.unanswered?.map((p) => p.title)).toEqual(['second question']);
    expect(outcome.progress.status).toBe('partial');
  }, 60_000);

  it('fails when every root task failed', async () => {
    const outcome = await run(
      { roots: [{ title: 'only question', parts: ['half a', 'half b'] }], failing: ['half a', 'half b'] },
      { maxCorrectiveRounds: 0 },
    );

    expect(outcome.answer?.error?.code).toBe('LIMIT_EXCEEDED');
    expect(outcome.answer?.content).toMatch(/^Not completed: only question: still failing/);
    expect(outcome.progress.status).toBe('failed');
  }, 60_000);
});
