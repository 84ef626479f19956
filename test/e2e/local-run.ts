import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startConversation } from '../../shared/domain/conversation.js';
import type { DeliveryFaults } from '../../shared/events/local-bus.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { AnyResource, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';

/** The documents and question of the README's quick start. */
export const DOCS = ['node_modules/aws-cdk-lib/aws-s3', 'node_modules/aws-cdk-lib/aws-events'];
export const QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I match only keys with a given prefix in an event rule?';

/** What one run stored and did. */
export interface RunResult {
  runtime: LocalRuntime;
  conversation: string;
  message: string;
  answer: Message | undefined;
  /** Every resource under the conversation, the conversation included. */
  resources: AnyResource[];
}

/** Ingests the docs and asks the question on a fresh embedded default, waiting until the bus is idle. */
export async function runAsk(
  options: { faults?: DeliveryFaults; conversationName?: string } = {},
): Promise<RunResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-e2e-'));
  const runtime = await createLocalRuntime({
    dataDir,
    backoffMs: () => 5,
    ...(options.faults ? { faults: options.faults } : {}),
  });
  await ingest(DOCS, {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  });
  const started = await startConversation(runtime.deps.resources, {
    user: 'cli:e2e',
    channel: { kind: 'cli' },
    content: QUESTION,
    conversationName: options.conversationName ?? 'e2e-conversation',
  });
  await runtime.bus.idle();
  const conversation = await runtime.deps.resources.get(SYSTEM_ACTOR, started.conversation);
  const below = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
  const answer = below.find((r) => r.meta.id === started.answer) as Message | undefined;
  return {
    runtime,
    conversation: started.conversation,
    message: started.message,
    answer,
    resources: [conversation, ...below],
  };
}

/** A resource's content without timestamps (createdAt) — what "same content" compares. */
export function withoutTimestamps(resource: AnyResource): unknown {
  return JSON.parse(JSON.stringify(resource), (key, value) => (key === 'createdAt' ? undefined : value));
}
