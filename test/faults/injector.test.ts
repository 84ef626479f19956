/**
 * The fault-injection parts on their own: the local bus's delivery faults (2–3 copies, delivery
 * attempts, process aborts, the dead-letter consumer) and the FaultInjector's crash plans
 * (before / in the middle of / after the writes; error or abort; never on a last attempt).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import {
  type Delivery,
  LocalBus,
  ProcessExitError,
  type StepInvoker,
} from '../../shared/events/local-bus.js';
import { routingTable, type StepName } from '../../shared/events/routing.js';
import { LocalProjectionStore } from '../../shared/projections/local.js';
import { FaultInjector, InjectedCrashError, PoisonEventError } from '../../shared/storage/faulty.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn, keyOf } from '../../shared/urn.js';

const BUCKET = 'faults';
const C = childUrn(undefined, 'common.Conversation', 'c');
const M = childUrn(C, 'common.Message', 'm');
const tasks = Array.from({ length: 20 }, (_, i) => childUrn(M, 'plan.Task', `t${i}`));

function targets(assistant: StepInvoker): Record<StepName, StepInvoker> {
  const none: StepInvoker = async () => undefined;
  const all = Object.fromEntries(routingTable(BUCKET).map((r) => [r.target, none])) as Record<
    StepName,
    StepInvoker
  >;
  return { ...all, assistant };
}

describe('LocalBus delivery faults', () => {
  it('delivers every event 2–3 times and counts the extra copies', async () => {
    const seen = new Map<string, number>();
    const bus = new LocalBus({
      routes: routingTable(BUCKET).filter((r) => r.target === 'assistant'),
      targets: targets(async (event) => {
        seen.set(event.detail.object.key, (seen.get(event.detail.object.key) ?? 0) + 1);
      }),
      faults: { copies: { min: 2, max: 3 }, seed: 9 },
    });

    for (const task of tasks) bus.publish(s3ObjectCreatedEvent(BUCKET, keyOf(task), 1));
    await bus.idle();

    const counts = [...seen.values()];
    expect(counts).toHaveLength(20);
    expect(counts.every((n) => n === 2 || n === 3)).toBe(true);
    expect(new Set(counts)).toEqual(new Set([2, 3]));
    expect(bus.faultStats.duplicates).toBe(counts.reduce((a, b) => a + b, 0) - 20);
  });

  it('tells each invocation its attempt, retries a process abort and hands the dead letter to the consumer', async () => {
    const deliveries: Delivery[] = [];
    const consumed: string[] = [];
    const bus = new LocalBus({
      routes: routingTable(BUCKET).filter((r) => r.target === 'assistant'),
      backoffMs: () => 1,
      targets: targets(async (_event, delivery) => {
        deliveries.push(delivery as Delivery);
        throw new ProcessExitError();
      }),
      deadLetterTarget: async (letter) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        consumed.push(letter.event.detail.object.key);
      },
    });

    bus.publish(s3ObjectCreatedEvent(BUCKET, keyOf(tasks[0] as string), 1));
    await bus.idle();

    expect(deliveries.map((d) => [d.attempt, d.final])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(new Set(deliveries.map((d) => d.id)).size).toBe(1);
    expect(bus.faultStats.aborts).toBe(3);
    expect(bus.deadLetters).toHaveLength(1);
    expect(consumed).toEqual([keyOf(tasks[0] as string)]); // idle() waited for the consumer
  });

  it('keeps a failure of the dead-letter consumer instead of retrying it', async () => {
    const bus = new LocalBus({
      routes: routingTable(BUCKET).filter((r) => r.target === 'assistant'),
      retries: 0,
      targets: targets(async () => {
        throw new Error('always');
      }),
      deadLetterTarget: async () => {
        throw new Error('consumer down');
      },
    });

    bus.publish(s3ObjectCreatedEvent(BUCKET, keyOf(tasks[0] as string), 1));
    await bus.idle();

    expect(bus.deadLetterErrors.map((e) => e.error.message)).toEqual(['consumer down']);
  });
});

describe('FaultInjector', () => {
  let dir: string;
  let storage: FilesystemStorage;
  const key = (n: number) => `${keyOf(tasks[n] as string)}`;
  const delivery = (attempt: number, final = false): Delivery => ({
    id: attempt,
    route: 'r',
    target: 'assistant',
    attempt,
    final,
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-injector-'));
    storage = new FilesystemStorage(dir);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs one invocation writing `writes` objects and reports what happened. */
  async function invocation(injector: FaultInjector, writes: number, final = false) {
    const wrapped = injector.wrapStorage(storage);
    const before = (await storage.findByPrefix('cld/')).length;
    let error: unknown;
    try {
      await injector.run(delivery(1, final), { target: 'assistant', urn: tasks[0] as string }, async () => {
        for (let i = 0; i < writes; i++) await wrapped.put(key(before + i), '{}');
      });
    } catch (caught) {
      error = caught;
    }
    return { error, written: (await storage.findByPrefix('cld/')).length - before };
  }

  it.each([
    ['before-write', 0, InjectedCrashError],
    ['after-write', 5, InjectedCrashError],
  ] as const)('crashes %s: %i of 5 writes stand', async (kind, written, type) => {
    const injector = new FaultInjector({ crashRate: 1, kinds: [kind], abortShare: 0 });

    const result = await invocation(injector, 5);

    expect(result.error).toBeInstanceOf(type);
    expect(result.written).toBe(written);
    expect(injector.stats.crashes[kind]).toBe(1);
  });

  it('crashes in the middle of a multi-resource write: the first 1–2 writes stand, the rest never happen', async () => {
    const injector = new FaultInjector({ crashRate: 1, kinds: ['mid-write'], abortShare: 0, seed: 3 });

    const result = await invocation(injector, 5);

    expect(result.error).toBeInstanceOf(InjectedCrashError);
    expect(result.written).toBeGreaterThanOrEqual(1);
    expect(result.written).toBeLessThanOrEqual(2);
  });

  it('kills the invocation on a process abort: writes it still attempts are refused', async () => {
    const injector = new FaultInjector({ crashRate: 1, kinds: ['before-write'], abortShare: 1 });
    const wrapped = injector.wrapStorage(storage);
    const projections = injector.wrapProjections(new LocalProjectionStore());
    const attempts: string[] = [];

    await expect(
      injector.run(delivery(1), { target: 'assistant', urn: tasks[0] as string }, async () => {
        try {
          await wrapped.put(key(0), '{}');
        } catch {
          attempts.push('caught the abort'); // code that swallows it cannot write after all
        }
        await wrapped.put(key(1), '{}').catch((e: Error) => attempts.push(e.name));
        await projections
          .applyOnce({ conversation: C, name: 'budget' }, 'm', { tokens: 1 })
          .catch((e: Error) => attempts.push(e.name));
      }),
    ).resolves.toBeUndefined();

    expect(attempts).toEqual(['caught the abort', 'ProcessExitError', 'ProcessExitError']);
    expect(await storage.findByPrefix('cld/')).toEqual([]);
    expect(injector.stats).toMatchObject({ aborts: 1, refusedAfterAbort: 2 });
  });

  it('never crashes a delivery’s last attempt', async () => {
    const injector = new FaultInjector({ crashRate: 1 });

    // One after another: each invocation writes the next two keys and counts what it added (run
    // at once, they raced on that count).
    const results: Awaited<ReturnType<typeof invocation>>[] = [];
    for (let i = 0; i < 10; i++) results.push(await invocation(injector, 2, true));

    expect(results.every((r) => r.error === undefined && r.written === 2)).toBe(true);
    expect(injector.stats.invocations).toBe(10);
  });

  it('fails every attempt of a poison event, the last one included', async () => {
    const injector = new FaultInjector({
      poison: (target, urn) => target === 'assistant' && urn === tasks[0],
    });

    for (const final of [false, true]) {
      const result = await invocation(injector, 1, final);
      expect(result.error).toBeInstanceOf(PoisonEventError);
      expect(result.written).toBe(0);
    }
  });

  it('leaves writes outside an invocation alone', async () => {
    const injector = new FaultInjector({ crashRate: 1, kinds: ['before-write'] });

    await injector.wrapStorage(storage).put(key(0), '{}');

    expect(await storage.findByPrefix('cld/')).toEqual([key(0)]);
  });
});
