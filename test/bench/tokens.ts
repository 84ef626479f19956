/**
 * `npm run bench:tokens`: what the quick-start question costs in Bedrock tokens (issue 25 item 1).
 *
 * Asks the README's quick-start question through the real local runtime (the same path as
 * `npm start -- ask`), the chat model being the real Bedrock adapter and `BedrockRuntimeClient`
 * against a local Converse that bills with prompt caching as Bedrock does
 * (test/helpers/prompt-cache-stub.ts) and answers through the offline model. What is measured is
 * what the client sends: every call's input, cache-write, cache-read and output tokens.
 *
 * Each mode (`off`: no `cachePoint`, as before issue 25; `auto`: cache points where the model
 * supports them) asks the question twice in fresh conversations, the second within the cache's
 * 5-minute TTL (`cold`, then `warm`), after a cleared cache. Reported per question: model calls,
 * the four token counts, the billed-equivalent input (input + cache writes × 1.25 + cache reads
 * × 0.1), and the price at the model's Bedrock price (shared/llm/pricing.ts) per question and per
 * 1,000 questions.
 *
 * Options: `--model <id>` (default `CLD_MODEL_ID`, else `us.anthropic.claude-haiku-4-5-20251001-v1:0`),
 * `--data-dir <dir>` (default a fresh temporary directory), `--json <file>`, `--verbose` (every call),
 * `--dump <file>` (the request bodies of the first question, as JSON: what is sent), `--steps <json>`
 * (a model per step as `CLD_MODELS` takes it, e.g. `{"judge":"…"}`; each call is priced at its own model).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startConversation } from '../../shared/domain/conversation.js';
import { BedrockChatModel } from '../../shared/llm/bedrock.js';
import type { ChatModel } from '../../shared/llm/port.js';
import { PRICES_AS_OF, priceOf } from '../../shared/llm/pricing.js';
import { promptCacheSupport } from '../../shared/llm/prompt-cache.js';
import { stepModelsOf } from '../../shared/llm/steps.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { BilledCall } from '../helpers/prompt-cache-stub.js';
import { billOf, DEFAULT_BILLED_MODEL, startBilledBedrock, type TokenBill } from './bill.js';

/** The README's quick-start: its documents and its question. */
export const QUICK_START = {
  docs: ['node_modules/aws-cdk-lib/aws-s3', 'node_modules/aws-cdk-lib/aws-events'],
  question:
    '1. How do I send S3 object events to EventBridge? 2. How do I match only keys with a given prefix in an event rule?',
} as const;

/** Token totals of one question, in one cache mode and run. */
export interface QuestionBill extends TokenBill {
  mode: 'off' | 'auto';
  run: 'cold' | 'warm';
}

function sum(
  calls: readonly BilledCall[],
  mode: QuestionBill['mode'],
  run: QuestionBill['run'],
  modelId: string,
): QuestionBill {
  return { mode, run, ...billOf(calls, modelId) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      'data-dir': { type: 'string' },
      json: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      dump: { type: 'string' },
      steps: { type: 'string' },
    },
  });
  const modelId = values.model ?? process.env.CLD_MODEL_ID ?? DEFAULT_BILLED_MODEL;
  const dataDir = values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'cld-bench-tokens-'));
  const billed = await startBilledBedrock();
  const { stub, client } = billed;
  const stepModels = stepModelsOf({ CLD_MODELS: values.steps ?? process.env.CLD_MODELS });
  const models = {
    off: new BedrockChatModel({ client, modelId, promptCache: 'off', stepModels }),
    auto: new BedrockChatModel({ client, modelId, promptCache: 'auto', stepModels }),
  };
  let current: ChatModel = models.off;
  const model: ChatModel = { name: models.auto.name, converse: (request) => current.converse(request) };
  const bills: QuestionBill[] = [];
  try {
    const runtime = await createLocalRuntime({ dataDir, model });
    await ingest([...QUICK_START.docs], {
      resources: runtime.deps.resources,
      index: runtime.deps.search as MiniSearchIndex,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
    });
    await runtime.bus.idle();
    for (const mode of ['off', 'auto'] as const) {
      current = models[mode];
      stub.clearCache();
      for (const run of ['cold', 'warm'] as const) {
        const before = stub.calls.length;
        const asked = await startConversation(runtime.deps.resources, {
          user: 'cli:bench',
          channel: { kind: 'cli' },
          content: QUICK_START.question,
          conversationName: `bench-tokens-${mode}-${run}-${crypto.randomUUID()}`,
        });
        await runtime.bus.idle();
        // A bill is worth reporting only for a question that was answered.
        const answer = (await runtime.deps.resources.get(SYSTEM_ACTOR, asked.answer)) as Message | undefined;
        if (!answer || answer.error)
          throw new Error(
            `the quick-start question failed (${mode}, ${run}): ${answer?.error?.message ?? 'no answer'}`,
          );
        bills.push(sum(stub.calls.slice(before), mode, run, modelId));
        if (values.verbose)
          for (const call of stub.calls.slice(before)) console.log(describeCall(mode, run, call));
        if (values.dump && mode === 'off' && run === 'cold')
          writeFileSync(
            values.dump,
            `${JSON.stringify(
              stub.calls.slice(before).map((c) => c.body),
              null,
              2,
            )}\n`,
          );
      }
    }
  } finally {
    await billed.stop();
    if (!values['data-dir']) rmSync(dataDir, { recursive: true, force: true });
  }
  report(modelId, bills);
  if (Object.keys(stepModels).length > 0) console.log(`\nper-step models: ${JSON.stringify(stepModels)}`);
  if (values.json) writeFileSync(values.json, `${JSON.stringify({ modelId, bills }, null, 2)}\n`);
}

/** One call: its first tool, messages, prompt tokens, the prefix before each checkpoint, usage. */
function describeCall(mode: string, run: string, call: BilledCall): string {
  const body = call.body as {
    toolConfig?: { tools?: { toolSpec?: { name: string } }[] };
    messages?: unknown[];
  };
  const tool = body.toolConfig?.tools?.[0]?.toolSpec?.name ?? '-';
  return `${mode} ${run}: ${call.modelId} ${tool}, ${body.messages?.length ?? 0} messages, prompt ${call.promptTokens} tokens, checkpoints at [${call.prefixTokens.join(', ')}], usage ${JSON.stringify(call.usage)}`;
}

function report(modelId: string, bills: readonly QuestionBill[]): void {
  const price = priceOf(modelId);
  const cache = promptCacheSupport(modelId);
  console.log(`model: ${modelId}`);
  console.log(
    price
      ? `price (${price.profile} profile, USD/MTok, as of ${PRICES_AS_OF}): input ${price.input}, output ${price.output}, cache write ${price.cacheWrite}, cache read ${price.cacheRead}`
      : 'price: not in shared/llm/pricing.ts',
  );
  console.log(
    cache
      ? `prompt caching: yes, minimum ${cache.minTokens} tokens per checkpoint, fields ${cache.fields.join(', ')}`
      : 'prompt caching: not supported by this model',
  );
  console.log(`question: ${QUICK_START.question}\n`);
  console.log(
    '| cache points | run | calls | input | cache write | cache read | output | billed-eq. input | USD / question | USD / 1,000 |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const b of bills) {
    console.log(
      `| ${b.mode} | ${b.run} | ${b.calls} | ${b.inputTokens} | ${b.cacheWriteInputTokens} | ${b.cacheReadInputTokens} | ${b.outputTokens} | ${b.billedEquivalentInput} | ${b.usd === undefined ? '–' : b.usd.toFixed(5)} | ${b.usd === undefined ? '–' : (b.usd * 1000).toFixed(2)} |`,
    );
  }
  if (price) {
    for (const b of bills.filter((x) => x.run === 'cold')) {
      console.log(
        `\n${b.mode}, cold, per 1,000 questions: (${b.inputTokens} × ${price.input} + ${b.cacheWriteInputTokens} × ${price.cacheWrite} + ${b.cacheReadInputTokens} × ${price.cacheRead} + ${b.outputTokens} × ${price.output}) / 1e6 × 1,000 = $${((b.usd ?? 0) * 1000).toFixed(2)}`,
      );
    }
  }
}

await main();
