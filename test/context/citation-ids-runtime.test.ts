import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import { CREATE_PLAN } from '../../shared/domain/payloads.js';
import type { ChatModel, ContentBlock, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';

/**
 * Citation ids end to end (issue 25 item 2), real handlers on the local runtime with a scripted
 * model: the model sees search hits as `[1]`, never a URN; it reads `[1]` (stored and run as the
 * chunk's URN) and answers citing `[1]`; the output Message carries the URN, in its text and in
 * `citations`.
 */

const DOC = `# Widgets

## Enabling notifications

Widgets send notifications to the bus when you set the flag:

\`\`\`ts
new Widget(this, 'W', { notificationsEnabled: true });
\`\`\`
`;

class IdCitingModel implements ChatModel {
  readonly name = 'id-citing';
  readonly seen: ConverseRequest[] = [];

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    const turns = request.messages.filter((m) => m.role === 'assistant').length;
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      const task = {
        title: 'Widget notifications',
        purpose: 'Answer the question: How do I enable widget notifications?',
        instructions: 'Search the documentation and answer with citations.',
        applicability: 'A single question answerable from the ingested documentation.',
        evaluation: 'The answer cites a chunk.',
      };
      content = [{ toolUse: { toolUseId: 'plan', name: CREATE_PLAN, input: { tasks: [task] } } }];
    } else {
      this.seen.push(request);
      if (turns === 0)
        content = [
          { toolUse: { toolUseId: 's-1', name: 'search', input: { query: 'widget notifications' } } },
        ];
      else if (turns === 1)
        content = [{ toolUse: { toolUseId: 'r-1', name: 'read', input: { urn: '[1]' } } }];
      else content = [{ text: 'Set `notificationsEnabled` [1].\n\nSources:\n- [1]' }];
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
const model = new IdCitingModel();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-citation-ids-'));
  await writeFile(join(dir, 'widgets.md'), DOC);
  runtime = await createLocalRuntime({ dataDir: join(dir, 'data'), model, backoffMs: () => 5 });
  await ingest(['widgets.md'], {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: dir,
  });
  await runtime.bus.idle();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

describe('citation ids', () => {
  it('shows [n] to the model, runs read [1] as the URN, and stores the answer with URN citations', async () => {
    const started = await startConversation(runtime.deps.resources, {
      user: 'u-ids',
      channel: { kind: 'cli' },
      content: 'How do I enable widget notifications?',
      conversationName: 'citation-ids',
    });
    await runtime.bus.idle();
    const all = await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation);
    const search = (all as Message[]).find((m) => m.role === 'tool' && m.content.includes('"results"'));
    const chunk = (JSON.parse(search?.content ?? '{}') as { results?: { urn: string }[] }).results?.[0]?.urn;
    expect(chunk).toMatch(/^cld:doc\.Document\.[0-9a-f]+\/doc\.Chunk\.[0-9a-f]+$/);

    // What the model read: the hit as [1] with its code as written, no URN anywhere in the results.
    const answerTurn = model.seen.at(-1) as ConverseRequest;
    const results = answerTurn.messages.flatMap((m) =>
      m.content.flatMap((b) =>
        'toolResult' in b ? b.toolResult.content.map((c) => ('text' in c ? c.text : '')) : [],
      ),
    );
    expect(results[0]).toMatch(/^\[1\] Widgets › Enabling notifications — widgets\.md\n/);
    expect(results[0]).toContain("new Widget(this, 'W', { notificationsEnabled: true });");
    expect(results.join('\n')).not.toContain('cld:doc.');

    // The read of "[1]" was stored (and run) as the chunk's URN.
    const read = all.find(
      (r): r is ToolCallResource =>
        r.meta.type === 'tool.Call' && (r as ToolCallResource).call.name === 'read',
    );
    expect(read?.call.input).toEqual({ urn: chunk });

    const answer = await runtime.deps.resources.getAs(SYSTEM_ACTOR, 'common.Message', started.answer);
    expect(answer.error).toBeUndefined();
    expect(answer.citations).toEqual([chunk]);
    expect(answer.content).toContain(`Set \`notificationsEnabled\` ${chunk}.`);
    expect(answer.content).not.toContain('[1]');
  });
});
