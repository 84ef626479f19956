import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { startServe } from '../../cli/serve.js';
import { NAMES } from '../../shared/domain/common.js';
import {
  DEFAULT_SCHEDULING,
  SCHEDULING_POLICIES,
  type SchedulingPolicy,
} from '../../shared/events/scheduler.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn, keyOf } from '../../shared/urn.js';

/**
 * `npm run bench:burst [-- --policies newest-first,fifo --burst 200 --idle-runs 5 --concurrency 4]`: how one
 * conversation's latency depends on a backlog (issue 12 item 4). For each scheduling policy of
 * the local bus (shared/events/scheduler.ts) it starts `serve` as a child process (offline model,
 * the aws-s3 README ingested, a fresh data directory) and, over real HTTP from this process:
 * 1. idle latency: lone conversations one after another (after warm-up runs), from the POST to
 *    the answer, `--idle-runs` before the burst and as many after it (the machine's load drifts);
 *    the median of both is the idle latency;
 * 2. a burst: `--burst` conversations POSTed at once; as soon as all have their 202, newcomers
 *    (`--newcomers`, default 5) are started one after another, each once the previous one is
 *    answered, while the burst is still being worked off; each latency is measured from its own
 *    POST, and the ratio is the median of the newcomers started before the burst's last answer
 *    over the idle median.
 * "Answered" is the moment the answer Message is stored, which is what turns `GET
 * /conversations/{id}` to `done` (or `failed`): this process watches the child's data directory
 * (every 10 ms; the burst in rounds every 250 ms) instead of polling the API, so measuring costs
 * the server no CPU; each conversation's final status is then read once through `GET
 * /conversations/{id}`. Prints one table row per policy with the 1-minute load average before
 * and after (the machine is shared). Numbers for the README, not a test.
 */

const TOKEN = 'burst-bench-token-0123456789';
const QUESTION = 'How do I send S3 object events to EventBridge?';
const POLL_MS = 10;
const BURST_ROUND_MS = 250;

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    'data-dir': { type: 'string' },
    policies: { type: 'string', default: SCHEDULING_POLICIES.join(',') },
    burst: { type: 'string', default: '200' },
    'idle-runs': { type: 'string', default: '5' },
    newcomers: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '4' },
  },
});

function asPolicy(name: string): SchedulingPolicy {
  if (!(SCHEDULING_POLICIES as readonly string[]).includes(name))
    throw new Error(`unknown policy "${name}" (one of ${SCHEDULING_POLICIES.join(', ')})`);
  return name as SchedulingPolicy;
}

/** Child mode: `serve` with the given policy; prints `READY <url>` when it listens. */
async function serveChild(policy: SchedulingPolicy, dataDir: string): Promise<void> {
  const served = await startServe({
    port: 0,
    dataDir,
    env: { CLD_API_TOKENS: JSON.stringify({ [TOKEN]: 'bench' }) },
    core: parseEnv({ CLD_DATA_DIR: dataDir }),
    docs: ['node_modules/aws-cdk-lib/aws-s3'],
    scheduling: policy,
    concurrency: Number(values.concurrency),
  });
  console.log(`READY ${served.url}`);
  process.once('SIGTERM', () => void served.stop().then(() => process.exit(0)));
}

interface Server {
  url: string;
  /** The child's resources, read from this process. */
  storage: FilesystemStorage;
  stop(): Promise<void>;
}

async function startChild(policy: SchedulingPolicy): Promise<Server> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-burst-'));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/bench/burst.ts',
      '--serve',
      policy,
      '--data-dir',
      dataDir,
      '--concurrency',
      String(values.concurrency),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`serve child exited with ${code}`)));
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(line.slice('READY '.length));
    });
  });
  return {
    url,
    storage: new FilesystemStorage(join(dataDir, 'resources')),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

/** A started conversation: its public id, when its POST was sent, the key of its answer. */
interface Started {
  id: string;
  sent: number;
  answerKey: string;
}

async function post(url: string): Promise<Started> {
  const sent = performance.now();
  const response = await fetch(`${url}/conversations`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: QUESTION }),
  });
  if (response.status !== 202) throw new Error(`POST /conversations: ${response.status}`);
  const body = (await response.json()) as { id: string; conversation: string; message: string };
  const answer = childUrn(body.conversation, 'common.Message', NAMES.answer(body.message));
  return { id: body.id, sent, answerKey: keyOf(answer) };
}

/** The conversation's status through the API (`done`/`failed` once answered). */
async function status(url: string, id: string): Promise<string> {
  const response = await fetch(`${url}/conversations/${id}`, { headers });
  return ((await response.json()) as { status: string }).status;
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Latency of one conversation (its answer stored), in ms from its POST; polled every {@link POLL_MS}. */
async function answerOf(server: Server, started: Started): Promise<number> {
  for (;;) {
    if ((await server.storage.getMany([started.answerKey])).size > 0) return performance.now() - started.sent;
    await sleep(POLL_MS);
  }
}

async function lone(server: Server): Promise<number> {
  return answerOf(server, await post(server.url));
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

interface Row {
  policy: SchedulingPolicy;
  idleMs: number;
  /** Median of the newcomers. */
  newcomerMs: number;
  newcomerMaxMs: number;
  /** Newcomers started before the burst's last conversation was answered (the ones counted). */
  duringBurst: number;
  p10: number;
  p50: number;
  max: number;
  failed: number;
  load: [number, number];
}

async function measure(
  policy: SchedulingPolicy,
  burst: number,
  idleRuns: number,
  newcomers: number,
): Promise<Row> {
  const loadBefore = loadavg()[0] as number;
  const server = await startChild(policy);
  try {
    for (let i = 0; i < 3; i++) await lone(server); // warm-up (JIT, caches)
    const idle: number[] = [];
    for (let i = 0; i < idleRuns; i++) idle.push(await lone(server));

    const started = await Promise.all(Array.from({ length: burst }, () => post(server.url)));
    const late: Started[] = [];
    const lateMs: { ms: number; sent: number }[] = [];
    const newcomersDone = (async () => {
      for (let i = 0; i < newcomers; i++) {
        const newcomer = await post(server.url);
        late.push(newcomer);
        lateMs.push({ ms: await answerOf(server, newcomer), sent: newcomer.sent });
      }
    })();
    const latencies: number[] = [];
    let pending = started;
    let burstEnd = 0;
    while (pending.length > 0) {
      await sleep(BURST_ROUND_MS);
      const found = await server.storage.getMany(pending.map((conversation) => conversation.answerKey));
      burstEnd = performance.now();
      for (const conversation of pending)
        if (found.has(conversation.answerKey)) latencies.push(burstEnd - conversation.sent);
      pending = pending.filter((conversation) => !found.has(conversation.answerKey));
    }
    await newcomersDone;
    let failed = 0;
    for (const conversation of [...started, ...late])
      if ((await status(server.url, conversation.id)) !== 'done') failed++;
    for (let i = 0; i < idleRuns; i++) idle.push(await lone(server));
    idle.sort((a, b) => a - b);
    const idleMs = quantile(idle, 0.5);
    latencies.sort((a, b) => a - b);
    // Only newcomers started while the burst was still being worked off count.
    const during = lateMs.filter((l) => l.sent < burstEnd);
    const lateSorted = during.map((l) => l.ms).sort((a, b) => a - b);
    return {
      policy,
      idleMs,
      newcomerMs: quantile(lateSorted, 0.5),
      newcomerMaxMs: lateSorted.at(-1) ?? Number.NaN,
      duringBurst: during.length,
      p10: quantile(latencies, 0.1),
      p50: quantile(latencies, 0.5),
      max: latencies.at(-1) ?? Number.NaN,
      failed,
      load: [loadBefore, loadavg()[0] as number],
    };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  if (values.serve) {
    await serveChild(
      asPolicy(values.serve),
      values['data-dir'] ?? (await mkdtemp(join(tmpdir(), 'cld-burst-'))),
    );
    return;
  }
  const burst = Number(values.burst);
  const idleRuns = Number(values['idle-runs']);
  const newcomers = Number(values.newcomers);
  const policies = (values.policies ?? '').split(',').filter(Boolean).map(asPolicy);
  console.log(
    `burst bench: ${burst} conversations, then ${newcomers} newcomers one after another; offline model, serve in a child process, bus concurrency ${values.concurrency}; ` +
      `default policy ${DEFAULT_SCHEDULING}`,
  );
  console.log(
    '| policy | idle latency (median) | newcomers after the burst (median / max) | ratio | newcomers started during the burst | burst p10 | burst p50 | burst max | failed | load avg (1 min) before → after |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const policy of policies) {
    const row = await measure(policy, burst, idleRuns, newcomers);
    console.log(
      `| ${row.policy}${row.policy === DEFAULT_SCHEDULING ? ' (default)' : ''} | ${seconds(row.idleMs)} | ` +
        `${seconds(row.newcomerMs)} / ${seconds(row.newcomerMaxMs)} | ` +
        `${(row.newcomerMs / row.idleMs).toFixed(1)}× | ${row.duringBurst} of ${newcomers} | ${seconds(row.p10)} | ${seconds(row.p50)} | ${seconds(row.max)} | ` +
        `${row.failed} | ${row.load[0].toFixed(2)} → ${row.load[1].toFixed(2)} |`,
    );
  }
}

await main();
