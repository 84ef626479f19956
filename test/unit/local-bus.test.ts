import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import {
  type ResourceEvent,
  type S3ObjectCreatedEvent,
  s3ObjectCreatedEvent,
} from '../../shared/events/envelope.js';
import {
  type DeadLetter,
  LocalBus,
  type LocalBusOptions,
  type StepInvoker,
} from '../../shared/events/local-bus.js';
import { routingTable, type StepName } from '../../shared/events/routing.js';
import { childUrn, keyOf } from '../../shared/urn.js';

const BUCKET = 'local-resources';
const ROUTES = routingTable(BUCKET);

const C = childUrn(undefined, 'common.Conversation', 'c');
const M = childUrn(C, 'common.Message', 'user message');
const T = childUrn(M, 'plan.Task', 'root task');
const CALL = childUrn(T, 'tool.Call', 'tooluse-1');
const CHUNK = childUrn(childUrn(undefined, 'doc.Document', 'readme.md'), 'doc.Chunk', '0');

function eventFor(urn: string): S3ObjectCreatedEvent {
  return s3ObjectCreatedEvent(BUCKET, keyOf(urn), 100);
}

/** Tasks under M, each with its own event. */
function taskEvents(count: number): S3ObjectCreatedEvent[] {
  return Array.from({ length: count }, (_, i) => eventFor(childUrn(M, 'plan.Task', `task ${i}`)));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Records the keys each target receives; `assistant` behaves as given. */
function recordingTargets(assistant: StepInvoker = async () => {}): {
  targets: Record<StepName, StepInvoker>;
  received: Record<StepName, string[]>;
} {
  const received: Record<StepName, string[]> = { plan: [], assistant: [], tool: [], reply: [] };
  const record =
    (name: StepName, inner: StepInvoker = async () => {}): StepInvoker =>
    async (event) => {
      received[name].push(event.detail.object.key);
      await inner(event);
    };
  return {
    targets: {
      plan: record('plan'),
      assistant: record('assistant', assistant),
      tool: record('tool'),
      reply: record('reply'),
    },
    received,
  };
}

function bus(options: Partial<LocalBusOptions> & Pick<LocalBusOptions, 'targets'>): LocalBus {
  return new LocalBus({ routes: ROUTES, backoffMs: () => 1, ...options });
}

describe('LocalBus', () => {
  it('routes each event to the targets of the routing table', async () => {
    const { targets, received } = recordingTargets();
    const localBus = bus({ targets });

    localBus.publish(eventFor(M));
    localBus.publish(eventFor(T));
    localBus.publish(eventFor(CALL));
    localBus.publish(eventFor(CHUNK));
    await localBus.idle();

    expect(received).toEqual({
      plan: [keyOf(M)],
      assistant: [keyOf(T)],
      tool: [keyOf(CALL)],
      reply: [keyOf(M)],
    });
  });

  it('invokes targets outside the publisher’s call stack', async () => {
    const { targets, received } = recordingTargets();
    const localBus = bus({ targets });

    localBus.publish(eventFor(T));
    const duringPublish = received.assistant.length;
    await localBus.idle();

    expect(duringPublish).toBe(0);
    expect(received.assistant).toHaveLength(1);
  });

  it('retries a failing target twice, then dead-letters it with the error after 3 attempts', async () => {
    const failing = vi.fn<StepInvoker>(async () => {
      throw new Error('model unavailable');
    });
    const onDeadLetter = vi.fn<(letter: DeadLetter) => void>();
    const { targets } = recordingTargets(failing);
    const localBus = bus({ targets, onDeadLetter });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(failing).toHaveBeenCalledTimes(3);
    expect(localBus.deadLetters).toHaveLength(1);
    expect(localBus.deadLetters[0]).toMatchObject({
      route: 'AssistantOnTask',
      target: 'assistant',
      attempts: 3,
      error: { code: 'ERROR', message: 'model unavailable' },
    });
    expect(localBus.deadLetters[0]?.event.detail.object.key).toBe(keyOf(T));
    expect(onDeadLetter).toHaveBeenCalledWith(localBus.deadLetters[0]);
  });

  it('keeps the stable code of a domain error in the dead letter', async () => {
    const { targets } = recordingTargets(async () => {
      throw new ValidationError('bad task');
    });
    const localBus = bus({ targets });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(localBus.deadLetters[0]?.error).toEqual({ code: 'VALIDATION', message: 'bad task' });
  });

  it('dead-letters a target that throws synchronously instead of crashing', async () => {
    const throwsSynchronously: StepInvoker = () => {
      throw new Error('not async');
    };
    const localBus = bus({ targets: { ...recordingTargets().targets, assistant: throwsSynchronously } });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(localBus.deadLetters).toHaveLength(1);
    expect(localBus.deadLetters[0]).toMatchObject({ attempts: 3, error: { message: 'not async' } });
  });

  it('does not dead-letter a target that fails once and then succeeds', async () => {
    let calls = 0;
    const { targets, received } = recordingTargets(async () => {
      calls++;
      if (calls === 1) throw new Error('throttled');
    });
    const localBus = bus({ targets });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(received.assistant).toEqual([keyOf(T), keyOf(T)]);
    expect(localBus.deadLetters).toEqual([]);
    expect(localBus.stats).toMatchObject({ invocations: 2, failures: 1, retries: 1, deadLetters: 0 });
  });

  it('backs off before each retry as configured', async () => {
    const backoffMs = vi.fn((attempt: number) => attempt);
    const { targets } = recordingTargets(async () => {
      throw new Error('down');
    });
    const localBus = bus({ targets, backoffMs });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(backoffMs.mock.calls).toEqual([[1], [2]]);
  });

  it('resolves idle() only after the retries have run', async () => {
    let calls = 0;
    const { targets } = recordingTargets(async () => {
      calls++;
      if (calls < 3) throw new Error('flaky');
    });
    const localBus = bus({ targets, backoffMs: () => 30 });

    localBus.publish(eventFor(T));
    await localBus.idle();

    expect(calls).toBe(3);
    expect(localBus.stats.retries).toBe(2);
  });

  it('resolves idle() at once when nothing was published', async () => {
    const localBus = bus({ targets: recordingTargets().targets });

    await expect(localBus.idle()).resolves.toBeUndefined();
  });

  it.each([1, 2, 3])('runs at most %i invocations at once', async (concurrency) => {
    let running = 0;
    let maxRunning = 0;
    const { targets, received } = recordingTargets(async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(10);
      running--;
    });
    const localBus = bus({ targets, concurrency });

    for (const event of taskEvents(8)) localBus.publish(event);
    await localBus.idle();

    expect(received.assistant).toHaveLength(8);
    expect(maxRunning).toBe(concurrency);
  });

  it('respects the concurrency bound while retrying', async () => {
    let running = 0;
    let maxRunning = 0;
    const seen = new Set<string>();
    const { targets } = recordingTargets(async (event) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await sleep(5);
      running--;
      const key = event.detail.object.key;
      if (!seen.has(key)) {
        seen.add(key);
        throw new Error('first attempt fails');
      }
    });
    const localBus = bus({ targets, concurrency: 2, backoffMs: () => 0 });

    for (const event of taskEvents(6)) localBus.publish(event);
    await localBus.idle();

    expect(maxRunning).toBe(2);
    expect(localBus.stats).toMatchObject({ invocations: 12, retries: 6, deadLetters: 0 });
  });

  it('delivers each event twice with copies = 2, isolated: one frozen copy no delivery can change', async () => {
    const deliveries: ResourceEvent[] = [];
    const { targets } = recordingTargets(async (event) => {
      deliveries.push(event);
    });
    const localBus = bus({ targets, faults: { copies: 2 } });
    const event = eventFor(T);

    localBus.publish(event);
    await localBus.idle();

    expect(deliveries).toHaveLength(2);
    expect(deliveries[0]).toEqual(event);
    expect(deliveries[1]).toEqual(event);
    expect(deliveries[0]).not.toBe(event); // the publisher's object stays the publisher's
    expect(Object.isFrozen(deliveries[0])).toBe(true);
    expect(() => {
      (deliveries[0] as { detail: { object: { key: string } } }).detail.object.key = 'changed';
    }).toThrow(TypeError);
    expect(deliveries[1]?.detail.object.key).toBe(event.detail.object.key);
    expect(localBus.stats).toMatchObject({ published: 1, routed: 2, invocations: 2 });
  });

  describe('shuffle', () => {
    async function deliveryOrder(seed: number): Promise<string[]> {
      const { targets, received } = recordingTargets();
      const localBus = bus({ targets, concurrency: 1, faults: { shuffle: true, seed } });
      for (const event of taskEvents(10)) localBus.publish(event);
      await localBus.idle();
      return received.assistant;
    }

    const published = taskEvents(10).map((event) => event.detail.object.key);

    it('repeats the same order for the same seed', async () => {
      expect(await deliveryOrder(42)).toEqual(await deliveryOrder(42));
    });

    it('delivers every event once, not in publication order', async () => {
      const order = await deliveryOrder(42);

      expect([...order].sort()).toEqual([...published].sort());
      expect(order).not.toEqual(published);
    });

    it('gives another order for another seed', async () => {
      expect(await deliveryOrder(7)).not.toEqual(await deliveryOrder(42));
    });
  });

  it('delays deliveries with maxDelayMs and still finishes before idle()', async () => {
    const { targets, received } = recordingTargets();
    const localBus = bus({ targets, faults: { maxDelayMs: 20, seed: 3 } });

    for (const event of taskEvents(5)) localBus.publish(event);
    await localBus.idle();

    expect(received.assistant).toHaveLength(5);
  });

  it('counts what it did', async () => {
    let failedOnce = false;
    const { targets } = recordingTargets(async () => {
      if (!failedOnce) {
        failedOnce = true;
        throw new Error('once');
      }
    });
    const onDelivery = vi.fn();
    const localBus = bus({ targets, onDelivery });

    localBus.publish(eventFor(M)); // plan and reply
    localBus.publish(eventFor(T)); // assistant, fails once
    localBus.publish(eventFor(childUrn(T, 'common.Message', 'tool result'))); // assistant
    localBus.publish(eventFor(childUrn(T, 'common.Message', 'output'))); // plan and reply
    localBus.publish(eventFor(CHUNK)); // nobody
    await localBus.idle();

    expect(localBus.stats).toEqual({
      published: 5,
      routed: 6,
      invocations: 7,
      failures: 1,
      retries: 1,
      deadLetters: 0,
      byTarget: { plan: 2, assistant: 2, tool: 0, reply: 2 },
    });
    expect(onDelivery).toHaveBeenCalledTimes(7);
  });

  it('routes by the pattern alone, as EventBridge does: whatever a rule matches is delivered', async () => {
    const { targets, received } = recordingTargets();
    // A rule broader than the step acts on: every key under the conversation.
    const broad = {
      id: 'Broad',
      target: 'tool' as const,
      description: 'every conversation key',
      pattern: { source: ['aws.s3'], detail: { object: { key: [{ prefix: 'cld/common.Conversation.' }] } } },
      shapes: ['Conversation-Message-*Task-Call'],
    };
    const localBus = new LocalBus({ routes: [broad], targets, backoffMs: () => 1 });

    localBus.publish(eventFor(M));
    localBus.publish(eventFor(CALL));
    localBus.publish(eventFor(CHUNK));
    await localBus.idle();

    expect(received.tool).toEqual([keyOf(M), keyOf(CALL)]);
    expect(localBus.stats.byTarget).toEqual({ tool: 2 });
  });
});
