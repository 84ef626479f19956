import { describe, expect, it } from 'vitest';
import { verdictFailure } from '../../shared/domain/assistant.js';
import { DEFAULT_LIMITS } from '../../shared/domain/limits.js';
import { LimitExceededError, ValidationError } from '../../shared/errors.js';
import type { Verdict } from '../../shared/resources/schemas.js';

/** Only the fields verdictFailure reads. */
function verdict(round: number): Verdict {
  return {
    round,
    pass: false,
    reason: 'subtask S1 failed',
    corrective: [],
    subtasks: [],
  } as unknown as Verdict;
}

describe('verdictFailure', () => {
  it('is a ValidationError while corrective rounds remain, naming the reason', () => {
    const error = verdictFailure(verdict(1), DEFAULT_LIMITS);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe('verdict failed with no corrective subtasks: subtask S1 failed');
  });

  it('is a LimitExceededError past the last corrective round', () => {
    const error = verdictFailure(verdict(DEFAULT_LIMITS.maxCorrectiveRounds + 1), DEFAULT_LIMITS);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error.message).toBe(
      `still failing after ${DEFAULT_LIMITS.maxCorrectiveRounds} corrective rounds: subtask S1 failed`,
    );
  });

  it('depends on the stored verdict alone, so a retried invocation writes the same error', () => {
    const first = verdictFailure(verdict(2), DEFAULT_LIMITS);
    const retried = verdictFailure(structuredClone(verdict(2)), DEFAULT_LIMITS);
    expect([retried.name, retried.message]).toEqual([first.name, first.message]);
  });
});
