import { countTokens } from '../../shared/context/tokens.js';
import { CREATE_PLAN, SUBMIT_VERDICT, type TaskPayload } from '../../shared/domain/payloads.js';
import type {
  ChatModel,
  ContentBlock,
  ConverseRequest,
  ConverseResponse,
  JsonValue,
} from '../../shared/llm/port.js';

/**
 * A scripted model for the synthetic workload of the fault harness (issue 5: "a synthetic plan
 * of at least 200 tasks with nesting depth 4"). Deterministic, like the offline model, and it
 * reads only the Converse request:
 * - `create_plan` offered → a tree with `shape[d]` subtasks per task at depth d+1 (so
 *   `[3, 3, 4, 5]` is 3 + 9 + 36 + 180 = 228 tasks, depth 4); leaves read like documentation
 *   questions (the researcher is elected and calls `search`), inner tasks like combinations;
 * - inner loop → one `search` call when the tool is offered and no result is in the request
 *   yet, then a text answer naming the task;
 * - `submit_verdict` offered → pass, except: a subtask whose output carries an error fails the
 *   verdict with no corrective (its parent keeps the other subtasks and names the failed one:
 *   the user's answer is partial, issue 21), and the
 *   leaf titled with {@link RETRY_MARK} fails once and gets one corrective subtask (so every run
 *   has a corrective round).
 * Token usage is the cl100k count of the request and the reply, so it is the same for the same
 * request.
 */
export class ScriptedModel implements ChatModel {
  readonly name = 'scripted';

  /**
   * @param shape subtasks per task at each depth (the first entry is the number of root tasks)
   * @param prefix what task titles start with (`S1`, `S1.2`, …); another prefix gives the same
   *   plan with other task texts (the scale bench's warm-up uses one, so that no task text it
   *   counted or parsed is met again in the measured run; instructions and prompts are shared)
   */
  constructor(
    private readonly shape: readonly number[],
    private readonly prefix = 'S',
  ) {}

  /** Number of tasks the plan has. */
  static taskCount(shape: readonly number[]): number {
    let total = 0;
    let level = 1;
    for (const width of shape) {
      level *= width;
      total += level;
    }
    return total;
  }

  async converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    let content: ContentBlock[];
    if (tools.includes(CREATE_PLAN)) {
      content = [
        toolUse(CREATE_PLAN, 'plan', { tasks: level(this.shape, 0, this.prefix) as unknown as JsonValue }),
      ];
    } else if (tools.includes(SUBMIT_VERDICT)) {
      content = [toolUse(SUBMIT_VERDICT, 'verdict', verdict(lastText(request)) as unknown as JsonValue)];
    } else {
      const first =
        request.messages[0]?.content.flatMap((b) => ('text' in b ? [b.text] : [])).join('\n') ?? '';
      const task = first.slice(first.lastIndexOf('## Task'));
      const purpose = /\*\*Purpose:\*\*\s*(.+)/.exec(task)?.[1]?.trim() ?? 'the task';
      const hasResult = request.messages.some((m) => m.content.some((b) => 'toolResult' in b));
      content =
        tools.includes('search') && !hasResult
          ? [toolUse('search', `${request.messages.length}`, { query: purpose })]
          : [{ text: `Done: ${purpose}` }];
    }
    const inputTokens = countTokens(JSON.stringify(request));
    const outputTokens = countTokens(JSON.stringify(content));
    return {
      output: { message: { role: 'assistant', content } },
      stopReason: content.some((b) => 'toolUse' in b) ? 'tool_use' : 'end_turn',
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      metrics: { latencyMs: 0 },
    };
  }
}

/** Marks the one leaf whose first output the scripted supervisor rejects. */
export const RETRY_MARK = '(needs one retry)';

function level(shape: readonly number[], depth: number, prefix: string, root = prefix): TaskPayload[] {
  const width = shape[depth] ?? 0;
  return Array.from({ length: width }, (_, i) => {
    const id = `${prefix}${depth === 0 ? '' : '.'}${i + 1}`;
    const leaf = depth === shape.length - 1;
    if (leaf) {
      const retry =
        id === [`${root}1`, ...Array(shape.length - 1).fill('1')].join('.') ? ` ${RETRY_MARK}` : '';
      return {
        title: `${id}${retry}`,
        purpose: `Answer the question: what does part ${id} of the synthetic document say?`,
        instructions: 'Search the documentation for the part and answer with what it says.',
        applicability: 'A single question answerable from the ingested documentation.',
        evaluation: `The answer names part ${id}.`,
      };
    }
    return {
      title: id,
      purpose: `Answer every part of ${id} and combine the answers.`,
      instructions: `Supervise the ${shape[depth + 1]} subtasks of ${id} and combine their answers into one reply.`,
      applicability: 'A multi-part request split into subtasks that must be combined.',
      evaluation: `Every part of ${id} is answered by a subtask that passes its own evaluation.`,
      subtasks: level(shape, depth + 1, id, root),
    };
  });
}

interface SubtaskView {
  id: string;
  title?: string;
  error?: { message?: string } | null;
}

function verdict(text: string) {
  const match = /```json\s*([\s\S]*?)```/.exec(text);
  const view = match ? (JSON.parse(match[1] as string) as { subtasks?: SubtaskView[] }) : {};
  const subtasks = view.subtasks ?? [];
  const failed = subtasks.filter((s) => s.error);
  const retry = subtasks.filter((s) => s.title?.endsWith(RETRY_MARK));
  if (failed.length > 0) {
    const first = failed[0] as SubtaskView;
    // The root cause, without the "verdict failed…: subtask X failed:" layers of the levels below.
    const cause = (first.error?.message ?? '').replace(
      /^(verdict failed with no corrective subtasks: subtask \S+ failed: )+/,
      '',
    );
    return {
      pass: false,
      reason: `subtask ${first.title} failed: ${cause.slice(0, 1_500)}`,
      subtasks: subtasks.map((s) => ({ id: s.id, pass: !s.error, reason: s.error ? 'failed' : 'ok' })),
      corrective: [],
    };
  }
  if (retry.length > 0) {
    return {
      pass: false,
      reason: `${retry.length} subtask(s) must be redone`,
      subtasks: subtasks.map((s) => ({ id: s.id, pass: !retry.includes(s), reason: 'scripted' })),
      corrective: retry.map((s) => ({
        title: `Retry ${(s.title ?? '').replace(` ${RETRY_MARK}`, '')}`,
        purpose: `Answer the question again: what does part ${(s.title ?? '').replace(` ${RETRY_MARK}`, '')} say?`,
        instructions: 'Search again and answer.',
        applicability: 'A single question answerable from the ingested documentation.',
        evaluation: 'The answer names the part.',
        corrects: s.id,
      })),
    };
  }
  return {
    pass: true,
    reason: `all ${subtasks.length} subtasks pass`,
    subtasks: subtasks.map((s) => ({ id: s.id, pass: true, reason: 'ok' })),
    corrective: [],
  };
}

function lastText(request: ConverseRequest): string {
  const last = [...request.messages].reverse().find((m) => m.role === 'user');
  return (last?.content ?? []).flatMap((b) => ('text' in b ? [b.text] : [])).join('\n');
}

function toolUse(name: string, id: string, input: JsonValue): ContentBlock {
  return { toolUse: { toolUseId: `scripted-${name}-${id}`, name, input } };
}
