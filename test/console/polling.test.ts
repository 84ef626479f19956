import { describe, expect, it } from 'vitest';
import {
  afterPoll,
  nextPollDelayMs,
  POLL_ERROR_MAX_MS,
  POLL_FIRST_MS,
  POLL_MAX_MS,
  type PollState,
  resetAfterAction,
} from '../../console/src/polling.js';

/**
 * The console's polling schedule (issue 24 item 5): exponential backoff while nothing changes,
 * no polling of a finished conversation, a fresh start when the user acts. Pure functions, so the
 * schedule is asserted as delays, without timers.
 */

type Outcome = Parameters<typeof afterPoll>[1];

/** The delays a sequence of poll outcomes gives, from the first poll of a conversation. */
function delays(outcomes: Outcome[], from: PollState = resetAfterAction()): (number | undefined)[] {
  let state = from;
  return outcomes.map((outcome) => {
    state = afterPoll(state, outcome);
    return nextPollDelayMs(state);
  });
}

const running: Outcome = { kind: 'changed', status: 'running' };
const same: Outcome = { kind: 'unchanged' };

describe('console polling schedule', () => {
  it('doubles the delay with each unchanged poll of an open conversation, up to the cap', () => {
    expect(delays([running, same, same, same, same, same, same])).toEqual([
      1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000,
    ]);
    expect(POLL_FIRST_MS).toBe(1_000);
    expect(POLL_MAX_MS).toBe(15_000);
  });

  it('starts over when the view changes', () => {
    expect(delays([running, same, same, same, { kind: 'changed', status: 'waiting' }, same])).toEqual([
      1_000, 2_000, 4_000, 8_000, 1_000, 2_000,
    ]);
  });

  it.each(['done', 'failed'])('stops polling a %s conversation', (status) => {
    expect(delays([running, same, { kind: 'changed', status }])).toEqual([1_000, 2_000, undefined]);
  });

  it('backs off failed polls up to a minute, and resumes the open schedule after a success', () => {
    const failed: Outcome = { kind: 'failed' };
    expect(delays([running, failed, failed, failed, failed, failed, failed, failed, same])).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 2_000,
    ]);
    expect(POLL_ERROR_MAX_MS).toBe(60_000);
  });

  it('polls again after the user acts on a finished conversation until the view shows the new work', () => {
    let state = afterPoll(resetAfterAction(), { kind: 'changed', status: 'done' });
    expect(nextPollDelayMs(state)).toBeUndefined();
    // A follow-up: the first poll may still see the finished, unchanged view (304).
    state = afterPoll(resetAfterAction(), same);
    expect(nextPollDelayMs(state)).toBe(2_000);
    state = afterPoll(state, running);
    expect(nextPollDelayMs(state)).toBe(1_000);
  });

  it('polls a handful of times in the first minute of an idle open conversation, not 60', () => {
    let state = afterPoll(resetAfterAction(), running);
    let elapsed = 0;
    let polls = 1;
    for (;;) {
      const delay = nextPollDelayMs(state) as number;
      if (elapsed + delay > 60_000) break;
      elapsed += delay;
      polls++;
      state = afterPoll(state, same);
    }
    expect(polls).toBe(8);
  });
});
