import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../shared/domain/limits.js';
import {
  completeCorrective,
  parseVerdictPayload,
  resolveSubtaskId,
  SUBMIT_VERDICT_SPEC,
  subtaskId,
} from '../../shared/domain/payloads.js';

const SLOTS = [
  'cld:common.Conversation.a/common.Message.b/plan.Task.c/plan.Task.d',
  'cld:common.Conversation.a/common.Message.b/plan.Task.c/plan.Task.e',
];

describe("the judge's short subtask ids (issue 25)", () => {
  it('numbers subtasks s1, s2 … and maps each back to its URN; a URN passes unchanged', () => {
    expect([0, 1].map(subtaskId)).toEqual(['s1', 's2']);
    expect(resolveSubtaskId('s1', SLOTS)).toBe(SLOTS[0]);
    expect(resolveSubtaskId(' s2 ', SLOTS)).toBe(SLOTS[1]);
    expect(resolveSubtaskId('s3', SLOTS)).toBeUndefined();
    expect(['S1', 's 1', '1'].map((id) => resolveSubtaskId(id, SLOTS))).toEqual([
      SLOTS[0],
      SLOTS[0],
      SLOTS[0],
    ]);
    expect(resolveSubtaskId(SLOTS[1] as string, SLOTS)).toBe(SLOTS[1]);
  });

  it('accepts a verdict that names subtasks by id and leaves out a corrective title and applicability', () => {
    const verdict = parseVerdictPayload(
      {
        pass: false,
        reason: 'part 2 lacks the identifier',
        subtasks: [
          { id: 's1', pass: true, reason: 'ok' },
          { id: 's2', pass: false, reason: 'no code', missing: ['SqsDlq'] },
        ],
        corrective: [
          {
            purpose: 'Answer the question: how do I send failed records to SQS?',
            instructions: 'Search for SqsDlq.',
            evaluation: 'Names SqsDlq.',
            corrects: 's2',
          },
        ],
      },
      DEFAULT_LIMITS,
      0,
    );
    expect(verdict.subtasks.map((s) => s.id)).toEqual(['s1', 's2']);
    expect(verdict.corrective[0]?.title).toBeUndefined();
  });

  it('still refuses a verdict that names a subtask by a field it does not know', () => {
    expect(() =>
      parseVerdictPayload(
        { pass: true, reason: 'ok', subtasks: [{ urn: SLOTS[0], pass: true, reason: 'ok' }] },
        DEFAULT_LIMITS,
        0,
      ),
    ).toThrow(/not a valid verdict/);
  });

  it("fills a corrective's title and applicability from the subtask it redoes, or from its purpose", () => {
    const redo = { purpose: 'Answer again: part 2', instructions: 'Search again.', evaluation: 'Names it.' };
    expect(completeCorrective(redo, { title: 'Part 2', applicability: 'A single question.' })).toMatchObject({
      title: 'Retry: Part 2',
      applicability: 'A single question.',
    });
    // A second round redoes the first retry: one "Retry: ", not two.
    expect(completeCorrective(redo, { title: 'Retry: Part 2', applicability: 'A' }).title).toBe(
      'Retry: Part 2',
    );
    const fresh = completeCorrective({ ...redo, subtasks: [{ ...redo, purpose: 'x'.repeat(300) }] });
    expect(fresh).toMatchObject({ title: 'Answer again: part 2', applicability: 'Answer again: part 2' });
    expect(fresh.subtasks?.[0]?.title).toHaveLength(200);
    expect(
      completeCorrective(
        { ...redo, title: 'Mine', applicability: 'Own.' },
        { title: 'T', applicability: 'A' },
      ),
    ).toMatchObject({ title: 'Mine', applicability: 'Own.' });
  });

  it('sends the model a schema without minLength 1 (the zod schema still refuses an empty text)', () => {
    expect(JSON.stringify(SUBMIT_VERDICT_SPEC.inputSchema.json)).not.toContain('"minLength":1');
    expect(() => parseVerdictPayload({ pass: true, reason: '  ', subtasks: [] }, DEFAULT_LIMITS, 0)).toThrow(
      /not a valid verdict/,
    );
  });
});
