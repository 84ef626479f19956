/**
 * Issue 12, "nothing stays pending, even when the process dies": `serve` killed with SIGKILL at
 * random points while conversations run, then started again; `ask` interrupted with SIGINT, then
 * run again. Every acknowledged conversation must end answered (or failed with a reason), none
 * stalled or lost, and every conversation's projections must equal a replay from storage.
 * Sized for `npm test` (about a minute on 2 shared cores); `npm run bench:kill` runs more kills
 * and prints the README's table.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleCli, runAskInterrupts, runServeKills } from './kill-harness.js';

beforeAll(async () => {
  await bundleCli();
}, 60_000);

describe('process death', () => {
  it('serve killed with SIGKILL 8 times under load answers every acknowledged conversation afterwards', async () => {
    const result = await runServeKills({ kills: 8, perStart: 4, seed: 12, killAfterMs: [0, 900] });

    expect(result.kills).toBe(8);
    expect(result.conversations).toBeGreaterThan(0);
    expect(result.unfinishedAtKills).toBeGreaterThan(0); // the kills did leave work behind
    expect(result.lost).toEqual([]);
    expect(result.stalled).toBe(0);
    for (const failure of result.failed) expect(failure.reason).not.toBe('(no reason)');
    expect(result.answered + result.failed.length).toBe(result.conversations);
    expect(result.projectionDifferences).toEqual([]);
  }, 180_000);

  it('ask interrupted with SIGINT and run again answers the interrupted conversation', async () => {
    const result = await runAskInterrupts({ interrupts: 2, seed: 7, afterMs: [0, 1_200] });

    expect(result.interrupts).toBeGreaterThan(0);
    expect(result.lost).toEqual([]);
    expect(result.answered + result.failed).toBe(2);
    expect(result.projectionDifferences).toEqual([]);
  }, 180_000);
});
