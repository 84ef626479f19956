import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import type { Limits } from '../../shared/domain/limits.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
} from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { AnyResource, Task } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';

/**
 * What the supervision tests with a scripted {@link ChatModel} share (test/faults: corrective
 * rounds, partial answers, verdict ids): one conversation run on the local runtime to its end,
 * and the reply and tool-call blocks such a model returns.
 */

/** A model reply with `content`: `tool_use` when it holds a tool call, 10 + 10 tokens of usage. */
export function scriptedReply(content: ContentBlock[]): ConverseResponse {
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: content.some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn',
    usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
    metrics: { latencyMs: 0 },
  };
}

/** A `toolUse` block calling `name` with `input` (id `scripted-<name>`). */
export function toolUse(name: string, input: JsonValue): ContentBlock {
  return { toolUse: { toolUseId: `scripted-${name}`, name, input } };
}

/** The text blocks of a request's last message, joined by newlines. */
export function lastText(request: ConverseRequest): string {
  return (request.messages.at(-1)?.content ?? []).flatMap((b) => ('text' in b ? [b.text] : [])).join('\n');
}

/**
 * Starts a conversation with `content` on a fresh local runtime driven by `model` (no backoff,
 * `limits` over the defaults), waits until the bus is idle, and returns every resource of the
 * conversation with its tasks and root task (depth 1). The data directory is removed when the
 * calling test finishes.
 */
export async function runScripted(
  model: ChatModel,
  options: { content: string; name: string; limits?: Partial<Limits> },
) {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-scripted-'));
  onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
  const runtime = await createLocalRuntime({
    dataDir,
    model,
    ...(options.limits ? { limits: options.limits } : {}),
    backoffMs: () => 0,
  });
  const started = await startConversation(runtime.deps.resources, {
    user: 'cli:test',
    channel: { kind: 'cli' },
    content: options.content,
    conversationName: options.name,
  });
  await runtime.bus.idle();
  const all = (await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation)) as AnyResource[];
  const tasks = all.filter((r): r is Task => r.meta.type === 'plan.Task');
  const root = tasks.find((t) => t.depth === 1) as Task;
  return { runtime, started, all, tasks, root };
}
