/**
 * The console's polling schedule of one conversation (issue 24 item 5): each poll is a Lambda
 * invocation and an S3 LIST, and every webhook route shares the account's API Gateway quota, so
 * the console backs off. While the conversation is open, the delay doubles with each poll that
 * saw no change (`POLL_FIRST_MS`, 2 s, 4 s, … up to `POLL_MAX_MS`) and starts over when the view
 * changes; a failed poll backs off the same way from `POLL_FIRST_MS` up to `POLL_ERROR_MAX_MS`;
 * a finished conversation (`done`, `partial` or `failed`) is not polled at all until the user acts on it
 * (a follow-up or a decision polls once, at once, and the schedule starts over).
 */

/** Delay after a poll that saw a change, in ms. */
export const POLL_FIRST_MS = 1_000;
/** Longest delay between two polls of an open conversation that did not change, in ms. */
export const POLL_MAX_MS = 15_000;
/** Longest delay after consecutive failed polls, in ms. */
export const POLL_ERROR_MAX_MS = 60_000;

/** Conversation statuses after which nothing changes until the user sends or decides something. */
const FINISHED: ReadonlySet<string> = new Set(['done', 'partial', 'failed']);

/** What the schedule knows after a poll. */
export interface PollState {
  /** The conversation's status as last seen (undefined before the first answer). */
  status: string | undefined;
  /** Polls in a row that answered 304 (no change) since the last change. */
  unchanged: number;
  /** Polls in a row that failed (network, 5xx, 429). */
  failures: number;
}

/** The state after a poll: `outcome` is what it saw. */
export function afterPoll(
  state: PollState,
  outcome: { kind: 'changed'; status: string } | { kind: 'unchanged' } | { kind: 'failed' },
): PollState {
  switch (outcome.kind) {
    case 'changed':
      return { status: outcome.status, unchanged: 0, failures: 0 };
    case 'unchanged':
      return { ...state, unchanged: state.unchanged + 1, failures: 0 };
    case 'failed':
      return { ...state, failures: state.failures + 1 };
  }
}

/**
 * The state after the user acted on the conversation (a follow-up, a decision): the status is
 * unknown again, so polling goes on (from `POLL_FIRST_MS`) until a poll shows what the action
 * started, even when the first poll still finds the conversation finished and unchanged.
 */
export function resetAfterAction(): PollState {
  return { status: undefined, unchanged: 0, failures: 0 };
}

/**
 * Milliseconds until the next poll, or undefined to stop polling (a finished conversation that
 * the last poll read successfully).
 */
export function nextPollDelayMs(state: PollState): number | undefined {
  if (state.failures > 0)
    return Math.min(POLL_ERROR_MAX_MS, POLL_FIRST_MS * 2 ** Math.min(state.failures, 16));
  if (state.status !== undefined && FINISHED.has(state.status)) return undefined;
  return Math.min(POLL_MAX_MS, POLL_FIRST_MS * 2 ** Math.min(state.unchanged, 16));
}
