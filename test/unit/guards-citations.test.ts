import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalog } from '../../shared/catalog/catalog.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { CREATE_PLAN } from '../../shared/domain/payloads.js';
import type { ChatModel, ContentBlock, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Assistant, Message } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';

/**
 * The citation filter of the assistant step (issue 22, finding 10): an answer's citations are the
 * URNs in its text that a tool result of the task returned; a URN the model wrote but no tool
 * returned (made up, or remembered from elsewhere) stays in the text and is not cited. Real
 * handlers on the local runtime; the model is scripted: one `read` of a catalog Assistant (whose
 * JSON carries its URN), then an answer naming that URN and an invented one.
 */

/** Returned by the `read` call: the catalog's editor (its URN carries its content version). */
const RETURNED = (defaultCatalog().assistants.find((a) => a.meta.name === 'editor') as Assistant).meta.id;
/** Written by the model, returned by no tool. */
const INVENTED = 'cld:doc.Document.0123456789abcdef/doc.Chunk.fedcba9876543210';

class CitingModel implements ChatModel {
  readonly name = 'citing';

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    const hasResult = request.messages.some((m) => m.content.some((b) => 'toolResult' in b));
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      const task = {
        title: 'Summarise the editor',
        purpose: 'Summarise what the editor assistant does, from its catalog entry.',
        instructions: 'Read the catalog entry with the read tool and summarise it.',
        applicability: 'Summarise or rewrite text that is already available.',
        evaluation: 'The summary cites the catalog entry.',
      };
      content = [{ toolUse: { toolUseId: 'plan', name: CREATE_PLAN, input: { tasks: [task] } } }];
    } else if (!hasResult && tools.includes('read')) {
      content = [{ toolUse: { toolUseId: 'read-1', name: 'read', input: { urn: RETURNED } } }];
    } else {
      content = [{ text: `The editor rewrites text (${RETURNED}); see also ${INVENTED}.` }];
    }
    return {
      output: { message: { role: 'assistant', content } },
      stopReason: content.some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn',
      usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
      metrics: { latencyMs: 0 },
    };
  }
}

let dir: string;
let runtime: LocalRuntime;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-guards-citations-'));
  runtime = await createLocalRuntime({ dataDir: dir, model: new CitingModel(), backoffMs: () => 5 });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

describe('citations of an answer', () => {
  it('cites a URN a tool returned and drops one no tool returned, keeping the text', async () => {
    const started = await startConversation(runtime.deps.resources, {
      user: 'u-citations',
      channel: { kind: 'cli' },
      content: 'What does the editor assistant do?',
      conversationName: 'guards-citations',
    });
    await runtime.bus.idle();
    const messages = (await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation, {
      type: 'common.Message',
    })) as Message[];
    const result = messages.find((m) => m.role === 'tool');
    expect(result?.status).toBe('OK');
    expect(result?.content).toContain(RETURNED);
    expect(result?.content).not.toContain(INVENTED);

    const output = messages.find((m) => m.meta.name === 'output' && m.role === 'assistant');
    expect(output?.content).toContain(INVENTED);
    expect(output?.citations).toEqual([RETURNED]);
    const answer = await runtime.deps.resources.getAs(SYSTEM_ACTOR, 'common.Message', started.answer);
    expect(answer.error).toBeUndefined();
    expect(answer.citations).toEqual([RETURNED]);
  });
});
