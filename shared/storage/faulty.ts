import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Delivery } from '../events/local-bus.js';
import { ProcessExitError } from '../events/local-bus.js';
import type { ApplyResult, ProjectionKey, ProjectionStore, ProjectionValues } from '../projections/port.js';
import type { PutResult, StorageInterface } from './port.js';

/**
 * Fault injection around the local runtime (issue 5, "a handler crashing (thrown error /
 * process-style abort) before its write, after its write but before returning, and in the
 * middle of a multi-resource write, at a configurable rate"; "a poison event that always fails").
 *
 * Every invocation the bus makes runs inside {@link FaultInjector.run}, which gives it a context
 * (AsyncLocalStorage) and decides whether this attempt crashes and where, from a hash of the
 * seed, the step, the event's URN and the attempt number ({@link chance}): the same seed crashes
 * the same attempts in every run, whatever order they run in (copies of one event share their
 * fate). The storage and projection-store wrappers count the invocation's writes (resource
 * creates and projection applies) and throw at the chosen one:
 * - `before-write`: at the first write, before it happens;
 * - `mid-write`: at the 2nd or 3rd write, before it happens (earlier writes stand);
 * - `after-write`: after the handler has returned (every write done), before the invocation
 *   reports success.
 * A write crash planned for an invocation that writes less does not fire (and is not counted).
 * A crash is a thrown `Error`, or (share `abortShare`) a {@link ProcessExitError}: a killed
 * process, after which the invocation's context is dead and every further write it attempts is
 * refused, so nothing it still does — a `catch`, a sibling promise — takes effect.
 *
 * Crashes are transient by construction: the last attempt of a delivery never crashes (an event
 * that fails every attempt is what the poison fault tests), so a run with crashes must end as a
 * clean run does. Invocations outside {@link FaultInjector.run} (setup, the dead-letter
 * consumer) are never faulted.
 */

/** Where a crash happens. */
export type CrashKind = 'before-write' | 'mid-write' | 'after-write';

/** All crash kinds. */
export const CRASH_KINDS: readonly CrashKind[] = ['before-write', 'mid-write', 'after-write'];

/** Options of the {@link FaultInjector}. */
export interface FaultOptions {
  /** Probability that an attempt (other than a delivery's last) crashes, in [0, 1]. Default 0. */
  crashRate?: number;
  /** Kinds to draw from, uniformly. Default: all three. */
  kinds?: readonly CrashKind[];
  /** Share of crashes that are process aborts rather than thrown errors, in [0, 1]. Default 0.5. */
  abortShare?: number;
  /** Events whose every attempt fails (poison): `(target, urn) → true`. */
  poison?: (target: string, urn: string) => boolean;
  /** Seed of the decisions. Default 1. */
  seed?: number;
}

/** Counters of what was injected. */
export interface InjectionStats {
  /** Attempts that ran inside the injector. */
  invocations: number;
  /** Crashes that fired, by kind. */
  crashes: Record<CrashKind, number>;
  /** Of those, process aborts. */
  aborts: number;
  /** Writes refused because their invocation had been aborted. */
  refusedAfterAbort: number;
  /** Poisoned attempts. */
  poisoned: number;
  /** Resource creates attempted by invocations (created or found existing). */
  resourceWrites: number;
  /** Projection applies attempted by invocations. */
  projectionWrites: number;
}

/** What the current invocation is and what is planned for it. */
export interface InvocationContext {
  delivery: Delivery;
  target: string;
  urn: string;
  /** Writes done so far. */
  writes: number;
  /** Planned crash: kind, style and (for write crashes) the write number it happens at. */
  crash?: { kind: CrashKind; abort: boolean; at: number };
  /** Set once the invocation was aborted: it may write nothing more. */
  dead: boolean;
}

/** Thrown by an injected crash that is not a process abort. */
export class InjectedCrashError extends Error {
  constructor(kind: CrashKind) {
    super(`injected crash (${kind})`);
    this.name = 'InjectedCrashError';
  }
}

/** Thrown by every attempt of a poison event. */
export class PoisonEventError extends Error {
  constructor(urn: string) {
    super(`poison event: the handler always fails on ${urn} (injected)`);
    this.name = 'PoisonEventError';
  }
}

const contexts = new AsyncLocalStorage<InvocationContext>();

/** The invocation the caller runs in, when inside {@link FaultInjector.run}. */
export function currentInvocation(): InvocationContext | undefined {
  return contexts.getStore();
}

/** Decides and injects crashes and poison; wraps storage and projections (see the file header). */
export class FaultInjector {
  readonly stats: InjectionStats = {
    invocations: 0,
    crashes: { 'before-write': 0, 'mid-write': 0, 'after-write': 0 },
    aborts: 0,
    refusedAfterAbort: 0,
    poisoned: 0,
    resourceWrites: 0,
    projectionWrites: 0,
  };
  private readonly seed: number;
  private readonly kinds: readonly CrashKind[];

  constructor(private readonly options: FaultOptions = {}) {
    this.seed = options.seed ?? 1;
    this.kinds = options.kinds?.length ? options.kinds : CRASH_KINDS;
  }

  /**
   * Runs one attempt of a delivery with its fault plan.
   * @throws PoisonEventError, InjectedCrashError, ProcessExitError as planned; what `invoke` throws
   */
  async run(
    delivery: Delivery,
    event: { target: string; urn: string },
    invoke: () => Promise<void>,
  ): Promise<void> {
    this.stats.invocations++;
    const context: InvocationContext = { delivery, ...event, writes: 0, dead: false };
    if (this.options.poison?.(event.target, event.urn)) {
      this.stats.poisoned++;
      throw new PoisonEventError(event.urn);
    }
    const rate = this.options.crashRate ?? 0;
    const draw = (what: string) => chance(this.seed, what, event.target, event.urn, delivery.attempt);
    if (!delivery.final && rate > 0 && draw('crash') < rate) {
      const kind = this.kinds[Math.floor(draw('kind') * this.kinds.length)] as CrashKind;
      const abort = draw('abort') < (this.options.abortShare ?? 0.5);
      const at = kind === 'before-write' ? 1 : kind === 'mid-write' ? 2 + Math.floor(draw('at') * 2) : 0;
      context.crash = { kind, abort, at };
    }
    await contexts.run(context, invoke);
    if (context.crash?.kind === 'after-write') this.crash(context);
  }

  /** Runs `fn` outside any invocation context (never faulted): the dead-letter consumer, setup. */
  outside<T>(fn: () => Promise<T>): Promise<T> {
    return contexts.exit(fn);
  }

  /** Storage whose creates count as writes of the current invocation (and may crash). */
  wrapStorage(inner: StorageInterface): StorageInterface {
    return {
      get: (key) => inner.get(key),
      getMany: (keys) => inner.getMany(keys),
      put: async (key, data): Promise<PutResult> => {
        if (this.beforeWrite()) this.stats.resourceWrites++;
        return inner.put(key, data);
      },
      delete: async (key) => {
        this.beforeWrite();
        return inner.delete(key);
      },
      findByPrefix: (prefix, options) => inner.findByPrefix(prefix, options),
      findByExtension: (extension) => inner.findByExtension(extension),
    };
  }

  /** A projection store whose applies count as writes of the current invocation (and may crash). */
  wrapProjections(inner: ProjectionStore): ProjectionStore {
    return {
      applyOnce: async (key, member, increments, options): Promise<ApplyResult> => {
        if (this.beforeWrite()) this.stats.projectionWrites++;
        return inner.applyOnce(key, member, increments, options);
      },
      get: (key: ProjectionKey): Promise<ProjectionValues | undefined> => inner.get(key),
      list: (conversation) => inner.list(conversation),
      deleteConversation: async (conversation) => {
        this.beforeWrite();
        return inner.deleteConversation(conversation);
      },
    };
  }

  /** Counts a write of the current invocation and crashes when planned; true inside an invocation. */
  private beforeWrite(): boolean {
    const context = contexts.getStore();
    if (!context) return false;
    if (context.dead) {
      this.stats.refusedAfterAbort++;
      throw new ProcessExitError('write after the process was killed (refused)');
    }
    context.writes++;
    if (context.crash && context.crash.at === context.writes) this.crash(context);
    return true;
  }

  private crash(context: InvocationContext): never {
    const crash = context.crash as NonNullable<InvocationContext['crash']>;
    context.crash = undefined; // fires once
    this.stats.crashes[crash.kind]++;
    if (crash.abort) {
      this.stats.aborts++;
      context.dead = true;
      throw new ProcessExitError(`Runtime exited (injected process abort, ${crash.kind})`);
    }
    throw new InjectedCrashError(crash.kind);
  }
}

/**
 * A number in [0, 1) that depends only on the seed and the parts (SHA-256): fault decisions keyed
 * by what an attempt is (step, URN, attempt number), not by the order attempts happen to run in,
 * so a seeded run injects the same faults into the same attempts every time.
 */
export function chance(seed: number, ...parts: readonly (string | number)[]): number {
  const digest = createHash('sha256')
    .update([seed, ...parts].join('\u0000'))
    .digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}
