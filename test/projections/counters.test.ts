/**
 * Completion tracking scales (issue 5: "completing n subtasks costs O(n) writes in total, not
 * O(n²) reads"): the assistant step is driven directly with the output events of n subtasks of
 * one supervised task, over a storage that counts what is read, and a projection store that
 * counts what is applied. Every output is one counter apply; only the event that completes the
 * round reads the n outputs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, describe, expect, it } from 'vitest';
import { assistantStep } from '../../shared/domain/assistant.js';
import { assistantActor, buildTasks, outputUrn, planActor } from '../../shared/domain/common.js';
import type { ResourcePutEvent } from '../../shared/events/envelope.js';
import { countedOutputs, roundCounterKey } from '../../shared/projections/counters.js';
import { LocalProjectionStore } from '../../shared/projections/local.js';
import type { ProjectionStore } from '../../shared/projections/port.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { Message, Task } from '../../shared/resources/schemas.js';
import { assembleDeps } from '../../shared/runtime/assemble.js';
import { parseLimits } from '../../shared/runtime/settings.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import type { FindOptions, StorageInterface } from '../../shared/storage/port.js';
import { keyOf, rootOf } from '../../shared/urn.js';
import { ScriptedModel } from '../faults/scripted-model.js';

/** A storage that counts object reads (one per key) and listings. */
class CountingStorage implements StorageInterface {
  reads = 0;
  listings = 0;
  constructor(private readonly inner: StorageInterface) {}
  get(key: string) {
    this.reads++;
    return this.inner.get(key);
  }
  getMany(keys: readonly string[]) {
    this.reads += keys.length;
    return this.inner.getMany(keys);
  }
  put(key: string, data: Buffer | string) {
    return this.inner.put(key, data);
  }
  delete(key: string) {
    return this.inner.delete(key);
  }
  findByPrefix(prefix: string, options?: FindOptions) {
    this.listings++;
    return this.inner.findByPrefix(prefix, options);
  }
  findByExtension(extension: string) {
    this.listings++;
    return this.inner.findByExtension(extension);
  }
}

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Completes a supervised task of n subtasks, one output event each; returns what it cost. */
async function complete(n: number) {
  const dir = await mkdtemp(join(tmpdir(), 'cld-counters-'));
  dirs.push(dir);
  const storage = new CountingStorage(new FilesystemStorage(join(dir, 'resources')));
  const inner = new LocalProjectionStore();
  let applies = 0;
  const projections: ProjectionStore = {
    ...inner,
    get: (key) => inner.get(key),
    list: (conversation) => inner.list(conversation),
    deleteConversation: (conversation) => inner.deleteConversation(conversation),
    applyOnce: (key, member, increments, options) => {
      applies++;
      return inner.applyOnce(key, member, increments, options);
    },
  };
  const deps = await assembleDeps({
    storage,
    indexStorage: new FilesystemStorage(dir),
    model: new ScriptedModel([1]),
    limits: parseLimits(undefined, { maxSubtasks: 32 }),
    logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }),
    projections,
  });
  const conversation = withMeta({ type: 'common.Conversation', name: `scale-${n}` });
  const user = { kind: 'user' as const, id: 'cli:test', conversation: conversation.id };
  await deps.resources.put(user, { meta: conversation, actor: 'cli:test', channel: { kind: 'cli' } });
  const message: Message = {
    meta: withMeta({ type: 'common.Message', name: 'message-1', parent: conversation.id }),
    role: 'user',
    content: 'scale',
  };
  await deps.resources.put(user, message);
  const leaf = (i: number) => ({
    title: `part ${i}`,
    purpose: `Answer part ${i}`,
    instructions: 'answer',
    applicability: 'a question',
    evaluation: 'named',
  });
  const tasks = await buildTasks(
    deps,
    [{ ...leaf(0), title: 'root', subtasks: Array.from({ length: n }, (_, i) => leaf(i + 1)) }],
    message.meta.id,
    1,
    0,
  );
  for (const task of tasks) await deps.resources.put(planActor(message.meta.id), task);
  const [root, ...subtasks] = tasks as [Task, ...Task[]];

  storage.reads = 0;
  storage.listings = 0;
  const outcomes: string[] = [];
  // As in a run: each subtask finishes (its output is stored), then its event is handled.
  for (const subtask of subtasks) {
    const output: Message = {
      meta: withMeta({ type: 'common.Message', name: 'output', parent: subtask.meta.id }),
      role: 'assistant',
      content: `Done: ${subtask.title}`,
    };
    await deps.resources.put(assistantActor(subtask.meta.id, subtask.assistant), output);
    const urn = output.meta.id;
    const event: ResourcePutEvent = {
      id: urn,
      detailType: 'RESOURCE_PUT',
      source: 'aws.s3',
      time: new Date().toISOString(),
      bucket: 'test',
      key: keyOf(urn),
      urn,
      type: 'common.Message',
    };
    outcomes.push((await assistantStep(event, deps)).action);
  }
  return {
    outcomes,
    reads: storage.reads,
    listings: storage.listings,
    applies,
    counted: await countedOutputs(inner, root.meta.id, 0),
    rootDone: (await inner.list(rootOf(root.meta.id))).find(
      (p) => p.name === roundCounterKey(root.meta.id, 0).name,
    )?.members.length,
    rootOutput: await deps.resources.find(
      assistantActor(root.meta.id),
      'common.Message',
      outputUrn(root.meta.id),
    ),
  };
}

describe('completion of n subtasks', () => {
  it('waits on the counter until the last output, then supervises once', async () => {
    const result = await complete(8);

    expect(result.outcomes.slice(0, 7)).toEqual(Array(7).fill('waiting'));
    expect(result.outcomes[7]).toBe('output');
    expect(result.counted).toBe(8);
    expect(result.rootDone).toBe(8);
    expect(result.rootOutput?.content).toContain('Done: part 8');
  });

  it('costs O(n): reads and counter applies per subtask stay flat from 8 to 32 subtasks', async () => {
    const small = await complete(8);
    const large = await complete(32);

    // One apply per output (the counter) plus the verdict's budget charge.
    expect(small.applies).toBe(8 + 1);
    expect(large.applies).toBe(32 + 1);
    // Each event reads its output, the subtask and the parent; the last one reads the n outputs
    // and n subtasks to judge them. Listing the outputs on every event would be n² reads.
    const perSubtaskSmall = small.reads / 8;
    const perSubtaskLarge = large.reads / 32;
    expect(perSubtaskLarge).toBeLessThanOrEqual(perSubtaskSmall * 1.25);
    expect(large.reads).toBeLessThan((32 * 32) / 2);
    expect(large.listings).toBeLessThanOrEqual(small.listings);
  });
});
