import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countTokens } from '../../shared/context/tokens.js';
import { startConversation } from '../../shared/domain/conversation.js';
import type { ChatModel, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { keyPrefixOf } from '../../shared/urn.js';
import { ScriptedModel } from '../faults/scripted-model.js';
import { CountingStorage, MemoryStorage } from './memory-storage.js';
import { SCALE_LIMITS, SHAPES } from './scale-limits.js';

/**
 * `npm run bench:scale` (issue 16): plans of 10, 100, 1,000 and 10,000 tasks on the embedded
 * default with the scripted model of test/faults, each size in a fresh process, on the
 * filesystem default and on an in-memory storage (test/bench/memory-storage.ts). Prints a
 * markdown table per task: CPU ms (the process's user + system time from the user's message to
 * an idle bus, minus the scripted model's own time), wall ms, resources and events, storage
 * reads and listings; and peak RSS and the load average per run. One-off costs of a process
 * (module loading, the runtime's composition, the tokenizer's ranks, lazily built parsers and
 * indexes, and most of the JIT) come before the measured part: an unmeasured conversation of 100
 * tasks (`--warmup`) on a runtime of its own, whose task texts differ from the measured ones
 * (another title prefix), so no task's text counted or parsed in it is met again. Small sizes are then
 * measured several times in the same process (10 and 100 tasks: 10 conversations, 1,000 tasks: 3,
 * each on a runtime and storage of its own, with titles of its own) and the median is reported with the
 * range: V8's background threads (optimizing compiler, GC helpers), whose CPU the process's count
 * includes, add 0.2–2 ms per task to one 100-task conversation depending on when they happen to
 * run, while the main thread's CPU per task is the same at 100 as at 1,000 tasks (measured per
 * thread from /proc/self/task/N/schedstat). After each measured conversation the whole of it is
 * read back through `ResourceIndex.list` (every key at once: the bounded fan-out of `getMany`).
 * Exit code 1 when a run fails (no answer, an answer with an error, or a listing that misses
 * resources) or when, on one storage, the highest CPU per task at 100 tasks or more is more than
 * 25 % above the lowest ("flat from 100 to 10,000 tasks"); 2 on bad arguments.
 *
 * Options: `--sizes 10,100,1000,10000` (default), `--storage filesystem,memory` (default both),
 * `--warmup 100` (tasks of the warm-up conversation: 0, 10, 100 or 1000), `--no-warmup` (the
 * same as `--warmup 0`: one-off costs count, which weighs on small plans), `--repeat N`
 * (measured conversations per size, 1–10; default as above; of an even count the lower middle
 * one is reported),
 * `--data-root DIR` (where a child run writes; the parent passes a fresh temporary folder),
 * `--child --profile FILE` (one size in this process, one measured conversation, its V8 CPU
 * profile written to FILE as a `.cpuprofile`; the profiler's own cost is in that run's figures). All
 * runs' data is removed only after the last run: deleting thousands of files right before a run
 * makes its creates cost more on a filesystem that scans recently freed inodes (ext4 without a
 * journal, as on the benchmark machine: about 0.5 ms more per create after a 1,000-task run was deleted).
 */

/** What one run measured (per run; the table divides by tasks). */
export interface ScaleResult {
  tasks: number;
  storage: 'filesystem' | 'memory';
  ok: boolean;
  problem?: string;
  cpuMs: number;
  modelMs: number;
  wallMs: number;
  resources: number;
  events: number;
  reads: number;
  listings: number;
  /** Peak RSS when the conversation was done (before the read-back listing). */
  runPeakRssMb: number;
  /** Peak RSS at the end, after the read-back listing of the whole conversation. */
  peakRssMb: number;
  loadavg: string;
  /** Measured conversations of this size in the run's process (the figures are the median one's). */
  repeats: number;
  /** Lowest and highest CPU ms per task (model excluded) over the repetitions. */
  cpuRangeMsPerTask: [number, number];
}

/** A model wrapper that adds up the time spent inside the scripted model (its own cost). */
class TimedModel implements ChatModel {
  readonly name: string;
  ms = 0;
  constructor(private readonly inner: ChatModel) {
    this.name = inner.name;
  }
  converse(request: ConverseRequest): Promise<ConverseResponse> {
    // The scripted model does all its work synchronously before its promise settles: the process's
    // CPU time over that section is its cost (robust to load, unlike wall time).
    const cpu = process.cpuUsage();
    const result = this.inner.converse(request);
    const spent = process.cpuUsage(cpu);
    this.ms += (spent.user + spent.system) / 1000;
    return result;
  }
}

/** Storage of a run: the filesystem default under `dataDir`, or the scratch in-memory one. */
function storageOf(kind: 'filesystem' | 'memory', dataDir: string): CountingStorage {
  return new CountingStorage(
    kind === 'memory' ? new MemoryStorage() : new FilesystemStorage(join(dataDir, 'resources')),
  );
}

/**
 * A conversation of `tasks` tasks on a runtime of its own, not measured: it warms the process up
 * (JIT compilation, schemas' compiled parsers, the tokenizer, the search index), one-off costs
 * that would otherwise be spread over the tasks of the measured run: {@link measure} with tasks
 * titled `W…` where the measured runs' are `S…`, `T…`, …, so the tasks' texts (and the memoised
 * token counts of them) are not the measured run's; its figures are dropped.
 */
async function warmUp(tasks: number, kind: 'filesystem' | 'memory', dataRoot: string): Promise<void> {
  const run = await measure(tasks, kind, dataRoot, 'W');
  if (!run.ok) throw new Error(`the warm-up conversation failed: ${run.problem}`);
}

/** A CPU profiler (V8's, through `node:inspector`) started now; `stop` gives the `.cpuprofile` JSON. */
async function startProfiler(): Promise<{ stop(): Promise<object> }> {
  const session = new Session();
  session.connect();
  const post = <T>(method: string): Promise<T> =>
    new Promise((resolve, reject) =>
      session.post(method, (error, result) => (error ? reject(error) : resolve(result as T))),
    );
  await post('Profiler.enable');
  await post('Profiler.start');
  return {
    async stop() {
      const { profile } = await post<{ profile: object }>('Profiler.stop');
      session.disconnect();
      return profile;
    },
  };
}

/**
 * Measured conversations per size by default: enough for about 3,000 tasks in all, at most 10
 * (10 and 100 tasks: 10; 1,000: 3; 10,000: 1). A 100-task conversation is short enough that when
 * V8's background threads (the optimizing compiler, GC helpers) happen to run counts for ±30 %
 * of its CPU, and one 1,000-task run varies by ±15 % on this shared machine; the median is stable.
 */
function repeatsFor(tasks: number): number {
  return Math.min(10, Math.ceil(3_000 / tasks));
}

/** Tasks a warm-up conversation may have (0: none). */
const WARMUP_SIZES = ['0', '10', '100', '1000'];

/** Title prefixes of the repetitions of a measured conversation (the warm-up's is `W`). */
const PREFIXES = 'STUVXYZABC';

/**
 * One size on one storage in this process, its data left in `dataRoot` (the parent removes every
 * run's data once all runs are done, see {@link main}): the warm-up, then `repeats` measured
 * conversations of `tasks` tasks, each on a runtime and storage of its own with task titles of
 * its own. The result is the repetition with the median CPU per task, with the range of all of
 * them; a failed repetition is the result.
 */
async function runOne(
  tasks: number,
  kind: 'filesystem' | 'memory',
  warmupTasks: number,
  repeats: number,
  dataRoot: string,
  profileTo?: string,
): Promise<ScaleResult> {
  if (warmupTasks > 0) await warmUp(warmupTasks, kind, dataRoot);
  const runs: ScaleResult[] = [];
  for (let i = 0; i < repeats; i++) {
    const run = await measure(tasks, kind, dataRoot, PREFIXES[i] as string, i === 0 ? profileTo : undefined);
    if (!run.ok) return run;
    runs.push(run);
  }
  const net = (r: ScaleResult) => (r.cpuMs - r.modelMs) / r.tasks;
  runs.sort((a, b) => net(a) - net(b));
  // The median of an odd count; the lower of the two middle runs of an even one.
  const median = runs[Math.floor((runs.length - 1) / 2)] as ScaleResult;
  return {
    ...median,
    repeats,
    cpuRangeMsPerTask: [net(runs[0] as ScaleResult), net(runs[runs.length - 1] as ScaleResult)],
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  };
}

/** One measured conversation of `tasks` tasks titled `prefix…`, on a runtime of its own. */
async function measure(
  tasks: number,
  kind: 'filesystem' | 'memory',
  dataRoot: string,
  prefix: string,
  profileTo?: string,
): Promise<ScaleResult> {
  const shape = SHAPES[tasks];
  if (!shape) throw new Error(`no shape for ${tasks} tasks`);
  const dataDir = await mkdtemp(join(dataRoot, 'run-'));
  const storage = storageOf(kind, dataDir);
  const model = new TimedModel(new ScriptedModel(shape, prefix));
  const runtime = await createLocalRuntime({ dataDir, model, storage, limits: SCALE_LIMITS });
  // The tokenizer's ranks are loaded once per process (~0.3 s): a one-off, not a per-task cost.
  countTokens('Load the tokenizer before the measured part.');
  const published0 = runtime.bus.stats.published;
  const reads0 = storage.reads;
  const listings0 = storage.listings;
  const profiler = profileTo ? await startProfiler() : undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const started = await startConversation(runtime.deps.resources, {
    user: 'bench',
    channel: { kind: 'cli' },
    content: `Run the synthetic plan ${shape.join('x')}.`,
    conversationName: `scale-${tasks}-${prefix}`,
  });
  await runtime.bus.idle();
  const wallMs = performance.now() - t0;
  const runPeakRssMb = process.resourceUsage().maxRSS / 1024;
  const cpu = process.cpuUsage(cpu0);
  if (profiler && profileTo) await writeFile(profileTo, JSON.stringify(await profiler.stop()));
  const reads = storage.reads - reads0;
  const listings = storage.listings - listings0;
  const events = runtime.bus.stats.published - published0;
  const keys = await storage.findByPrefix(keyPrefixOf(started.conversation));
  let problem: string | undefined;
  const answer = await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer);
  if (!answer) problem = 'no answer';
  else if (answer.error) problem = `answer failed: ${answer.error.message.slice(0, 200)}`;
  // The whole conversation read back through the index (a getMany of every key: bounded fan-out).
  const listed = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
  if (!problem && listed.length !== keys.length)
    problem = `listing read ${listed.length} of ${keys.length} resources`;
  const result: ScaleResult = {
    tasks,
    storage: kind,
    repeats: 1,
    cpuRangeMsPerTask: [
      (cpu.user + cpu.system) / 1000 / tasks - model.ms / tasks,
      (cpu.user + cpu.system) / 1000 / tasks - model.ms / tasks,
    ],
    ok: problem === undefined,
    ...(problem ? { problem } : {}),
    cpuMs: (cpu.user + cpu.system) / 1000,
    modelMs: model.ms,
    wallMs,
    resources: keys.length + 1,
    events,
    reads,
    listings,
    runPeakRssMb,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    loadavg: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  };
  return result;
}

/** One markdown row of the table: per-task figures of `r`, CPU as median (range, runs) when repeated. */
function row(r: ScaleResult): string {
  const per = (n: number) => (n / r.tasks).toFixed(n / r.tasks >= 100 ? 0 : 2);
  const [low, high] = r.cpuRangeMsPerTask;
  const spread = r.repeats > 1 ? ` (${low.toFixed(2)}–${high.toFixed(2)}, median of ${r.repeats})` : '';
  return `| ${r.tasks.toLocaleString('en-US')} | ${r.storage} | ${r.ok ? `${per(r.cpuMs - r.modelMs)}${spread}` : `FAILED: ${r.problem}`} | ${per(r.wallMs)} | ${per(r.modelMs)} | ${per(r.resources)} | ${per(r.events)} | ${per(r.reads)} | ${per(r.listings)} | ${r.runPeakRssMb.toFixed(0)} / ${r.peakRssMb.toFixed(0)} | ${r.loadavg} |`;
}

/** Parses the command line, then runs one size in this process (`--child`) or every size in a child process each; the exit code. */
async function main(): Promise<number> {
  let sizes: number[];
  let storages: ('filesystem' | 'memory')[];
  let child: boolean;
  let warmupTasks: number;
  let repeat: number | undefined;
  let dataRoot: string | undefined;
  let profileTo: string | undefined;
  try {
    const { values } = parseArgs({
      options: {
        sizes: { type: 'string', default: '10,100,1000,10000' },
        storage: { type: 'string', default: 'filesystem,memory' },
        child: { type: 'boolean', default: false },
        warmup: { type: 'string', default: '100' },
        'no-warmup': { type: 'boolean', default: false },
        repeat: { type: 'string' },
        'data-root': { type: 'string' },
        profile: { type: 'string' },
      },
    });
    sizes = values.sizes.split(',').map(Number);
    for (const size of sizes)
      if (!SHAPES[size]) throw new Error(`--sizes: one of ${Object.keys(SHAPES).join(', ')}`);
    storages = values.storage.split(',') as typeof storages;
    for (const s of storages)
      if (s !== 'filesystem' && s !== 'memory') throw new Error('--storage: filesystem, memory');
    child = values.child;
    if (values['no-warmup'] && process.argv.some((a) => a === '--warmup' || a.startsWith('--warmup=')))
      throw new Error('--no-warmup and --warmup: give one of them');
    warmupTasks = values['no-warmup'] ? 0 : Number(values.warmup);
    if (!WARMUP_SIZES.includes(values['no-warmup'] ? '0' : values.warmup))
      throw new Error(`--warmup: one of ${WARMUP_SIZES.join(', ')}`);
    if (values.repeat !== undefined) {
      repeat = Number(values.repeat);
      if (!Number.isInteger(repeat) || repeat < 1 || repeat > PREFIXES.length)
        throw new Error(`--repeat: a whole number from 1 to ${PREFIXES.length}`);
    }
    dataRoot = values['data-root'];
    profileTo = values.profile;
    if (profileTo !== undefined && !child)
      throw new Error('--profile: only with --child (one run in this process)');
    if (profileTo !== undefined && repeat !== undefined && repeat !== 1)
      throw new Error('--profile: one measured conversation (--repeat 1, the default with --profile)');
    // A profiled conversation is slowed by the profiler: measured once, alone.
    if (profileTo !== undefined) repeat = 1;
  } catch (error) {
    console.error(`bench:scale: ${(error as Error).message}`);
    return 2;
  }
  if (child) {
    const root = dataRoot ?? (await mkdtemp(join(tmpdir(), 'cld-scale-')));
    const tasks = sizes[0] as number;
    const result = await runOne(
      tasks,
      storages[0] as 'filesystem' | 'memory',
      warmupTasks,
      repeat ?? repeatsFor(tasks),
      root,
      profileTo,
    );
    console.log(JSON.stringify(result));
    if (dataRoot === undefined) await rm(root, { recursive: true, force: true });
    return 0;
  }
  // Every run's data stays until all runs are done: on a filesystem whose inode allocator skips
  // recently freed inodes (ext4 without a journal scans past each one freed in the last minutes),
  // deleting a run's files would slow the creates of the next run (see the report of issue 16).
  const root = await mkdtemp(join(tmpdir(), 'cld-scale-'));
  try {
    return await runAll(sizes, storages, warmupTasks, repeat, root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs each size on each storage in a child process of its own, data under `root`; prints the table. */
async function runAll(
  sizes: readonly number[],
  storages: readonly ('filesystem' | 'memory')[],
  warmupTasks: number,
  repeat: number | undefined,
  root: string,
): Promise<number> {
  const results: ScaleResult[] = [];
  const failures: string[] = [];
  console.log(
    '| tasks | storage | CPU ms/task | wall ms/task | model ms/task (excluded) | resources/task | events/task | reads/task | listings/task | peak RSS MB (run / after read-back) | load average |\n|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const storage of storages) {
    for (const tasks of sizes) {
      const run = spawnSync(
        process.execPath,
        [
          ...process.execArgv,
          fileURLToPath(import.meta.url),
          '--child',
          '--sizes',
          `${tasks}`,
          '--storage',
          storage,
          '--warmup',
          `${warmupTasks}`,
          ...(repeat === undefined ? [] : ['--repeat', `${repeat}`]),
          '--data-root',
          root,
        ],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const line = run.stdout.trim().split('\n').pop() ?? '';
      let result: ScaleResult;
      try {
        result = JSON.parse(line) as ScaleResult;
      } catch {
        failures.push(`${tasks} tasks, ${storage}: the run exited ${run.status} without a result`);
        continue;
      }
      results.push(result);
      console.log(row(result));
      if (!result.ok) failures.push(`${tasks} tasks, ${storage}: ${result.problem}`);
    }
  }
  for (const storage of storages) {
    // Flat from 100 to 10,000 tasks (issue 16): the highest CPU per task of those sizes is at most
    // 25 % above the lowest.
    const flat = results.filter((r) => r.ok && r.storage === storage && r.tasks >= 100);
    if (flat.length < 2) continue;
    const net = (r: ScaleResult) => (r.cpuMs - r.modelMs) / r.tasks;
    const low = flat.reduce((a, b) => (net(b) < net(a) ? b : a));
    const high = flat.reduce((a, b) => (net(b) > net(a) ? b : a));
    const rise = net(high) / net(low) - 1;
    console.log(
      `\n${storage}: CPU per task ${flat.map((r) => `${net(r).toFixed(2)} ms at ${r.tasks.toLocaleString('en-US')}`).join(', ')}: highest ${(rise * 100).toFixed(0)} % above lowest`,
    );
    if (rise > 0.25)
      failures.push(
        `${storage}: CPU per task at ${high.tasks.toLocaleString('en-US')} tasks is ${(rise * 100).toFixed(0)} % above that at ${low.tasks.toLocaleString('en-US')} (> 25 %)`,
      );
  }
  for (const failure of failures) console.error(`FAILED: ${failure}`);
  return failures.length ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
