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

/** A running local sweeper. */
export interface LocalSweeper {
  /** Runs one sweep now (also what the timer runs). */
  sweepNow(): Promise<SweepOutcome[]>;
  /** Stops the timer and waits for a running sweep. */
  stop(): Promise<void>;
}

/**
 * Starts the sweeper of a local runtime: every `intervalMs` (default: half the stall time, at most
 * a minute), a sweep of the conversations idle for longer than `limits.stallAfterMs`. Runs never
 * overlap; a failed run is printed and the next one runs as planned.
 */
export function startLocalSweeper(
  runtime: LocalRuntime,
  options: { intervalMs?: number; print?: (line: string) => void } = {},
): LocalSweeper {
  const print = options.print ?? (() => undefined);
  const intervalMs =
    options.intervalMs ?? Math.min(60_000, Math.max(1_000, Math.floor(runtime.deps.limits.stallAfterMs / 2)));
  const deps = localSweepDeps(runtime);
  let running: Promise<SweepOutcome[]> | undefined;
  const sweepNow = (): Promise<SweepOutcome[]> => {
    running ??= sweep(deps, { mode: 'sweep' })
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
