import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `npm run bench:cli-start [runs]`: the start-up of the built `cld` bin (dist/cld.mjs, `npm run
 * build:cli`; issue 23, item 5), p50 and p90 wall time (and p50 CPU time, user + system, of the child) of `runs` (default 10, at least 10) runs of
 * each, with the load average before and after; exits 1 when a p50 is over its goal:
 * - `cld --help` ({@link HELP_GOAL_MS}): only cli/main.ts is loaded;
 * - `cld show <chunk-urn>` ({@link SHOW_GOAL_MS}) on a data directory with the aws-events module's
 *   README ingested: settings, the embedded default's storage and the chunk.
 * Also `node -e 0` for reference (the floor any Node.js program pays on this machine).
 */
const HELP_GOAL_MS = 300;
const SHOW_GOAL_MS = 1_000;

const BIN = 'dist/cld.mjs';

interface Run {
  code: number | null;
  ms: number;
  /** CPU time (user + system) of the child process, in ms: what the machine's load changes least. */
  cpuMs: number;
  stdout: string;
}

/**
 * Preloaded into each child (`--import`): writes the process's CPU time (`process.cpuUsage()`,
 * µs) to file descriptor 3 as it exits.
 */
const CPU_PROBE = `data:text/javascript,${encodeURIComponent(
  "import { writeSync } from 'node:fs'; process.on('exit', () => { const { user, system } = process.cpuUsage(); writeSync(3, String(user + system)); });",
)}`;

function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CLD_|AWS_)/.test(key)));
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', CPU_PROBE, ...args], {
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
  });
  let stdout = '';
  let cpu = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (chunk: string) => {
    cpu += chunk;
  });
  return new Promise((resolve) => {
    child.on('close', (code) =>
      resolve({ code, ms: performance.now() - started, cpuMs: Number(cpu) / 1000, stdout }),
    );
  });
}

/** The `q`-quantile (0..1) of `values`, nearest rank. */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

async function measure(label: string, args: string[], env: Record<string, string>, runs: number) {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const result = await run(args, env);
    if (result.code !== 0) throw new Error(`${label} exited ${result.code}`);
    times.push(result.ms);
    cpu.push(result.cpuMs);
  }
  const p50 = quantile(times, 0.5);
  console.log(
    `${label}: p50 ${p50.toFixed(0)} ms, p90 ${quantile(times, 0.9).toFixed(0)} ms wall; CPU p50 ${quantile(cpu, 0.5).toFixed(0)} ms (${runs} runs)`,
  );
  return p50;
}

async function main(): Promise<void> {
  const runs = Math.max(10, Number(process.argv[2] ?? 10));
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build:cli first`);
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-bench-cli-start-'));
  const env = { CLD_DATA_DIR: dataDir };
  const ingested = await run([BIN, 'ingest', 'node_modules/aws-cdk-lib/aws-events'], env);
  if (ingested.code !== 0) throw new Error(`ingest exited ${ingested.code}`);
  // A chunk to show: the first chunk URN the data directory holds, found through `show` of the document.
  const chunk = (await findChunk(dataDir)) ?? '';
  const before = loadavg()[0]?.toFixed(1);
  await measure('node -e 0', ['-e', '0'], env, runs);
  const help = await measure('cld --help', [BIN, '--help'], env, runs);
  const show = await measure('cld show <chunk-urn>', [BIN, 'show', chunk], env, runs);
  console.log(
    `load average ${before} before, ${loadavg()[0]?.toFixed(1)} after (${process.platform}, node ${process.version})`,
  );
  console.log(`goals: --help p50 ≤ ${HELP_GOAL_MS} ms, show p50 ≤ ${SHOW_GOAL_MS} ms`);
  process.exitCode = help > HELP_GOAL_MS || show > SHOW_GOAL_MS ? 1 : 0;
}

/** A `doc.Chunk` URN stored under `dataDir` (its file names are the URNs' keys). */
async function findChunk(dataDir: string): Promise<string | undefined> {
  const { readdir } = await import('node:fs/promises');
  const entries = await readdir(dataDir, { recursive: true });
  const key = entries.map(String).find((entry) => /doc\.Chunk\.[0-9a-f]{16}/.test(entry));
  if (!key) return undefined;
  const chunkMatch = key.match(/(doc\.Document\.[0-9a-f]{16})[\\/].*?(doc\.Chunk\.[0-9a-f]{16})/);
  return chunkMatch ? `cld:${chunkMatch[1]}/${chunkMatch[2]}` : undefined;
}

await main();
