import { type SweepDeps, type SweepOutcome, sweep } from '../domain/sweep.js';
import { LocalRedrivePublisher } from '../events/redrive.js';
import { FilesystemStorage } from '../storage/filesystem.js';
import { LOCAL_BUCKET, type LocalRuntime } from './local.js';

/**
 * Resume and the sweeper in the embedded default (issue 12): what `serve`, `ask` and
 * `cld resume` run at start, and the sweeper `serve` runs every minute — the same
 * shared/domain/sweep.ts as the sweeper function in AWS, re-emitting on the local bus.
 */

/** The sweep's ports on a local runtime. */
export function localSweepDeps(runtime: LocalRuntime): SweepDeps {
  return {
    resources: runtime.deps.resources,
    projections: runtime.deps.projections,
    open: runtime.openConversations,
    publisher: new LocalRedrivePublisher(runtime.bus, LOCAL_BUCKET),
    limits: runtime.deps.limits,
    logger: runtime.deps.logger,
    now: runtime.deps.now,
  };
}

/** Options of {@link resumeLocal}. */
export interface ResumeOptions {
  /** The data directory (its `.tmp/` and `resources/.tmp/` are cleaned). */
  dataDir: string;
  /** Only these conversations; default: every open one. */
  conversations?: readonly string[];
  /** Conversations at once (default 4). */
  concurrency?: number;
  /** Progress lines; default none. */
  print?: (line: string) => void;
}

/** What {@link resumeLocal} did. */
export interface ResumeReport {
  /** Temporary files of interrupted creates removed. */
  cleaned: number;
  outcomes: SweepOutcome[];
}

/**
 * Resumes a local runtime after a stop or a crash: removes the temporary files of interrupted
 * creates, then repairs and re-drives every open conversation (or those given). Returns once the
 * events are published; `runtime.bus.idle()` tells when they are handled. Call it before the
 * runtime takes new work (the temporary files of running creates would be removed too).
 * @throws what the sweep throws
 */
export async function resumeLocal(runtime: LocalRuntime, options: ResumeOptions): Promise<ResumeReport> {
  const print = options.print ?? (() => undefined);
  const resources = runtime.storage instanceof FilesystemStorage ? await runtime.storage.cleanTemp() : 0;
  const cleaned = resources + (await new FilesystemStorage(options.dataDir).cleanTemp());
  if (cleaned > 0) print(`resume: removed ${cleaned} temporary file(s) of interrupted writes`);
  const outcomes = await sweep(localSweepDeps(runtime), {
    mode: 'resume',
    ...(options.conversations ? { conversations: options.conversations } : {}),
    concurrency: options.concurrency ?? 4,
    onProgress: (outcome, done, total) => print(`resume ${done}/${total}: ${describeOutcome(outcome)}`),
  });
  return { cleaned, outcomes };
}

/** One line for a sweep outcome. */
export function describeOutcome(outcome: SweepOutcome): string {
  const repaired = outcome.repaired ? `, ${outcome.repaired} projection member(s) repaired` : '';
  switch (outcome.action) {
    case 'redriven':
      return `${outcome.conversation} re-driven: ${outcome.events} event(s)${repaired}; waiting for ${outcome.waitingFor.join('; ')}`;
    case 'failed':
      return `${outcome.conversation} failed as stalled after ${outcome.redrives} redrive(s)${repaired}`;
    case 'closed':
      return `${outcome.conversation} answered${repaired}`;
    case 'missing':
      return `${outcome.conversation} not stored (closed)`;
    case 'waiting':
      return `${outcome.conversation} progressing${repaired}`;
  }
}

/**
 * Runs a local runtime's work to the end: waits for the bus to be idle, then — nothing being in
 * flight — sweeps the open conversations (or those given) as stalled, and repeats while a sweep
 * re-drives something. Bounded: each conversation is answered as stalled after
 * `limits.maxRedrives` redrives without progress. What `ask` and `cld resume` wait for.
 * @returns every sweep outcome, in order
 */
export async function settleLocal(
  runtime: LocalRuntime,
  options: { conversations?: readonly string[]; print?: (line: string) => void } = {},
): Promise<SweepOutcome[]> {
  const deps = localSweepDeps(runtime);
  const all: SweepOutcome[] = [];
  for (let pass = 0; pass <= runtime.deps.limits.maxRedrives + 1; pass++) {
    await runtime.bus.idle();
    const outcomes = await sweep(deps, {
      mode: 'sweep',
      stallAfterMs: 0,
      ...(options.conversations ? { conversations: options.conversations } : {}),
    });
    all.push(...outcomes);
    const acted = outcomes.filter((o) => o.action === 'redriven' || o.action === 'failed');
    for (const outcome of acted) options.print?.(`settle: ${describeOutcome(outcome)}`);
    if (acted.length === 0) break;
  }
  await runtime.bus.idle();
  return all;
}

/** A running local sweeper. */
export interface LocalSweeper {
  /** Runs one sweep now (also what the timer runs). */
  sweepNow(): Promise<SweepOutcome[]>;
  /** Stops the timer and waits for a running sweep. */
  stop(): Promise<void>;
}

/** Resolves true when the bus has nothing queued, running or waiting for a retry right now. */
async function busIdle(runtime: LocalRuntime): Promise<boolean> {
  return Promise.race([
    runtime.bus.idle().then(() => true),
    new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
  ]);
}

/**
 * Starts the sweeper of a local runtime: every `intervalMs` (default 5 s), a sweep of the
 * conversations idle for longer than `limits.stallAfterMs` — or of every open one while the bus is
 * idle: in one process, nothing in flight means an unanswered message cannot progress by itself
 * (events lost with an earlier process, a step that returned without writing). Redrives count
 * as in AWS: `limits.maxRedrives` without progress, then the message is answered as stalled.
 * Runs never overlap; a failed run is printed and the next one runs as planned.
 */
export function startLocalSweeper(
  runtime: LocalRuntime,
  options: { intervalMs?: number; print?: (line: string) => void } = {},
): LocalSweeper {
  const print = options.print ?? (() => undefined);
  const intervalMs = options.intervalMs ?? 5_000;
  const deps = localSweepDeps(runtime);
  let running: Promise<SweepOutcome[]> | undefined;
  const sweepNow = (): Promise<SweepOutcome[]> => {
    running ??= busIdle(runtime)
      .then((idle) => sweep(deps, { mode: 'sweep', ...(idle ? { stallAfterMs: 0 } : {}) }))
      .then((outcomes) => {
        for (const outcome of outcomes)
          if (outcome.action === 'redriven' || outcome.action === 'failed')
            print(`sweeper: ${describeOutcome(outcome)}`);
        return outcomes;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => {
    sweepNow().catch((error: unknown) =>
      print(`sweeper failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }, intervalMs);
  timer.unref();
  return {
    sweepNow,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
