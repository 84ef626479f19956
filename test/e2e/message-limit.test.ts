/**
 * The message length limit on channels that do not check it themselves (Slack, Teams): the plan
 * step fails a longer message with the limit named, and plans one of exactly the limit.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import { MAX_MESSAGE_CHARS } from '../../shared/domain/limits.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, Plan } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';

async function ask(content: string): Promise<{ plan: Plan | undefined; answer: Message | undefined }> {
  const runtime = await createLocalRuntime({ dataDir: await mkdtemp(join(tmpdir(), 'cld-limit-')) });
  const started = await startConversation(runtime.deps.resources, {
    user: 'slack:U1',
    channel: { kind: 'cli' },
    content,
    conversationName: 'limit',
  });
  await runtime.bus.idle();
  const below = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
  return {
    plan: below.find((r): r is Plan => r.meta.type === 'plan.Plan'),
    answer: below.find((r) => r.meta.id === started.answer) as Message | undefined,
  };
}

const text = (chars: number) =>
  'word '
    .repeat(chars)
    .slice(0, chars - 1)
    .concat('x');

describe('the plan step and MAX_MESSAGE_CHARS', () => {
  it(`plans a message of exactly ${MAX_MESSAGE_CHARS} characters`, async () => {
    const { plan, answer } = await ask(text(MAX_MESSAGE_CHARS));
    expect(plan?.error).toBeUndefined();
    expect(plan?.tasks).toHaveLength(1);
    expect(answer?.error).toBeUndefined();
  });

  it(`fails a message of ${MAX_MESSAGE_CHARS + 1} characters with the limit named, without a model call`, async () => {
    const { plan, answer } = await ask(text(MAX_MESSAGE_CHARS + 1));
    expect(plan?.tasks).toEqual([]);
    expect(plan?.usage).toBeUndefined();
    expect(plan?.error).toEqual({
      code: 'LIMIT_EXCEEDED',
      message:
        'the message is 16,001 characters; the limit is 16,000 (MAX_MESSAGE_CHARS): shorten it or send it in parts',
    });
    expect(answer?.content).toBe(`I could not plan this request: ${plan?.error?.message}`);
  });
});
