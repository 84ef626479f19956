import { rootOf, urnOfKey } from '../urn.js';

/**
 * The order in which the local bus (local-bus.ts) starts queued deliveries. In AWS every event
 * gets its own Lambda invocation, so one conversation never waits behind another; locally a few
 * invocations share one process, and the order decides who waits. Deliveries are grouped into
 * lanes, one per conversation (the root of the event's URN, `rootOf(urnOfKey(key))`; a key that
 * is not a resource key goes to {@link SHARED_LANE}). Within a lane the order is always FIFO.
 *
 * - `fifo`: one queue in publication order, lanes ignored (the bus before issue 12). Under a burst
 *   every conversation's next step queues behind every other conversation's, so all of them
 *   finish at about the end of the burst.
 * - `round-robin`: one delivery per ready lane in turn (processor sharing). Fair, but a
 *   conversation still gets only 1/(N+1) of the bus while N others are ready, so its latency
 *   grows with the backlog just the same.
 * - `oldest-first`: the lane that became active first goes first; conversations finish one after
 *   another in arrival order, and a newcomer waits for the whole backlog.
 * - `newest-first` (default): the lane that became active last goes first, except every
 *   {@link AGING_EVERY}th start, which goes to the oldest ready lane, so no conversation starves
 *   under sustained load. A conversation that arrives during a burst is served at once, and the
 *   backlog is worked off conversation by conversation instead of all at once (adaptive LIFO, as
 *   in "Fail at Scale", ACM Queue 13(8), 2015). A lane is active while any of its deliveries is
 *   queued, delayed or running; a follow-up message after the lane went quiet is a newcomer again.
 */
export type SchedulingPolicy = 'fifo' | 'round-robin' | 'oldest-first' | 'newest-first';

/** The policies, for option parsing and the burst bench. */
export const SCHEDULING_POLICIES: readonly SchedulingPolicy[] = [
  'fifo',
  'round-robin',
  'oldest-first',
  'newest-first',
];

/** The policy the bus uses when none is given. */
export const DEFAULT_SCHEDULING: SchedulingPolicy = 'newest-first';

/** Under `newest-first`, every this many starts serve the oldest ready lane instead (anti-starvation). */
export const AGING_EVERY = 8;

/** The lane of deliveries whose key is not a resource key (they keep FIFO order among themselves). */
export const SHARED_LANE = '';

/**
 * The lane of an event's object key: the root URN of the resource (its conversation, or its
 * document for corpus resources), or {@link SHARED_LANE} when the key is not a resource key.
 * Never throws.
 */
export function laneOf(key: string): string {
  const urn = urnOfKey(key);
  return urn === undefined ? SHARED_LANE : rootOf(urn);
}

/** A queued item: anything that names its lane. */
export interface Laned {
  lane: string;
}

/**
 * The bus's ready queue. `hold`/`release` bracket a delivery's whole life (from publication to
 * its last attempt, including delays and backoff), `push`/`take` its moments in the ready queue.
 */
export interface DeliveryScheduler<T extends Laned> {
  /** Items ready to start. */
  readonly size: number;
  /** A delivery of `lane` now exists (queued, delayed or running). */
  hold(lane: string): void;
  /** A delivery of `lane` has ended (succeeded or dead-lettered); unbalanced calls are ignored. */
  release(lane: string): void;
  /** Makes an item ready to start. */
  push(item: T): void;
  /** The next item to start, removed from the queue; undefined when none is ready. */
  take(): T | undefined;
}

/** Builds the scheduler of a policy. `random` is used only by {@link ShuffledQueue}. */
export function createScheduler<T extends Laned>(
  policy: SchedulingPolicy | 'shuffle',
  random: () => number = Math.random,
): DeliveryScheduler<T> {
  if (policy === 'shuffle') return new ShuffledQueue<T>(random);
  if (policy === 'fifo') return new FifoQueue<T>();
  return new LaneScheduler<T>(policy);
}

/** One queue in arrival order (lanes ignored). */
export class FifoQueue<T extends Laned> implements DeliveryScheduler<T> {
  private readonly items = new Deque<T>();
  get size(): number {
    return this.items.length;
  }
  hold(): void {}
  release(): void {}
  push(item: T): void {
    this.items.push(item);
  }
  take(): T | undefined {
    return this.items.shift();
  }
}

/**
 * Fault injection (`faults.shuffle`): a uniformly random queued item each time, drawn from the
 * bus's seeded generator exactly as before lanes existed, so a seed repeats the same order.
 */
export class ShuffledQueue<T extends Laned> implements DeliveryScheduler<T> {
  private readonly items: T[] = [];
  constructor(private readonly random: () => number) {}
  get size(): number {
    return this.items.length;
  }
  hold(): void {}
  release(): void {}
  push(item: T): void {
    this.items.push(item);
  }
  take(): T | undefined {
    if (this.items.length === 0) return undefined;
    return this.items.splice(Math.floor(this.random() * this.items.length), 1)[0];
  }
}

interface Lane<T> {
  name: string;
  /** Activation order: larger is newer. */
  birth: number;
  /** Deliveries alive (held and not yet released). */
  held: number;
  items: Deque<T>;
}

/** A queue per lane, served `round-robin`, `oldest-first` or `newest-first` (see {@link SchedulingPolicy}). */
export class LaneScheduler<T extends Laned> implements DeliveryScheduler<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  /** Lanes with ready items: in turn order (round-robin) or ascending birth (by age). */
  private readonly ready: Lane<T>[] = [];
  private births = 0;
  private starts = 0;
  private count = 0;

  constructor(private readonly policy: Exclude<SchedulingPolicy, 'fifo'>) {}

  get size(): number {
    return this.count;
  }

  /** Active lanes (for tests and diagnostics). */
  get activeLanes(): number {
    return this.lanes.size;
  }

  hold(lane: string): void {
    this.lane(lane).held++;
  }

  release(name: string): void {
    const lane = this.lanes.get(name);
    if (!lane || lane.held === 0) return;
    lane.held--;
    if (lane.held === 0 && lane.items.length === 0) this.lanes.delete(name);
  }

  push(item: T): void {
    const lane = this.lane(item.lane);
    lane.items.push(item);
    this.count++;
    if (lane.items.length === 1) this.enqueue(lane);
  }

  take(): T | undefined {
    if (this.ready.length === 0) return undefined;
    let index: number;
    if (this.policy === 'round-robin' || this.policy === 'oldest-first') index = 0;
    else index = ++this.starts % AGING_EVERY === 0 ? 0 : this.ready.length - 1;
    const lane = this.ready[index] as Lane<T>;
    const item = lane.items.shift() as T;
    this.count--;
    if (this.policy === 'round-robin') {
      this.ready.shift();
      if (lane.items.length > 0) this.ready.push(lane);
    } else if (lane.items.length === 0) this.ready.splice(index, 1);
    if (lane.items.length === 0 && lane.held === 0) this.lanes.delete(lane.name);
    return item;
  }

  private lane(name: string): Lane<T> {
    let lane = this.lanes.get(name);
    if (!lane) {
      lane = { name, birth: ++this.births, held: 0, items: new Deque<T>() };
      this.lanes.set(name, lane);
    }
    return lane;
  }

  /** Adds a lane that just got its first ready item. */
  private enqueue(lane: Lane<T>): void {
    if (this.policy === 'round-robin') {
      this.ready.push(lane);
      return;
    }
    // Binary search for the first lane born after this one (births are unique).
    let low = 0;
    let high = this.ready.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.ready[mid] as Lane<T>).birth < lane.birth) low = mid + 1;
      else high = mid;
    }
    this.ready.splice(low, 0, lane);
  }
}

/** A FIFO with O(1) amortised `shift` (an array with a moving head, compacted when half is spent). */
class Deque<T> {
  private items: T[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  push(item: T): void {
    this.items.push(item);
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head] as T;
    this.head++;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
