import { toErrorInfo } from '../errors.js';
import type { EventBus } from './bus.js';
import type { ResourceEvent } from './envelope.js';
import { matchesPattern } from './pattern.js';
import type { Route, StepName } from './routing.js';
import {
  createScheduler,
  DEFAULT_SCHEDULING,
  type DeliveryScheduler,
  laneOf,
  type SchedulingPolicy,
} from './scheduler.js';

/** Which delivery an invocation is (Lambda's asynchronous invocation attempt). */
export interface Delivery {
  /** Sequence number of the delivery (a duplicate copy is a delivery of its own). */
  id: number;
  /** Route id (the EventBridge rule). */
  route: string;
  target: StepName;
  /** 1 for the first attempt, then 2, 3, ... */
  attempt: number;
  /** True on the last attempt: a failure now dead-letters the event. */
  final: boolean;
}

/**
 * A step function as the bus invokes it: the Lambda handler's event in, nothing out. The bus
 * always passes the delivery (optional only so that a target can be called directly).
 */
export type StepInvoker = (event: ResourceEvent, delivery?: Delivery) => Promise<void>;

/**
 * Stands for a killed runtime process (fault injection): the invocation ends with no response,
 * as when a Lambda runtime exits mid-invocation ("Runtime exited"). The bus counts it in
 * `faultStats.aborts` and retries the event like any failed asynchronous invocation; whoever throws
 * it must also make sure the "dead" invocation writes nothing more (see shared/storage/faulty.ts).
 */
export class ProcessExitError extends Error {
  constructor(message = 'Runtime exited without providing a reason (injected process abort)') {
    super(message);
    this.name = 'ProcessExitError';
  }
}

/** An event that failed every attempt (Lambda's on-failure destination / DLQ). */
export interface DeadLetter {
  route: string;
  target: StepName;
  event: ResourceEvent;
  attempts: number;
  error: { code: string; message: string };
}

/** Counters of what the bus did. */
export interface BusStats {
  /** Events published by storage. */
  published: number;
  /** Deliveries to a route (after duplication). */
  routed: number;
  invocations: number;
  failures: number;
  retries: number;
  deadLetters: number;
  /** Deliveries per target (every target of the routes, from 0). */
  byTarget: Record<StepName, number>;
}

/** Counters of injected delivery faults. */
export interface FaultStats {
  /** Extra copies made by the `copies` fault (included in `BusStats.routed`). */
  duplicates: number;
  /** Failures that were process aborts ({@link ProcessExitError}). */
  aborts: number;
}

/** Fault injection: what the bus does to deliveries (tests and the fault harness). */
export interface DeliveryFaults {
  /**
   * Copies of each delivery: a number (1 = exactly once), or a range from which each event's
   * count is drawn uniformly (`{ min: 2, max: 3 }`: every event 2–3 times). Default 1.
   */
  copies?: number | { min: number; max: number };
  /** Deliver queued events in random order instead of by the scheduling policy. */
  shuffle?: boolean;
  /** Random delay before each delivery, in milliseconds (uniform in [0, maxDelayMs]). */
  maxDelayMs?: number;
  /** Seed of the pseudo-random generator, so a run can be repeated. */
  seed?: number;
}

/** LocalBus options. */
export interface LocalBusOptions {
  routes: readonly Route[];
  targets: Record<StepName, StepInvoker>;
  /** Invocations running at once. Default 4. */
  concurrency?: number;
  /**
   * Which queued delivery starts next (scheduler.ts): default `newest-first` (a queue per
   * conversation; the conversation that became active last first, every 8th start the oldest).
   * Ignored with `faults.shuffle`, which draws a random queued delivery.
   */
  scheduling?: SchedulingPolicy;
  /** Retries after the first failure, like Lambda's asynchronous invocation. Default 2. */
  retries?: number;
  /** Backoff before retry n (1-based), in milliseconds. Default 50·2^(n-1). */
  backoffMs?: (attempt: number) => number;
  faults?: DeliveryFaults;
  /** Called for each delivery, before the invocation (progress display). */
  onDelivery?: (target: StepName, event: ResourceEvent) => void;
  onDeadLetter?: (letter: DeadLetter) => void;
  /**
   * The on-failure destination's consumer: called once per dead letter, tracked like an
   * invocation (so `idle()` waits for it); a failure of its own is kept in `deadLetterErrors`,
   * never retried.
   */
  deadLetterTarget?: (letter: DeadLetter) => Promise<void>;
}

interface Job {
  route: Route;
  event: ResourceEvent;
  attempt: number;
  /** Delivery sequence number (kept across retries). */
  id: number;
  /** Scheduling lane: the conversation (root URN) of the event's key (scheduler.ts `laneOf`). */
  lane: string;
}

/**
 * In-process EventBridge + Lambda async invocation: routes each published event to every
 * route whose pattern matches (the pattern only, as EventBridge does: deliveries here are the
 * Lambda invocations AWS would make), invokes targets asynchronously with bounded
 * concurrency, retries failures with backoff, keeps dead letters, and tells when it is idle.
 * Queued deliveries start in the order of the scheduling policy (a queue per conversation, see
 * scheduler.ts), so a newcomer does not queue behind every step of a burst of other conversations.
 * Delivery is at least once; with faults it is several times, shuffled and delayed.
 */
export class LocalBus implements EventBus {
  readonly deadLetters: DeadLetter[] = [];
  readonly stats: BusStats;
  readonly faultStats: FaultStats = { duplicates: 0, aborts: 0 };
  private readonly queue: DeliveryScheduler<Job>;
  private running = 0;
  private timers = 0;
  private waiters: Array<() => void> = [];
  private readonly random: () => number;
  /** Errors of the dead-letter consumer (`deadLetterTarget`). */
  readonly deadLetterErrors: { letter: DeadLetter; error: { code: string; message: string } }[] = [];
  private deliveries = 0;
  private readonly options: Required<
    Omit<LocalBusOptions, 'onDelivery' | 'onDeadLetter' | 'faults' | 'deadLetterTarget' | 'scheduling'>
  > &
    Pick<LocalBusOptions, 'onDelivery' | 'onDeadLetter' | 'deadLetterTarget'> & { faults: DeliveryFaults };

  constructor(options: LocalBusOptions) {
    this.options = {
      concurrency: 4,
      retries: 2,
      backoffMs: (attempt) => 50 * 2 ** (attempt - 1),
      faults: {},
      ...options,
    };
    this.random = mulberry32(this.options.faults.seed ?? 1);
    this.queue = createScheduler<Job>(
      this.options.faults.shuffle ? 'shuffle' : (options.scheduling ?? DEFAULT_SCHEDULING),
      this.random,
    );
    this.stats = {
      published: 0,
      routed: 0,
      invocations: 0,
      failures: 0,
      retries: 0,
      deadLetters: 0,
      byTarget: Object.fromEntries(options.routes.map((route) => [route.target, 0])) as Record<
        StepName,
        number
      >,
    };
  }

  publish(event: ResourceEvent): void {
    this.stats.published++;
    // One deeply frozen copy shared by every delivery: no handler can change what another sees
    // (isolation as a copy per delivery gave it), at one copy per event instead of per delivery.
    let shared: ResourceEvent | undefined;
    const frozen = () => {
      shared ??= deepFreeze(structuredClone(event));
      return shared;
    };
    const key = event.detail.object.key;
    // As EventBridge: the rule's pattern alone decides (the handler's route filter drops the rest).
    for (const route of this.options.routes) {
      if (!matchesPattern(route.pattern, event)) continue;
      const copies = this.copies();
      this.faultStats.duplicates += copies - 1;
      const lane = laneOf(key);
      for (let i = 0; i < copies; i++) {
        this.stats.routed++;
        this.stats.byTarget[route.target] = (this.stats.byTarget[route.target] ?? 0) + 1;
        this.queue.hold(lane);
        this.schedule({ route, event: frozen(), attempt: 1, id: ++this.deliveries, lane }, this.delay());
      }
    }
  }

  /** Resolves when no delivery is queued, running or waiting for a retry. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.queue.size === 0 && this.running === 0 && this.timers === 0;
  }

  private copies(): number {
    const copies = this.options.faults.copies ?? 1;
    if (typeof copies === 'number') return Math.max(1, Math.floor(copies));
    const min = Math.max(1, Math.floor(copies.min));
    const max = Math.max(min, Math.floor(copies.max));
    return min + Math.floor(this.random() * (max - min + 1));
  }

  private delay(): number {
    const max = this.options.faults.maxDelayMs ?? 0;
    return max > 0 ? Math.floor(this.random() * max) : 0;
  }

  private schedule(job: Job, delayMs: number): void {
    if (delayMs <= 0) {
      this.queue.push(job);
      this.pump();
      return;
    }
    this.timers++;
    setTimeout(() => {
      this.timers--;
      this.queue.push(job);
      this.pump();
    }, delayMs);
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.queue.size > 0) {
      const job = this.queue.take();
      if (job) this.run(job);
    }
    if (this.isIdle()) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private run(job: Job): void {
    this.running++;
    this.stats.invocations++;
    this.options.onDelivery?.(job.route.target, job.event);
    const target = this.options.targets[job.route.target];
    // setImmediate: invocations never run inside the publisher's call stack (as in AWS).
    // The executor turns a synchronous throw into a rejection, so it is retried like any failure.
    const delivery: Delivery = {
      id: job.id,
      route: job.route.id,
      target: job.route.target,
      attempt: job.attempt,
      final: job.attempt > this.options.retries,
    };
    setImmediate(() => {
      new Promise<void>((resolve) => resolve(target(job.event, delivery)))
        .then(
          () => this.queue.release(job.lane),
          (error: unknown) => this.fail(job, error),
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    });
  }

  private fail(job: Job, error: unknown): void {
    this.stats.failures++;
    if (error instanceof ProcessExitError) this.faultStats.aborts++;
    if (job.attempt <= this.options.retries) {
      this.stats.retries++;
      this.schedule({ ...job, attempt: job.attempt + 1 }, this.options.backoffMs(job.attempt));
      return;
    }
    this.queue.release(job.lane);
    const letter: DeadLetter = {
      route: job.route.id,
      target: job.route.target,
      event: job.event,
      attempts: job.attempt,
      error: toErrorInfo(error),
    };
    this.stats.deadLetters++;
    this.deadLetters.push(letter);
    this.options.onDeadLetter?.(letter);
    const consumer = this.options.deadLetterTarget;
    if (!consumer) return;
    this.running++;
    setImmediate(() => {
      new Promise<void>((resolve) => resolve(consumer(letter)))
        .catch((consumerError: unknown) => {
          this.deadLetterErrors.push({ letter, error: toErrorInfo(consumerError) });
        })
        .finally(() => {
          this.running--;
          this.pump();
        });
    });
  }
}

/**
 * Small seeded PRNG (mulberry32) so fault-injected runs are repeatable: uniform numbers in [0, 1).
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Freezes a plain object and everything reachable from it; returns it. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
