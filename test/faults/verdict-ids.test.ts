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
 * The judge names subtasks by the short ids of its prompt (`s1`, `s2`, …; issue 25), which the
 * supervisor maps back to URNs. A corrective subtask's own subtasks share its JSON schema, so the
 * model may give one of them a `corrects` too — an id, not a URN. That field is read on the
 * verdict's own corrective subtasks only; a nested one must not reach the stored Task (whose
 * `corrects` is a URN), or storing the round fails and the task never ends.
 */

/** A verdict on the planned parts fails and returns `corrective`; one on a corrective round passes. */
class Judge implements ChatModel {
  readonly name = 'verdict-ids';
  constructor(private readonly corrective: (ids: string[]) => JsonValue[]) {}

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      content = [
        toolUse(CREATE_PLAN, {
          tasks: [
            {
              ...part('whole answer', 'Write both parts of the answer and combine them.'),
              subtasks: [part('part a', 'Write part a.'), part('part b', 'Write part b.')],
            },
          ],
        }),
      ];
    } else if (tools.includes(SUBMIT_VERDICT)) {
      const prompt = lastText(request);
      const json = /```json\s*([\s\S]*?)```/.exec(prompt)?.[1] ?? '{}';
      const ids = ((JSON.parse(json) as { subtasks?: { id: string }[] }).subtasks ?? []).map((s) => s.id);
      // Fails while the root's planned parts alone are judged (a retried step is judged alike).
      const first = !/part a again|part c too/.test(prompt);
      content = [
        toolUse(SUBMIT_VERDICT, {
          pass: !first,
          reason: first ? 'part a is wrong' : 'all parts pass',
          subtasks: ids.map((id) => ({ id, pass: !first || id !== 's1', reason: 'scripted' })),
          corrective: first ? this.corrective(ids) : [],
        }),
      ];
    } else {
      content = [{ text: 'Here is the part.' }];
    }
    return scriptedReply(content);
  }
}

function part(title: string, purpose: string) {
  return {
    title,
    purpose,
    instructions: `${purpose} Be brief.`,
    applicability: 'A single part of an answer.',
    evaluation: `${title} is written.`,
  };
}

/** Runs one conversation with `model` and reads the root task's verdicts, tasks and output. */
async function run(model: ChatModel) {
  const { all, tasks, root } = await runScripted(model, {
    content: 'Write a two-part answer.',
    name: 'verdict-ids',
  });
  const verdicts = all
    .filter((r): r is Verdict => r.meta.type === 'plan.Verdict' && parentOf(r.meta.id) === root.meta.id)
    .sort((a, b) => a.round - b.round);
  const output = all.find(
    (r): r is Message => r.meta.type === 'common.Message' && parentOf(r.meta.id) === root.meta.id,
  );
  return { root, tasks, verdicts, output };
}

describe("a verdict's subtask ids", () => {
  it("a corrective's own subtask naming 's1' in corrects: the round is stored and the task ends answered", async () => {
    const again = part('part a again', 'Write part a again.');
    const { root, tasks, verdicts, output } = await run(
      new Judge(() => [
        {
          purpose: again.purpose,
          instructions: 'Write it in two steps.',
          evaluation: again.evaluation,
          corrects: 's1',
          subtasks: [
            { ...part('step 1', 'Write part a again, step 1.'), corrects: 's1' },
            part('step 2', 'Write part a again, step 2.'),
          ],
        },
      ]),
    );

    expect(verdicts.map((v) => v.pass)).toEqual([false, true]);
    const [corrective] = verdicts[0]?.corrective ?? [];
    expect(tasks.find((t) => t.meta.id === corrective)?.corrects).toBe(root.subtasks[0]);
    const nested = tasks.filter((t) => parentOf(t.meta.id) === corrective);
    expect(nested).toHaveLength(2);
    expect(nested.map((t) => t.corrects)).toEqual([undefined, undefined]);
    expect(output?.error).toBeUndefined();
  }, 60_000);

  it('an unknown id (s9) in corrects adds the corrective as a new part; the verdict keeps only known ids', async () => {
    const again = part('part c', 'Write part c too.');
    const { root, tasks, verdicts, output } = await run(
      new Judge(() => [
        { purpose: again.purpose, instructions: 'Add it.', evaluation: again.evaluation, corrects: 's9' },
      ]),
    );

    expect(verdicts.map((v) => v.pass)).toEqual([false, true]);
    expect(verdicts[0]?.subtasks.map((s) => s.urn)).toEqual(root.subtasks);
    const [corrective] = verdicts[0]?.corrective ?? [];
    const added = tasks.find((t) => t.meta.id === corrective);
    expect(added?.corrects).toBeUndefined();
    expect(added?.title).toBe('Write part c too.');
    expect(output?.error).toBeUndefined();
    expect(output?.content).toContain('Write part c too.');
  }, 60_000);
});

/** A judge whose first reply names subtasks by `urn` (the field before issue 25), then corrects itself. */
class Mistyping implements ChatModel {
  readonly name = 'verdict-mistyping';
  readonly corrections: string[] = [];
  private readonly inner = new Judge(() => []);

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    if (!tools.includes(SUBMIT_VERDICT)) return this.inner.converse(request);
    const correction = request.messages
      .at(-1)
      ?.content.flatMap((b) => ('toolResult' in b && b.toolResult.status === 'error' ? [b.toolResult] : []));
    if (correction?.length) {
      this.corrections.push(
        correction.flatMap((r) => r.content.map((c) => ('text' in c ? c.text : ''))).join(''),
      );
      return reply({
        pass: true,
        reason: 'all parts pass',
        subtasks: [{ id: 's1', pass: true, reason: 'ok' }],
      });
    }
    return reply({
      pass: true,
      reason: 'all parts pass',
      subtasks: [{ urn: 's1', pass: true, reason: 'ok' }],
    });
  }
}

function reply(input: JsonValue): ConverseResponse {
  return scriptedReply([toolUse(SUBMIT_VERDICT, input)]);
}

describe('an invalid verdict', () => {
  it('gets one correction with the validation error, and the corrected verdict ends the task answered', async () => {
    const model = new Mistyping();
    const { verdicts, output } = await run(model);

    expect(model.corrections).toHaveLength(1);
    expect(model.corrections[0]).toMatch(/not a valid verdict.*urn/s);
    expect(verdicts.map((v) => v.pass)).toEqual([true]);
    // Both calls are charged: the invalid reply and the correction.
    expect(verdicts[0]?.usage?.totalTokens).toBe(40);
    expect(output?.error).toBeUndefined();
  }, 60_000);
});
