import { rootOf } from '../urn.js';
import type { ProjectionKey, ProjectionStore } from './port.js';

/**
 * Round counters (issue 5: "supervisors learn that all subtasks are done from an atomic counter
 * keyed by the parent task, incremented once per subtask output"). A parent is a supervised
 * `plan.Task`, or the user `common.Message` whose root tasks the plan step waits for. Round 0
 * holds the planned subtasks; round r ≥ 1 the corrective subtasks verdict r created. Each child's
 * output URN is applied once to its parent's counter for the child's round, so completing n
 * subtasks costs n conditional writes in total, and a step learns "round done" from one item.
 */

/** Value name of a counter. */
export const DONE = 'done';

/**
 * Key of the counter of `parent`'s subtasks in `round`: sort key
 * `done#<parent URN below the conversation>#<round>` (e.g. `done#/common.Message.ab…#0`).
 */
export function roundCounterKey(parent: string, round: number): ProjectionKey {
  const conversation = rootOf(parent);
  return { conversation, name: `${DONE}#${parent.slice(conversation.length)}#${round}` };
}

/** Parses a counter's projection name back into its parent URN and round (undefined if not a counter). */
export function parseRoundCounterName(
  conversation: string,
  name: string,
): { parent: string; round: number } | undefined {
  const match = /^done#(\/.+)#(\d+)$/.exec(name);
  if (!match) return undefined;
  return { parent: `${conversation}${match[1]}`, round: Number(match[2]) };
}

/**
 * Counts a subtask output once in its parent's round counter.
 * @returns the number of distinct outputs counted for that round, this one included
 */
export async function countOutput(
  store: ProjectionStore,
  parent: string,
  round: number,
  outputUrn: string,
): Promise<number> {
  const { projection } = await store.applyOnce(roundCounterKey(parent, round), outputUrn, { [DONE]: 1 });
  return projection.values[DONE] ?? 0;
}

/** How many outputs of `parent`'s subtasks in `round` have been counted (0 when none). */
export async function countedOutputs(store: ProjectionStore, parent: string, round: number): Promise<number> {
  const projection = await store.get(roundCounterKey(parent, round));
  return projection?.values[DONE] ?? 0;
}
