/**
 * A model error that no retry can fix (Bedrock's `AccessDeniedException`, `ValidationException`:
 * a non-retryable `ModelError`) fails the step's work at once, in the plan step as in the
 * assistant step: the user gets an answer naming the error after one call, the event is not
 * retried and nothing is dead-lettered. A retryable one (throttling) fails the invocation, so the
 * event is retried and the conversation still completes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startConversation } from '../../shared/domain/conversation.js';
import { CREATE_PLAN, SUBMIT_VERDICT } from '../../shared/domain/payloads.js';
import { ModelError } from '../../shared/errors.js';
import type { ChatModel, ConverseRequest, ConverseResponse } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Message, Plan } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { childUrn } from '../../shared/urn.js';
import { ScriptedModel } from '../faults/scripted-model.js';

type Step = 'plan' | 'turn' | 'verdict';

/** The scripted model, with the calls of one kind of step failing as `fail` says. */
class FailingModel implements ChatModel {
  readonly name = 'failing';
  readonly calls: Record<Step, number> = { plan: 0, turn: 0, verdict: 0 };
  private readonly inner = new ScriptedModel([2]);
  constructor(
    private readonly step: Step,
    /** The error of the step's `call`th call, `'no tool call'` for a reply without one, or undefined. */
    private readonly fail: (call: number) => ModelError | 'no tool call' | undefined,
  ) {}
  converse(request: ConverseRequest): Promise<ConverseResponse> {
    const tools = request.toolConfig?.tools.map((t) => t.toolSpec.name) ?? [];
    const step: Step = tools.includes(CREATE_PLAN)
      ? 'plan'
      : tools.includes(SUBMIT_VERDICT)
        ? 'verdict'
        : 'turn';
    const call = ++this.calls[step];
    const outcome = step === this.step ? this.fail(call) : undefined;
    if (outcome === 'no tool call')
      return Promise.resolve({
        output: { message: { role: 'assistant', content: [{ text: 'Here is my plan: do it.' }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: 40, outputTokens: 7, totalTokens: 47 },
        metrics: { latencyMs: 0 },
      });
    return outcome ? Promise.reject(outcome) : this.inner.converse(request);
  }
}

const REJECTED = () =>
  new ModelError('ValidationException: The provided model identifier is invalid.', { retryable: false });
const MALFORMED = () =>
  new ModelError('Bedrock Converse (m) returned a malformed response: output.message: Required', {
    retryable: false,
    malformed: true,
  });

describe('model errors in the steps', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  async function run(model: FailingModel) {
    const dataDir = await mkdtemp(join(tmpdir(), 'cld-model-errors-'));
    dirs.push(dataDir);
    const runtime = await createLocalRuntime({ dataDir, model, backoffMs: () => 1 });
    const started = await startConversation(runtime.deps.resources, {
      user: 'cli:model-errors',
      channel: { kind: 'cli' },
      content: 'Run the synthetic plan.',
      conversationName: 'model-errors',
    });
    await runtime.bus.idle();
    const answer = (await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', started.answer)) as
      | Message
      | undefined;
    const plan = (await runtime.deps.resources.find(
      SYSTEM_ACTOR,
      'plan.Plan',
      childUrn(started.message, 'plan.Plan', 'plan'),
    )) as Plan | undefined;
    return { answer, plan, deadLetters: runtime.bus.deadLetters };
  }

  it('a rejected planning call fails the answer after one call, with no retry and no dead letter', async () => {
    const model = new FailingModel('plan', REJECTED);
    const { answer, plan, deadLetters } = await run(model);

    expect(model.calls.plan).toBe(1);
    expect(answer?.error?.message).toContain('ValidationException');
    expect(plan?.tasks).toEqual([]);
    expect(plan?.usage).toBeUndefined(); // a rejected call used no tokens and is not charged
    expect(deadLetters).toHaveLength(0);
  });

  it('a malformed planning reply gets the second attempt, as an invalid plan does', async () => {
    const model = new FailingModel('plan', (call) => (call === 1 ? MALFORMED() : undefined));
    const { answer, plan, deadLetters } = await run(model);

    expect(model.calls.plan).toBe(2);
    expect(answer?.error).toBeUndefined();
    expect(plan?.tasks).toHaveLength(2);
    expect(deadLetters).toHaveLength(0);
  });

  it('two malformed planning replies fail the answer after two calls', async () => {
    const model = new FailingModel('plan', MALFORMED);
    const { answer, plan } = await run(model);

    expect(model.calls.plan).toBe(2);
    expect(answer?.error?.message).toContain('malformed response');
    expect(plan?.usage).toBeUndefined();
  });

  it('a rejected call after an invalid plan fails the answer and charges what the first call used', async () => {
    const model = new FailingModel('plan', (call) => (call === 1 ? 'no tool call' : REJECTED()));
    const { answer, plan } = await run(model);

    expect(model.calls.plan).toBe(2);
    expect(answer?.error?.message).toContain('ValidationException');
    expect(plan?.usage).toEqual({ inputTokens: 40, outputTokens: 7, totalTokens: 47 });
  });

  it('a rejected inner-loop call fails its task once, and the answer names the error', async () => {
    const model = new FailingModel('turn', REJECTED);
    const { answer, deadLetters } = await run(model);

    expect(model.calls.turn).toBe(2); // one per task of the plan's two, none repeated
    expect(answer?.error?.message).toContain('ValidationException');
    expect(deadLetters).toHaveLength(0);
  });

  it('a throttled planning call is retried with its event, and the conversation completes', async () => {
    const model = new FailingModel('plan', (call) =>
      call === 1 ? new ModelError('ThrottlingException: Too many requests', { retryable: true }) : undefined,
    );
    const { answer, plan, deadLetters } = await run(model);

    expect(model.calls.plan).toBe(2);
    expect(answer?.error).toBeUndefined();
    expect(plan?.tasks).toHaveLength(2);
    expect(deadLetters).toHaveLength(0);
  });
});
