import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { countTokens } from '../../shared/context/tokens.js';
import type { ChatModel, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/runtime/compose.js';
import { startConversation } from '../../shared/runtime/conversation.js';
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
 * (module loading, the runtime's composition, the tokenizer's ranks, and the JIT and lazily built
 * parsers and indexes, warmed by an unmeasured 10-task conversation on a runtime of its own) come
 * before the measured part. After the measured part each run
 * reads the whole conversation back through `ResourceIndex.list` (every key at once: the bounded
 * fan-out of `getMany`). Exit code 1 when a run fails (no answer, an answer with an error, or a
 * listing that misses resources) or when the CPU per task rises by more than 25 % from 1,000 to
 * 10,000 tasks; 2 on bad arguments.
 *
 * Options: `--sizes 10,100,1000,10000` (default), `--storage filesystem,memory` (default both),
 * `--no-warmup` (no warm-up conversation: one-off costs count, which weighs on small plans),
 * `--data-root DIR` (where a child run writes; the parent passes a fresh temporary folder). All
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
 * A 10-task conversation on a runtime of its own, not measured: it warms the process up (JIT
 * compilation, schemas' compiled parsers, the tokenizer, the search index), one-off costs that
 * would otherwise be spread over the tasks of the measured run.
 */
async function warmUp(kind: 'filesystem' | 'memory', dataRoot: string): Promise<void> {
  const dataDir = await mkdtemp(join(dataRoot, 'warm-'));
  const runtime = await createLocalRuntime({
    dataDir,
    model: new ScriptedModel(SHAPES[10] as readonly number[]),
    storage: storageOf(kind, dataDir),
    limits: SCALE_LIMITS,
  });
  await startConversation(runtime.deps.resources, {
    user: 'bench',
    channel: { kind: 'cli' },
    content: 'Warm up.',
    conversationName: 'warm-up',
  });
  await runtime.bus.idle();
}

/**
 * One measured run in `dataRoot`, which it leaves in place: the parent removes every run's data
 * once all runs are done (see {@link main}).
 */
async function runOne(
  tasks: number,
  kind: 'filesystem' | 'memory',
  warm: boolean,
  dataRoot: string,
): Promise<ScaleResult> {
  const shape = SHAPES[tasks];
  if (!shape) throw new Error(`no shape for ${tasks} tasks`);
  if (warm) await warmUp(kind, dataRoot);
  const dataDir = await mkdtemp(join(dataRoot, 'run-'));
  const storage = storageOf(kind, dataDir);
  const model = new TimedModel(new ScriptedModel(shape));
  const runtime = await createLocalRuntime({ dataDir, model, storage, limits: SCALE_LIMITS });
  // The tokenizer's ranks are loaded once per process (~0.3 s): a one-off, not a per-task cost.
  countTokens('Load the tokenizer before the measured part.');
  const published0 = runtime.bus.stats.published;
  const reads0 = storage.reads;
  const listings0 = storage.listings;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const started = await startConversation(runtime.deps.resources, {
    user: 'bench',
    channel: { kind: 'cli' },
    content: `Run the synthetic plan ${shape.join('x')}.`,
    conversationName: `scale-${tasks}`,
  });
  await runtime.bus.idle();
  const wallMs = performance.now() - t0;
  const runPeakRssMb = process.resourceUsage().maxRSS / 1024;
  const cpu = process.cpuUsage(cpu0);
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

function row(r: ScaleResult): string {
  const per = (n: number) => (n / r.tasks).toFixed(n / r.tasks >= 100 ? 0 : 2);
  return `| ${r.tasks.toLocaleString('en-US')} | ${r.storage} | ${r.ok ? per(r.cpuMs - r.modelMs) : `FAILED: ${r.problem}`} | ${per(r.wallMs)} | ${per(r.modelMs)} | ${per(r.resources)} | ${per(r.events)} | ${per(r.reads)} | ${per(r.listings)} | ${r.runPeakRssMb.toFixed(0)} / ${r.peakRssMb.toFixed(0)} | ${r.loadavg} |`;
}

async function main(): Promise<number> {
  let sizes: number[];
  let storages: ('filesystem' | 'memory')[];
  let child: boolean;
  let warm: boolean;
  let dataRoot: string | undefined;
  try {
    const { values } = parseArgs({
      options: {
        sizes: { type: 'string', default: '10,100,1000,10000' },
        storage: { type: 'string', default: 'filesystem,memory' },
        child: { type: 'boolean', default: false },
        'no-warmup': { type: 'boolean', default: false },
        'data-root': { type: 'string' },
      },
    });
    sizes = values.sizes.split(',').map(Number);
    for (const size of sizes)
      if (!SHAPES[size]) throw new Error(`--sizes: one of ${Object.keys(SHAPES).join(', ')}`);
    storages = values.storage.split(',') as typeof storages;
    for (const s of storages)
      if (s !== 'filesystem' && s !== 'memory') throw new Error('--storage: filesystem, memory');
    child = values.child;
    warm = !values['no-warmup'];
    dataRoot = values['data-root'];
  } catch (error) {
    console.error(`bench:scale: ${(error as Error).message}`);
    return 2;
  }
  if (child) {
    const root = dataRoot ?? (await mkdtemp(join(tmpdir(), 'cld-scale-')));
    const result = await runOne(sizes[0] as number, storages[0] as 'filesystem' | 'memory', warm, root);
    console.log(JSON.stringify(result));
    if (dataRoot === undefined) await rm(root, { recursive: true, force: true });
    return 0;
  }
  // Every run's data stays until all runs are done: on a filesystem whose inode allocator skips
  // recently freed inodes (ext4 without a journal scans past each one freed in the last minutes),
  // deleting a run's files would slow the creates of the next run (see the report of issue 16).
  const root = await mkdtemp(join(tmpdir(), 'cld-scale-'));
  try {
    return await runAll(sizes, storages, warm, root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Runs each size on each storage in a child process of its own, data under `root`; prints the table. */
async function runAll(
  sizes: readonly number[],
  storages: readonly ('filesystem' | 'memory')[],
  warm: boolean,
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
          ...(warm ? [] : ['--no-warmup']),
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
    const at = (n: number) => results.find((r) => r.tasks === n && r.storage === storage);
    const a = at(1_000);
    const b = at(10_000);
    if (a && b) {
      const perA = (a.cpuMs - a.modelMs) / a.tasks;
      const perB = (b.cpuMs - b.modelMs) / b.tasks;
      const rise = perB / perA - 1;
      console.log(
        `\n${storage}: CPU per task ${perA.toFixed(2)} ms at 1,000 → ${perB.toFixed(2)} ms at 10,000 (${rise >= 0 ? '+' : ''}${(rise * 100).toFixed(0)} %)`,
      );
      if (rise > 0.25)
        failures.push(
          `${storage}: CPU per task rose ${(rise * 100).toFixed(0)} % from 1,000 to 10,000 tasks (> 25 %)`,
        );
    }
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
