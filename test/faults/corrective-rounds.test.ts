import { describe, expect, it } from 'vitest';
import { CREATE_PLAN, SUBMIT_VERDICT } from '../../shared/domain/payloads.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
} from '../../shared/llm/port.js';
import type { Message, Verdict } from '../../shared/resources/schemas.js';
import { parentOf } from '../../shared/urn.js';
import { lastText, runScripted, scriptedReply, toolUse } from '../helpers/scripted-run.js';

/**
 * The supervisor's corrective-round limit (`maxCorrectiveRounds`, shared/domain/assistant.ts),
 * pinned on both sides: a supervisor whose verdicts always fail gets exactly `maxCorrectiveRounds`
 * corrective rounds — not one fewer, not one more — and then fails its task with the limit named.
 */

/** A model whose supervisor never passes: every verdict fails and asks to redo the first subtask. */
class NeverSatisfied implements ChatModel {
  readonly name = 'never-satisfied';

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      const leaf = (id: string) => ({
        title: `part ${id}`,
        purpose: `Write part ${id} of the answer.`,
        instructions: `Write part ${id}.`,
        applicability: 'A single part of an answer.',
        evaluation: `Part ${id} is written.`,
      });
      const plan = {
        tasks: [
          {
            title: 'whole answer',
            purpose: 'Write both parts of the answer and combine them.',
            instructions: 'Supervise the two parts and combine them.',
            applicability: 'A multi-part request split into subtasks that must be combined.',
            evaluation: 'Both parts are written.',
            subtasks: [leaf('a'), leaf('b')],
          },
        ],
      };
      content = [toolUse(CREATE_PLAN, plan as unknown as JsonValue)];
    } else if (tools.includes(SUBMIT_VERDICT)) {
      const prompt = lastText(request);
      const json = /```json\s*([\s\S]*?)```/.exec(prompt)?.[1] ?? '{}';
      const subtasks = ((JSON.parse(json) as { subtasks?: { id: string }[] }).subtasks ?? []).map(
        (s) => s.id,
      );
      const verdict = {
        pass: false,
        reason: 'part a is still wrong',
        subtasks: subtasks.map((id) => ({ id, pass: false, reason: 'wrong' })),
        corrective: [
          {
            title: 'part a again',
            purpose: 'Write part a of the answer again.',
            instructions: 'Write part a, better.',
            applicability: 'A single part of an answer.',
            evaluation: 'Part a is written well.',
            corrects: subtasks[0] as string,
          },
        ],
      };
      content = [toolUse(SUBMIT_VERDICT, verdict as unknown as JsonValue)];
    } else {
      content = [{ text: 'Here is the part.' }];
    }
    return scriptedReply(content);
  }
}

/** Runs one conversation under `maxCorrectiveRounds` and reads what the supervisor left. */
async function supervise(maxCorrectiveRounds: number) {
  const { all, tasks, root } = await runScripted(new NeverSatisfied(), {
    content: 'Write a two-part answer.',
    name: `rounds-${maxCorrectiveRounds}`,
    limits: { maxCorrectiveRounds },
  });
  const verdicts = all
    .filter((r): r is Verdict => r.meta.type === 'plan.Verdict' && parentOf(r.meta.id) === root.meta.id)
    .sort((a, b) => a.round - b.round);
  const output = all.find(
    (r): r is Message =>
      r.meta.type === 'common.Message' && parentOf(r.meta.id) === root.meta.id && !!(r as Message).error,
  );
  const correctiveRounds = new Set(
    tasks.filter((t) => parentOf(t.meta.id) === root.meta.id && t.round > 0).map((t) => t.round),
  );
  return { verdicts, output, correctiveRounds: [...correctiveRounds].sort() };
}

describe('the corrective-round limit (maxCorrectiveRounds)', () => {
  it.each([
    0, 1, 2,
  ])('with maxCorrectiveRounds %i: exactly that many corrective rounds, then the task fails naming the limit', async (limit) => {
    const { verdicts, output, correctiveRounds } = await supervise(limit);

    expect(correctiveRounds).toEqual(Array.from({ length: limit }, (_, i) => i + 1));
    expect(verdicts.map((v) => v.round)).toEqual(Array.from({ length: limit + 1 }, (_, i) => i + 1));
    expect(verdicts.map((v) => v.corrective.length)).toEqual([...Array(limit).fill(1), 0]);
    expect(output?.error?.message).toBe(
      `still failing after ${limit} corrective rounds: part a is still wrong`,
    );
  }, 60_000);
});
