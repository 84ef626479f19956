import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { FUNCTIONS } from '../../infra/lib/functions.js';
import { buildBundle, importOnce, median, probeEnvironment } from '../../scripts/bundles.js';
import { NAMES as RESULT_NAMES, toolActor } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { GraphIndex } from '../../shared/graph/graph-index.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import { describeEntity, queryPatterns } from '../../shared/graph/query.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, LOCAL_BUCKET } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { StorageInterface } from '../../shared/storage/port.js';
import { childUrn, keyOf, parentOf } from '../../shared/urn.js';

/**
 * `npm run bench:graph [-- --package node_modules/aws-cdk-lib] [--data DIR]`: the Graph tool at
 * the size of the aws-cdk-lib jsii assembly (issue 13). Ingests the package's READMEs (so
 * entities link to chunks) and its assembly into a fresh data directory, then measures, on a
 * freshly opened graph index: the cold load of one question's shards (manifest + shard), the
 * heap a loaded shard holds, and p50/p99 of `describe` and pattern queries over warm shards.
 * Then the cold start of the `tool` function on that graph: the function's bundle (built as the
 * stack builds it, infra/lib/bundling.ts) imported in new plain `node` processes, each invoked
 * once with the `graph` call the offline model made for "What properties does BucketProps take?"
 * (the call's result deleted before each run): import time, and the first invocation (composition,
 * manifest, name bucket, the `aws_s3` shard through the policy gate, describe, result written).
 * Goals: p50 ≤ 5 ms per pattern query, ≤ 1 s to load the shards of one question. Reported,
 * not asserted. Run with `node --expose-gc` (the npm script does) for the heap figure.
 */

const { values } = parseArgs({
  options: { package: { type: 'string', default: 'node_modules/aws-cdk-lib' }, data: { type: 'string' } },
});
const pkg = values.package as string;
const dataDir = values.data ?? (await mkdtemp(join(tmpdir(), 'cld-bench-graph-')));
const runtime = await createLocalRuntime({ dataDir });
const index = runtime.deps.search as MiniSearchIndex;
const indexStorage = index.location?.storage as StorageInterface;
const cwd = process.cwd();

const docs = await ingest([pkg], { resources: runtime.deps.resources, index, actor: SYSTEM_ACTOR, cwd });
const graph = await ingestGraph([pkg], {
  resources: runtime.deps.resources,
  indexStorage,
  actor: SYSTEM_ACTOR,
  cwd,
});
console.log(
  `ingest: docs ${docs.chunks} chunks in ${(docs.ms / 1000).toFixed(1)} s; graph ${graph.triples} triples, ${graph.shards} shards, ${(graph.bytes / 1048576).toFixed(1)} MB N-Quads, ${graph.mentions} links to chunks, in ${(graph.ms / 1000).toFixed(1)} s`,
);

const actor = toolActor(
  'cld:common.Conversation.b000000000000001/common.Message.a000000000000001/plan.Task.d000000000000001',
  'graph',
);
const gc = (globalThis as { gc?: () => void }).gc;

// Cold: a fresh index (as a new tool container), the shards of one question.
gc?.();
const heapBefore = process.memoryUsage().heapUsed;
let started = performance.now();
const cold = await GraphIndex.open(indexStorage, runtime.deps.resources);
const opened = performance.now() - started;
started = performance.now();
await describeEntity(cold, actor, 'BucketProps');
const firstQuestion = performance.now() - started;
gc?.();
const heapAfter = process.memoryUsage().heapUsed;
console.log(
  `cold: manifest ${opened.toFixed(0)} ms (${cold.manifest.sources.length} source(s)), first question (aws_s3 shard load + describe) ${firstQuestion.toFixed(0)} ms, heap of the manifest + one shard ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MB`,
);

const DESCRIBE = [
  'BucketProps',
  'aws_lambda.FunctionProps',
  'aws_events.Rule',
  'aws_iam.Role',
  'aws_sqs.QueueProps',
  'aws_dynamodb.TableProps',
  'aws_ec2.Vpc',
  'aws_sns.Topic',
];
const PATTERNS: [string, string, string][][] = [
  [
    ['?i', 'rdfs:label', '"IGrantable"'],
    ['?c', 'jsii:conformsTo', '?i'],
    ['?c', 'a', 'jsii:Class'],
  ],
  [
    ['type:aws-cdk-lib.aws_s3.BucketProps', 'jsii:property', '?p'],
    ['?p', 'jsii:default', '?d'],
  ],
  [['type:aws-cdk-lib.aws_events.Rule', 'jsii:extends', '?base']],
  [['?p', 'jsii:references', 'type:aws-cdk-lib.aws_s3.IBucket']],
];
for (const name of DESCRIBE) await describeEntity(cold, actor, name);
for (const patterns of PATTERNS) await queryPatterns(cold, actor, patterns, { limit: 25, offset: 0 });

function percentiles(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
  return `p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms (${samples.length} queries)`;
}

const describeTimes: number[] = [];
const patternTimes: number[] = [];
for (let round = 0; round < 25; round++) {
  for (const name of DESCRIBE) {
    const t = performance.now();
    await describeEntity(cold, actor, name);
    describeTimes.push(performance.now() - t);
  }
  for (const patterns of PATTERNS) {
    const t = performance.now();
    await queryPatterns(cold, actor, patterns, { limit: 25, offset: 0 });
    patternTimes.push(performance.now() - t);
  }
}
console.log(`describe (warm shards): ${percentiles(describeTimes)}`);
console.log(`patterns (warm shards): ${percentiles(patternTimes)}`);
// Cold start of the tool function's bundle on this graph.
const BUNDLE_RUNS = 5;
const asked = await startConversation(runtime.deps.resources, {
  user: 'cli:bench',
  channel: { kind: 'cli' },
  content: 'What properties does BucketProps take, and what are their defaults?',
  conversationName: 'bench-graph-bundle',
});
await runtime.bus.idle();
const graphCall = (await runtime.deps.resources.list(SYSTEM_ACTOR, asked.conversation)).find(
  (r): r is ToolCallResource => r.meta.type === 'tool.Call' && (r as ToolCallResource).call.name === 'graph',
);
if (!graphCall) throw new Error('the offline model made no graph call for the BucketProps question');
const resultKey = keyOf(
  childUrn(parentOf(graphCall.meta.id), 'common.Message', RESULT_NAMES.result(graphCall.meta.name)),
);
// Under the project's node_modules, so the modules the bundle leaves to the Lambda runtime resolve.
const bundleRoot = join(PROJECT_ROOT, 'node_modules', '.cache', `cld-bench-graph-${process.pid}`);
const toolBundle = await buildBundle('tool', FUNCTIONS.tool, bundleRoot);
const eventFile = join(dataDir, 'graph-call-event.json');
const callKey = keyOf(graphCall.meta.id);
await writeFile(
  eventFile,
  JSON.stringify(s3ObjectCreatedEvent(LOCAL_BUCKET, callKey, (await runtime.storage.get(callKey)).length)),
);
const bundleRuns: { importMs: number; firstMs: number }[] = [];
for (let i = 0; i < BUNDLE_RUNS; i++) {
  await runtime.storage.delete(resultKey);
  const timing = await importOnce(toolBundle.file, [], {
    eventFile,
    env: probeEnvironment(toolBundle, dataDir),
  });
  if (timing.outcome !== 'ok') throw new Error(`the tool bundle failed the graph call: ${timing.outcome}`);
  bundleRuns.push({ importMs: timing.bundleMs, firstMs: timing.firstCallMs ?? Number.NaN });
}
await rm(bundleRoot, { recursive: true, force: true });
// Part of every cold start of the tool function (compose opens the chunk index), graph call or not.
const chunkIndexMs: number[] = [];
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  await MiniSearchIndex.open(indexStorage);
  chunkIndexMs.push(performance.now() - t);
}
console.log(
  `tool bundle (${(toolBundle.bytes / 1024).toFixed(1)} KB) cold on this graph, ${BUNDLE_RUNS} processes: import p50 ${median(bundleRuns.map((r) => r.importMs)).toFixed(0)} ms, first graph call (compose + manifest + aws_s3 shard + describe) p50 ${median(bundleRuns.map((r) => r.firstMs)).toFixed(0)} ms, of which opening the chunk index (${index.size} chunks) ≈ ${median(chunkIndexMs).toFixed(0)} ms`,
);

console.log(
  `peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB; load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; data ${dataDir}`,
);
