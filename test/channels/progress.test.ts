/**
 * The Slack progress view reads what it shows and no more (issue 16): counts from one listing of
 * keys, and only the tasks of depth ≤ 2 (with their outputs) as resources, however many tasks
 * lie below. Built on the filesystem storage with the built-in policy, as the reply step reads.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROGRESS_DEPTH, progressOf, progressText } from '../../shared/channels/reply.js';
import { outputUrn } from '../../shared/domain/common.js';
import type { Policy } from '../../shared/policy/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Message, Task } from '../../shared/resources/schemas.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { CountingStorage } from '../bench/memory-storage.js';
import { conversation, message, NOW, task } from '../unit/builders.js';

/** Writes the fixtures (the steps that store them are not under test here). */
const ALLOW_ALL: Policy = { engine: 'test', evaluate: () => ({ allow: true, reason: 'fixture' }) };

describe('progressOf', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-progress-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function output(of: Task, error = false): Message {
    return {
      meta: withMeta({ type: 'common.Message', name: 'output', parent: of.meta.id }, NOW),
      role: 'assistant',
      content: `done ${of.title}`,
      ...(error ? { error: { code: 'TASK_FAILED', message: 'failed' } } : {}),
    } as Message;
  }

  it('counts every task from the keys but reads only the tasks of depth ≤ 2 and their outputs', async () => {
    const storage = new CountingStorage(new FilesystemStorage(join(dir, 'resources')));
    const writer = new ResourceIndex(storage, ALLOW_ALL);
    const c = conversation();
    const m = message(c.meta.id, 'message-1');
    await writer.put(SYSTEM_ACTOR, c);
    await writer.put(SYSTEM_ACTOR, m);
    // 2 root tasks × 3 subtasks × 4 sub-subtasks = 2 + 6 + 24 = 32 tasks; all depth-3 leaves done,
    // one depth-2 task failed.
    let leaves = 0;
    for (let i = 0; i < 2; i++) {
      const root = task(m.meta.id, `root-${i}`, 1);
      await writer.put(SYSTEM_ACTOR, root);
      for (let j = 0; j < 3; j++) {
        const mid = task(root.meta.id, `mid-${i}-${j}`, 2);
        await writer.put(SYSTEM_ACTOR, mid);
        if (i === 0 && j === 0) await writer.put(SYSTEM_ACTOR, output(mid, true));
        for (let k = 0; k < 4; k++) {
          const leaf = task(mid.meta.id, `leaf-${i}-${j}-${k}`, 3);
          await writer.put(SYSTEM_ACTOR, leaf);
          await writer.put(SYSTEM_ACTOR, output(leaf));
          leaves++;
        }
      }
    }
    expect(leaves).toBe(24);
    // A fresh index (no cache) over the same storage, as a cold reply function.
    const reader = new ResourceIndex(storage, builtinPolicy());
    storage.reads = 0;
    storage.listings = 0;

    const progress = await progressOf(reader, m.meta.id);

    expect(PROGRESS_DEPTH).toBe(2);
    expect(progress).toMatchObject({ answered: false, total: 32, finished: 25, failed: 1 });
    expect(progress.tasks.map((t) => t.title)).toEqual(['root-0', 'root-1']);
    expect(progress.tasks[0]?.subtasks.map((t) => [t.title, t.status, t.subtasks.length])).toEqual([
      ['mid-0-0', 'failed', 0],
      ['mid-0-1', 'running', 0],
      ['mid-0-2', 'running', 0],
    ]);
    // The 8 tasks of depth ≤ 2, the 1 output among them and the (absent) answer: 10 objects asked
    // for, not the 57 of the turn; one listing.
    expect(storage.reads).toBe(8 + 1 + 1);
    expect(storage.listings).toBe(1);
    const text = progressText(progress);
    expect(text.split('\n')[0]).toBe(':hourglass_flowing_sand: Working on it: 25 of 32 tasks done');
    expect(text.split('\n')).toHaveLength(1 + 8);
    expect(text).not.toContain('leaf-');
  });

  it('reports done with the failures when every task has an output', async () => {
    const storage = new FilesystemStorage(join(dir, 'resources'));
    const index = new ResourceIndex(storage, ALLOW_ALL);
    const c = conversation();
    const m = message(c.meta.id, 'message-1');
    await index.put(SYSTEM_ACTOR, c);
    await index.put(SYSTEM_ACTOR, m);
    const a = task(m.meta.id, 'a', 1);
    const b = task(m.meta.id, 'b', 1);
    for (const t of [a, b]) await index.put(SYSTEM_ACTOR, t);
    await index.put(SYSTEM_ACTOR, output(a));
    await index.put(SYSTEM_ACTOR, output(b, true));

    const progress = await progressOf(new ResourceIndex(storage, builtinPolicy()), m.meta.id);

    expect(outputUrn(a.meta.id)).toBe(output(a).meta.id);
    expect(progressText(progress).split('\n')).toEqual([
      ':white_check_mark: Done: 2 of 2 tasks (1 failed)',
      '✓ a (researcher)',
      '✗ b (researcher)',
    ]);
  });
});
