import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startConversation } from '../../shared/domain/conversation.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, Task } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { QUESTION } from '../e2e/local-run.js';

/**
 * `npm run bench`: the numbers the README reports, measured on this machine (not asserted in
 * tests): ingest of the whole aws-cdk-lib corpus, a re-ingest (index reused), and the example
 * `ask` with resources written and events routed per task. Offline model, embedded default.
 */
async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-bench-'));
  const runtime = await createLocalRuntime({ dataDir });
  const deps = {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  };
  const first = await ingest(['node_modules/aws-cdk-lib'], deps);
  await runtime.bus.idle();
  const again = await ingest(['node_modules/aws-cdk-lib'], deps);
  const routedBefore = runtime.bus.stats.routed;
  const t0 = performance.now();
  const started = await startConversation(runtime.deps.resources, {
    user: 'bench',
    channel: { kind: 'cli' },
    content: QUESTION,
    conversationName: 'bench',
  });
  await runtime.bus.idle();
  const askMs = performance.now() - t0;
  const resources = [
    await runtime.deps.resources.get(SYSTEM_ACTOR, started.conversation),
    ...(await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation)),
  ];
  const tasks = resources.filter((r): r is Task => r.meta.type === 'plan.Task').length;
  const answer = resources.find((r) => r.meta.id === started.answer) as Message | undefined;
  const routed = runtime.bus.stats.routed - routedBefore;
  const rows = [
    [
      'ingest, whole aws-cdk-lib',
      `${first.files} files, ${(first.bytes / 1e6).toFixed(2)} MB → ${first.chunks} chunks`,
      `${(first.ms / 1000).toFixed(1)} s`,
    ],
    [
      're-ingest (unchanged, index reused)',
      `${again.skipped} files skipped`,
      `${(again.ms / 1000).toFixed(2)} s`,
    ],
    [
      'example ask (offline model)',
      `${tasks} tasks, answer ${answer && !answer.error ? 'ok' : 'FAILED'}`,
      `${(askMs / 1000).toFixed(2)} s`,
    ],
    [
      'resources written by the ask',
      `${resources.length} (${(resources.length / tasks).toFixed(1)} per task)`,
      '',
    ],
    ['events routed by the ask', `${routed} (${(routed / tasks).toFixed(1)} per task)`, ''],
  ];
  console.log('| measure | amount | time |\n|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

await main();
