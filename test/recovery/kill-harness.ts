import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { conversationProgress } from '../../shared/domain/progress.js';
import { sweeperActor } from '../../shared/domain/sweep.js';
import { mulberry32 } from '../../shared/events/local-bus.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { replayConversation } from '../../shared/projections/replay.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';

/**
 * The process-death harness of issue 12: the real CLI (`cld serve`, `cld ask`) as child processes,
 * killed at random points under load and started again, then judged from the outside — the HTTP
 * API's status view for every acknowledged conversation — and from storage — every conversation's
 * projections against a replay (shared/projections/replay.ts) computed in this process after the
 * last run stopped. The CLI is bundled once with esbuild (packages left external), so a restart
 * costs a node start, not a TypeScript compile.
 */

/** The project root. */
const ROOT = new URL('../../', import.meta.url).pathname;
/** The bundled CLI (inside the project, so its external packages resolve from node_modules). */
const BUNDLE = join(ROOT, 'test', '.kill-bundle', 'cld.mjs');

/** The question every conversation asks (2 root tasks, tool calls, an answer with citations). */
export const QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket?';
/** Documents ingested once before the runs (the aws-s3 README: 60 chunks). */
export const DOCS = ['node_modules/aws-cdk-lib/aws-s3'];

const TOKEN = 'kill-harness-token-0123456789';

/** The children's environment: this one without any `CLD_*` variable (offline model), plus `extra`. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CLD_')));
  return { ...env, ...extra };
}

/** Bundles cli/main.ts to {@link BUNDLE}; returns its path. */
export async function bundleCli(): Promise<string> {
  await mkdir(join(ROOT, 'test', '.kill-bundle'), { recursive: true });
  await build({
    entryPoints: [join(ROOT, 'cli', 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: BUNDLE,
    logLevel: 'error',
  });
  return BUNDLE;
}

/** A seeded pseudo-random generator (the bus's mulberry32), so a run can be repeated. */
export const random = mulberry32;

/** Runs the bundled CLI to its end. */
export function runCli(
  args: string[],
  dataDir: string,
  options: { onLine?: (line: string, child: ChildProcess) => void } = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BUNDLE, ...args], {
      cwd: ROOT,
      env: childEnv({ CLD_DATA_DIR: dataDir }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let pending = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line, child);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal, stdout }));
  });
}

/** A `serve` child process. */
interface ServeChild {
  child: ChildProcess;
  url: string;
  exited: Promise<void>;
}

async function startServeChild(dataDir: string): Promise<ServeChild> {
  const child = spawn(process.execPath, [BUNDLE, 'serve', '--port', '0'], {
    cwd: ROOT,
    env: childEnv({ CLD_DATA_DIR: dataDir, CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'kill-user' }) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /cld serve: (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it listened: ${output}`));
    });
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return { child, url, exited };
}

async function post(url: string, message: string): Promise<string | undefined> {
  try {
    const response = await fetch(`${url}/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message }),
    });
    if (response.status !== 202) return undefined;
    return ((await response.json()) as { id: string }).id;
  } catch {
    return undefined; // killed before it answered: not acknowledged
  }
}

interface StatusView {
  status: string;
  urn: string;
  messages: { status: string; answer?: { content: string; error?: { code: string; message: string } } }[];
}

async function status(url: string, id: string): Promise<StatusView | 'not-found'> {
  const response = await fetch(`${url}/conversations/${id}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  if (response.status === 404) return 'not-found';
  if (response.status !== 200) throw new Error(`GET /conversations/${id}: ${response.status}`);
  return (await response.json()) as StatusView;
}

/** Options of {@link runServeKills}. */
export interface ServeKillOptions {
  kills: number;
  /** Conversations posted (concurrently) after each start. */
  perStart: number;
  seed: number;
  /** The kill comes this long (ms, uniform) after the first post of a start was acknowledged. */
  killAfterMs: [number, number];
  /** How long the final run may take to answer everything (ms). */
  recoverTimeoutMs?: number;
  print?: (line: string) => void;
}

/** What a run of {@link runServeKills} found. */
export interface KillResult {
  kills: number;
  /** Conversations acknowledged (202) before a kill or in the final run. */
  conversations: number;
  answered: number;
  /** Answered with an error: each with its reason. */
  failed: { id: string; reason: string }[];
  stalled: number;
  /** Acknowledged but unknown afterwards (404) or never answered before the timeout. */
  lost: string[];
  /** Conversations whose projections differ from the replay, with the differences. */
  projectionDifferences: { conversation: string; detail: string }[];
  /** From the last start's listening to every conversation answered (ms). */
  recoverMs: number;
  /** Conversations still unanswered when the last start began (what it had to recover). */
  unfinishedAtLastStart: number;
  /**
   * Conversations acknowledged by a start and still unanswered just before it was killed, summed
   * over the kills: the work the kills left behind (measured while the process still answered).
   */
  unfinishedAtKills: number;
}

/**
 * Starts `serve` on a fresh data directory `kills + 1` times; after each start posts `perStart`
 * conversations at once and, a random time after the first is acknowledged, kills the process
 * with SIGKILL while they run; the last start is not killed and is polled until every
 * acknowledged conversation is answered.
 */
export async function runServeKills(options: ServeKillOptions): Promise<KillResult> {
  const print = options.print ?? (() => undefined);
  const next = random(options.seed);
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-kill-'));
  const ingested = await runCli(['ingest', ...DOCS], dataDir);
  if (ingested.code !== 0) throw new Error(`ingest failed: ${ingested.stdout}`);
  const acknowledged: string[] = [];
  let unfinishedAtKills = 0;
  for (let kill = 1; kill <= options.kills; kill++) {
    const served = await startServeChild(dataDir);
    const firstOfStart = acknowledged.length;
    const [low, high] = options.killAfterMs;
    const delay = low + Math.floor(next() * (high - low));
    let acknowledge: () => void = () => undefined;
    const firstAck = new Promise<void>((resolve) => {
      acknowledge = resolve;
    });
    const posts = Array.from({ length: options.perStart }, (_, i) =>
      post(served.url, `${QUESTION} (${kill}.${i})`).then((id) => {
        if (!id) return;
        acknowledged.push(id);
        acknowledge();
      }),
    );
    // The kill comes while conversations run: a random time after the first one was acknowledged.
    await Promise.race([firstAck, Promise.all(posts)]);
    await new Promise((resolve) => setTimeout(resolve, delay));
    const views = await Promise.all(
      acknowledged.slice(firstOfStart).map((id) => status(served.url, id).catch(() => 'not-found' as const)),
    );
    unfinishedAtKills += views.filter(
      (view) =>
        view === 'not-found' ||
        (view.status !== 'done' && view.status !== 'partial' && view.status !== 'failed'),
    ).length;
    served.child.kill('SIGKILL');
    await served.exited;
    await Promise.all(posts);
    print(`kill ${kill}/${options.kills} after ${delay} ms: ${acknowledged.length} acknowledged so far`);
  }
  const served = await startServeChild(dataDir);
  const started = Date.now();
  const deadline = started + (options.recoverTimeoutMs ?? 60_000);
  const views = new Map<string, StatusView | 'not-found'>();
  let unfinishedAtLastStart = -1;
  for (;;) {
    for (const id of acknowledged) {
      const known = views.get(id);
      if (
        known !== undefined &&
        known !== 'not-found' &&
        (known.status === 'done' || known.status === 'partial' || known.status === 'failed')
      )
        continue;
      views.set(id, await status(served.url, id));
    }
    const open = acknowledged.filter((id) => {
      const view = views.get(id);
      return (
        view === undefined ||
        view === 'not-found' ||
        (view.status !== 'done' && view.status !== 'partial' && view.status !== 'failed')
      );
    });
    if (unfinishedAtLastStart < 0) unfinishedAtLastStart = open.length;
    if (open.length === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const recoverMs = Date.now() - started;
  served.child.kill('SIGTERM');
  await served.exited;

  const result: KillResult = {
    kills: options.kills,
    conversations: acknowledged.length,
    answered: 0,
    failed: [],
    stalled: 0,
    lost: [],
    projectionDifferences: [],
    recoverMs,
    unfinishedAtLastStart,
    unfinishedAtKills,
  };
  const conversations: string[] = [];
  for (const id of acknowledged) {
    const view = views.get(id);
    if (view === undefined || view === 'not-found') {
      result.lost.push(id);
      continue;
    }
    conversations.push(view.urn);
    // A partial answer is an answer (issue 21): some parts named as not answered, none lost.
    if (view.status === 'done' || view.status === 'partial') result.answered++;
    else if (view.status === 'failed')
      result.failed.push({
        id,
        reason: view.messages.find((m) => m.answer?.error)?.answer?.error?.message ?? '(no reason)',
      });
    else if (view.status === 'stalled') result.stalled++;
    else result.lost.push(id);
  }
  result.projectionDifferences = await projectionDifferences(dataDir, conversations);
  return result;
}

/** Replays each conversation (in this process, after the runs) against its stored projections. */
export async function projectionDifferences(
  dataDir: string,
  conversations: readonly string[],
): Promise<{ conversation: string; detail: string }[]> {
  const runtime = await createLocalRuntime({ dataDir });
  const differences: { conversation: string; detail: string }[] = [];
  for (const conversation of conversations) {
    const report = await replayConversation(
      runtime.deps.resources,
      runtime.projections,
      SYSTEM_ACTOR,
      conversation,
    );
    for (const difference of report.differences)
      differences.push({ conversation, detail: `${difference.name}: ${difference.detail}` });
  }
  return differences;
}

/** What {@link runAskInterrupts} found. */
export interface AskResult {
  interrupts: number;
  /** Runs that ended with an answer (exit code 0) after being interrupted once. */
  answered: number;
  failed: number;
  /** Interrupted runs whose second run did not print the answer. */
  lost: string[];
  projectionDifferences: { conversation: string; detail: string }[];
  /** The second runs' wall time, each (ms). */
  rerunMs: number[];
  /** Interrupts that left the conversation unfinished: the second run re-drove it. */
  midRun: number;
}

/**
 * `cld ask --conversation <name> --new` interrupted with SIGINT at a random point after its first line
 * (`model: …`, printed once the runtime is up: the interrupt falls into the resume, the store of
 * the message or the run), then run again with the same arguments: the second run must resume
 * the conversation and answer it.
 */
export async function runAskInterrupts(options: {
  interrupts: number;
  seed: number;
  /** SIGINT this long (ms, uniform) after the first line. */
  afterMs: [number, number];
  print?: (line: string) => void;
}): Promise<AskResult> {
  const print = options.print ?? (() => undefined);
  const next = random(options.seed);
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-ask-kill-'));
  const ingested = await runCli(['ingest', ...DOCS], dataDir);
  if (ingested.code !== 0) throw new Error(`ingest failed: ${ingested.stdout}`);
  const result: AskResult = {
    interrupts: 0,
    answered: 0,
    failed: 0,
    lost: [],
    projectionDifferences: [],
    rerunMs: [],
    midRun: 0,
  };
  const conversations: string[] = [];
  for (let i = 1; i <= options.interrupts; i++) {
    const name = `ask-interrupted-${i}`;
    const args = ['ask', '--conversation', name, '--new', QUESTION];
    const [low, high] = options.afterMs;
    let signalled = false;
    const first = await runCli(args, dataDir, {
      onLine: (line, child) => {
        if (signalled || !line.startsWith('model: ')) return;
        signalled = true;
        setTimeout(() => child.kill('SIGINT'), low + Math.floor(next() * (high - low)));
      },
    });
    if (first.signal === 'SIGINT' || first.code === 130) result.interrupts++;
    const started = Date.now();
    const second = await runCli(args, dataDir);
    if (/re-driven/.test(second.stdout)) result.midRun++;
    result.rerunMs.push(Date.now() - started);
    const conversation = /conversation: (cld:common\.Conversation\.[0-9a-f]{16})/.exec(second.stdout)?.[1];
    if (conversation) conversations.push(conversation);
    if (second.code === 0 && conversation) result.answered++;
    else if (second.code === 1 && /the request failed/.test(second.stdout)) result.failed++;
    else result.lost.push(`${name}: exit ${second.code}: ${second.stdout.slice(-300)}`);
    print(`ask ${i}: first run ${first.signal ?? first.code}, second run exit ${second.code}`);
  }
  result.projectionDifferences = await projectionDifferences(dataDir, conversations);
  // Nothing stays open in the projection either: every conversation resumed was closed or answered.
  const runtime = await createLocalRuntime({ dataDir });
  for (const conversation of conversations) {
    const actor = sweeperActor(conversation);
    const root = await runtime.deps.resources.find(actor, 'common.Conversation', conversation);
    const below = await runtime.deps.resources.list(actor, conversation);
    const progress = conversationProgress(conversation, root ? [root, ...below] : below, { now: new Date() });
    if (progress.status !== 'done' && progress.status !== 'partial' && progress.status !== 'failed')
      result.lost.push(`${conversation}: ${progress.status} after the second run`);
  }
  return result;
}
