/**
 * A question through the local runtime with the real Bedrock adapter and client against the
 * caching Converse stub (the offline model answering): the steps send cache points and their
 * per-step model ids, and the stored turns keep Bedrock's cache counts in their usage.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import { BedrockChatModel, createBedrockClient } from '../../shared/llm/bedrock.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { AnyResource, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { type PromptCacheStub, startPromptCacheStub } from '../helpers/prompt-cache-stub.js';

const HAIKU_45 = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';
const SONNET_45 = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';

let dir: string;
let stub: PromptCacheStub;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cld-prompt-cache-'));
  const offline = new OfflineChatModel();
  stub = await startPromptCacheStub({ answer: (request) => offline.converse(request) });
});

afterEach(async () => {
  await stub.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a question with prompt caching', () => {
  it('answers, sends cache points from every step and stores the cache counts with each usage', async () => {
    const docs = join(dir, 'docs');
    mkdirSync(docs);
    writeFileSync(
      join(docs, 'versioning.md'),
      '# Bucket versioning\n\nSet `versioned: true` on the `Bucket` construct to keep every version of an object.\n',
    );
    const client = createBedrockClient({
      region: 'us-east-1',
      endpoint: stub.endpoint,
      credentials: { accessKeyId: 'AKIDTESTEXAMPLE', secretAccessKey: 'fake' },
      maxAttempts: 1,
    });
    try {
      const model = new BedrockChatModel({ client, modelId: HAIKU_45, stepModels: { plan: SONNET_45 } });
      const runtime = await createLocalRuntime({ dataDir: join(dir, 'data'), model });
      await ingest([docs], {
        resources: runtime.deps.resources,
        index: runtime.deps.search as MiniSearchIndex,
        actor: SYSTEM_ACTOR,
        cwd: dir,
      });
      await runtime.bus.idle();
      const asked = await startConversation(runtime.deps.resources, {
        user: 'cli:test',
        channel: { kind: 'cli' },
        content: 'How do I keep every version of an object in a bucket?',
        conversationName: 'cache',
      });
      await runtime.bus.idle();

      const answer = (await runtime.deps.resources.get(SYSTEM_ACTOR, asked.answer)) as Message;
      expect(answer.error).toBeUndefined();
      expect(answer.content).toContain('versioned');
      expect(stub.calls[0]?.modelId).toBe(SONNET_45); // the plan
      expect(stub.calls.slice(1).every((c) => c.modelId === HAIKU_45)).toBe(true);
      expect(stub.calls.every((c) => c.checkpoints >= 2)).toBe(true);
      const below = await runtime.deps.resources.list(SYSTEM_ACTOR, asked.conversation);
      const usages = below.flatMap((r: AnyResource) => ('usage' in r && r.usage ? [r.usage] : []));
      expect(usages.length).toBeGreaterThanOrEqual(stub.calls.length - 1);
      for (const usage of usages) {
        expect(usage).toHaveProperty('cacheReadInputTokens');
        expect(usage).toHaveProperty('cacheWriteInputTokens');
      }
    } finally {
      client.destroy();
    }
  }, 60_000);
});
