import { describe, expect, it } from 'vitest';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { LocalBus, type StepInvoker } from '../../shared/events/local-bus.js';
import { routingTable } from '../../shared/events/routing.js';
import {
  AGING_EVERY,
  createScheduler,
  type Laned,
  LaneScheduler,
  laneOf,
  type SchedulingPolicy,
  SHARED_LANE,
} from '../../shared/events/scheduler.js';
import { childUrn, keyOf, keyPrefixOf, urnOfKey } from '../../shared/urn.js';

interface Item extends Laned {
  id: string;
}

const item = (lane: string, id: string): Item => ({ lane, id });

/** Pushes `count` items `<lane><n>` into each lane, lanes in the given order (= birth order). */
function fill(
  scheduler: { push(item: Item): void; hold(lane: string): void },
  lanes: Record<string, number>,
) {
  for (const [lane, count] of Object.entries(lanes))
    for (let i = 1; i <= count; i++) {
      scheduler.hold(lane);
      scheduler.push(item(lane, `${lane}${i}`));
    }
}

function drain(scheduler: { take(): Item | undefined }): string[] {
  const order: string[] = [];
  for (let next = scheduler.take(); next; next = scheduler.take()) order.push(next.id);
  return order;
}

describe('laneOf', () => {
  const conversation = childUrn(undefined, 'common.Conversation', 'c');
  const task = childUrn(childUrn(conversation, 'common.Message', 'm'), 'plan.Task', 't');

  it('is the conversation (root URN) of a resource key', () => {
    expect(laneOf(keyOf(task))).toBe(conversation);
    expect(laneOf(keyOf(conversation))).toBe(conversation);
  });

  it.each([
    'not-a-key',
    'cld:common.Conversation.zz.json',
    `${conversation}.txt`,
    '',
  ])('puts the unparseable key "%s" into the shared lane', (key) => {
    expect(laneOf(key)).toBe(SHARED_LANE);
  });
});

describe('schedulers', () => {
  it('fifo serves in push order, lanes ignored', () => {
    const fifo = createScheduler<Item>('fifo');
    fill(fifo, { a: 2, b: 1 });
    fifo.push(item('a', 'a3'));

    expect(drain(fifo)).toEqual(['a1', 'a2', 'b1', 'a3']);
    expect(fifo.size).toBe(0);
  });

  it('round-robin serves one item per ready lane in turn', () => {
    const rr = createScheduler<Item>('round-robin');
    fill(rr, { a: 3, b: 2, c: 1 });

    expect(drain(rr)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('round-robin puts a lane that becomes ready again at the end of the turn', () => {
    const rr = createScheduler<Item>('round-robin');
    fill(rr, { a: 1, b: 2 });

    const first = rr.take();
    rr.push(item('a', 'a2'));

    expect([first?.id, ...drain(rr)]).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('oldest-first works off the oldest lane before the next', () => {
    const oldest = createScheduler<Item>('oldest-first');
    fill(oldest, { a: 2, b: 2, c: 1 });

    expect(drain(oldest)).toEqual(['a1', 'a2', 'b1', 'b2', 'c1']);
  });

  it(`newest-first serves the newest lane, every ${AGING_EVERY}th start the oldest`, () => {
    const newest = createScheduler<Item>('newest-first');
    fill(newest, { old: 3, mid: 3, new: 20 });

    const order = drain(newest);

    expect(order.slice(0, AGING_EVERY)).toEqual([
      ...Array.from({ length: AGING_EVERY - 1 }, (_, i) => `new${i + 1}`),
      'old1',
    ]);
    expect(order[2 * AGING_EVERY - 1]).toBe('old2');
    expect(order.filter((id) => id.startsWith('new'))).toEqual(
      Array.from({ length: 20 }, (_, i) => `new${i + 1}`),
    );
    expect(order).toHaveLength(26);
  });

  it('newest-first keeps a lane’s age while one of its deliveries is still held', () => {
    const newest = new LaneScheduler<Item>('newest-first');
    newest.hold('a');
    newest.push(item('a', 'a1'));
    newest.take(); // a1 runs: lane a is empty but held
    fill(newest, { b: 1 });
    newest.hold('a');
    newest.push(item('a', 'a2')); // a1's follow-up

    expect(drain(newest)).toEqual(['b1', 'a2']);
  });

  it('newest-first treats a lane whose deliveries all ended as a newcomer', () => {
    const newest = new LaneScheduler<Item>('newest-first');
    newest.hold('a');
    newest.push(item('a', 'a1'));
    newest.take();
    newest.release('a'); // a1 ended: lane a is forgotten
    fill(newest, { b: 1 });
    newest.hold('a');
    newest.push(item('a', 'a2')); // a follow-up message later on

    expect(newest.activeLanes).toBe(2);
    expect(drain(newest)).toEqual(['a2', 'b1']);
  });

  it('forgets lanes once drained and released, and ignores unbalanced releases', () => {
    const lanes = new LaneScheduler<Item>('round-robin');
    fill(lanes, { a: 2, b: 1 });
    drain(lanes);
    for (const lane of ['a', 'a', 'b', 'b', 'zzz']) lanes.release(lane);

    expect(lanes.activeLanes).toBe(0);
    expect(lanes.size).toBe(0);
    expect(lanes.take()).toBeUndefined();
  });
});

describe('LocalBus scheduling under a burst', () => {
  const BUCKET = 'local-resources';
  const STEPS = 4;
  const BURST = 30;

  /** Each conversation is a chain of STEPS tasks: the assistant step of task n stores task n+1. */
  async function newcomerPosition(scheduling: SchedulingPolicy): Promise<{ done: number; total: number }> {
    const delivered: string[] = [];
    let bus: LocalBus | undefined;
    const chainStart = (name: string) =>
      childUrn(
        childUrn(childUrn(undefined, 'common.Conversation', name), 'common.Message', 'm'),
        'plan.Task',
        '0',
      );
    const assistant: StepInvoker = async (event) => {
      const key = event.detail.object.key;
      delivered.push(key);
      const urn = urnOfKey(key) as string;
      const depth = urn.split('/').length - 2;
      if (depth < STEPS)
        bus?.publish(s3ObjectCreatedEvent(BUCKET, keyOf(childUrn(urn, 'plan.Task', String(depth))), 10));
    };
    const noop: StepInvoker = async () => {};
    bus = new LocalBus({
      routes: routingTable(BUCKET),
      targets: { plan: noop, assistant, tool: noop, reply: noop },
      concurrency: 1,
      scheduling,
    });
    for (let i = 0; i < BURST; i++) bus.publish(s3ObjectCreatedEvent(BUCKET, keyOf(chainStart(`c${i}`)), 10));
    // The newcomer arrives once the burst is under way (its first deliveries have started).
    await new Promise((resolve) => setImmediate(resolve));
    bus.publish(s3ObjectCreatedEvent(BUCKET, keyOf(chainStart('newcomer')), 10));
    await bus.idle();
    const newcomer = childUrn(undefined, 'common.Conversation', 'newcomer');
    const last = delivered.findLastIndex((key) => key.startsWith(keyPrefixOf(newcomer)));
    return { done: last + 1, total: delivered.length };
  }

  it('answers a newcomer after a handful of deliveries with newest-first', async () => {
    const { done, total } = await newcomerPosition('newest-first');

    expect(total).toBe((BURST + 1) * STEPS);
    // Its own STEPS deliveries, the one running when it arrived, and at most one aging start.
    expect(done).toBeLessThanOrEqual(STEPS + 3);
  });

  it.each([
    'fifo',
    'round-robin',
  ] as const)('makes a newcomer wait for about the whole backlog with %s', async (policy) => {
    const { done, total } = await newcomerPosition(policy);

    expect(total).toBe((BURST + 1) * STEPS);
    expect(done).toBeGreaterThan(BURST * (STEPS - 1));
  });

  it('works off the backlog conversation by conversation with oldest-first, the newcomer last', async () => {
    const { done, total } = await newcomerPosition('oldest-first');

    expect(done).toBe(total);
  });
});
