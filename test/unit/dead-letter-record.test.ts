import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FullBatchFailureError } from '@aws-lambda-powertools/batch';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context, SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../functions/dead-letter/handler.js';
import rules from '../../policies/rules.json' with { type: 'json' };
import { outputUrn } from '../../shared/domain/common.js';
import { DeadLetterSchema } from '../../shared/domain/dead-letter.js';
import type { Deps } from '../../shared/domain/ports.js';
import { ConfigError, ValidationError } from '../../shared/errors.js';
import {
  DEAD_LETTER_QUEUES_VARIABLE,
  type DeadLetterQueues,
  parseDeadLetterQueues,
  toDeadLetterRecord,
} from '../../shared/events/dead-letter-record.js';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { countedOutputs } from '../../shared/projections/counters.js';
import { LocalProjectionStore } from '../../shared/projections/local.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { AnyResource, Message, Plan, Task } from '../../shared/resources/schemas.js';
import { assembleDeps } from '../../shared/runtime/assemble.js';
import { provideDeps } from '../../shared/runtime/compose.js';
import { consumeDeadLetters, type DeadLetterStepFn } from '../../shared/runtime/dead-letter-consumer.js';
import { parseLimits } from '../../shared/runtime/settings.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { keyOf, keyPrefixOf, urnOfKey } from '../../shared/urn.js';
import { conversation, message, NOW, task, thrownBy, toolCall } from './builders.js';

/**
 * Dead letters as AWS delivers them to the dead-letter function (shared/events/dead-letter-record.ts,
 * shared/runtime/dead-letter-consumer.ts, functions/dead-letter/handler.ts): SQS records of a step's
 * dead-letter queue in the two shapes AWS writes there (test/fixtures/sqs-dead-letter-*.json: a
 * Lambda on-failure invocation record, an EventBridge target dead letter), adapted to the
 * dead-letter step's input; then the handler end to end on the embedded default's adapters
 * (filesystem storage, local projection store) under the `deadletter` policy bundle.
 */

const FIXTURES = join(import.meta.dirname, '..', 'fixtures');
type SqsEvent = { Records: Record<string, unknown>[] };
const fixture = (name: string) =>
  JSON.parse(readFileSync(join(FIXTURES, `sqs-dead-letter-${name}.json`), 'utf8')) as SqsEvent;
const LAMBDA = fixture('lambda-destination');
const EVENTBRIDGE = fixture('eventbridge-target');
const lambdaRecord = LAMBDA.Records[0] as Record<string, unknown>;
const eventBridgeRecord = EVENTBRIDGE.Records[0] as Record<string, unknown>;

const QUEUE = {
  plan: 'arn:aws:sqs:eu-west-1:111122223333:Cld-dev-PlanStepDeadLetterQueue9C8B7A6D-Zx1Cv2Bn3Mm4',
  assistant: eventBridgeRecord.eventSourceARN as string,
  tool: lambdaRecord.eventSourceARN as string,
};
const QUEUES_JSON = JSON.stringify(QUEUE);
const QUEUES: DeadLetterQueues = parseDeadLetterQueues(QUEUES_JSON);

/** The fixture's invocation record, parsed. */
const invocationRecord = () => JSON.parse(lambdaRecord.body as string) as Record<string, unknown>;

/** A record of the Lambda fixture's shape with another body, queue or id. */
function withRecord(
  base: Record<string, unknown>,
  changes: Record<string, unknown>,
): Record<string, unknown> {
  return { ...base, ...changes };
}

function errorOf(fn: () => unknown): ValidationError {
  const error = thrownBy(fn);
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe('parseDeadLetterQueues (CLD_DEAD_LETTER_QUEUES)', () => {
  it('maps each queue ARN to its step', () => {
    expect([...QUEUES]).toEqual([
      [QUEUE.plan, 'plan'],
      [QUEUE.assistant, 'assistant'],
      [QUEUE.tool, 'tool'],
    ]);
  });

  it.each([
    ['missing', undefined, /CLD_DEAD_LETTER_QUEUES is not set/],
    ['not JSON', '{plan:', /CLD_DEAD_LETTER_QUEUES is not JSON/],
    ['empty', '{}', /names no queue/],
    ['not a queue ARN', '{"tool":"arn:aws:sns:eu-west-1:111122223333:topic"}', /an SQS queue ARN/],
    ['a bad step name', `{"Tool":"${QUEUE.tool}"}`, /not a function name such as tool\n.*at Tool/],
    ['one queue for two steps', `{"tool":"${QUEUE.tool}","plan":"${QUEUE.tool}"}`, /one queue for two steps/],
  ])('rejects a value that is %s with a ConfigError naming the variable', (_label, value, message) => {
    const error = thrownBy(() => parseDeadLetterQueues(value));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(DEAD_LETTER_QUEUES_VARIABLE);
    expect((error as Error).message).toMatch(message);
  });
});

describe('toDeadLetterRecord', () => {
  it('adapts a Lambda on-failure invocation record: the event, the attempts and the error of the record', () => {
    const adapted = toDeadLetterRecord(lambdaRecord, QUEUES);
    const record = invocationRecord();

    expect(adapted).toEqual({
      messageId: '2e1424d4-f796-459a-8184-9c92662be6da',
      source: 'lambda-on-failure',
      urn: 'cld:common.Conversation.40f6e82663cd27dd/common.Message.b5d484064d8595e5/plan.Task.0f1e2d3c4b5a6978/tool.Call.9a8b7c6d5e4f3a21',
      receiveCount: 1,
      letter: {
        target: 'tool',
        event: record.requestPayload,
        attempts: 3,
        error: {
          code: 'ToolExecutionError',
          message: 'search failed: index generation indexes/chunks.7.json is corrupt (RetriesExhausted)',
        },
      },
    });
    expect(DeadLetterSchema.safeParse(adapted.letter).success).toBe(true);
  });

  it('counts an event throttled until it aged out (no attempt ran, no response) as one attempt', () => {
    const record = invocationRecord();
    const aged = {
      ...record,
      requestContext: {
        ...(record.requestContext as object),
        condition: 'EventAgeExceeded',
        approximateInvokeCount: 0,
      },
      responseContext: undefined,
      responsePayload: undefined,
    };

    const adapted = toDeadLetterRecord(withRecord(lambdaRecord, { body: JSON.stringify(aged) }), QUEUES);

    expect(adapted.letter.attempts).toBe(1);
    expect(adapted.letter.error).toEqual({
      code: 'EventAgeExceeded',
      message: 'no attempt returned a response (EventAgeExceeded)',
    });
  });

  it('adapts an EventBridge target dead letter: the body is the event, the error in the attributes', () => {
    const adapted = toDeadLetterRecord(eventBridgeRecord, QUEUES);

    expect(adapted.source).toBe('eventbridge-target');
    expect(adapted.urn).toBe(
      'cld:common.Conversation.40f6e82663cd27dd/common.Message.b5d484064d8595e5/plan.Task.0f1e2d3c4b5a6978',
    );
    expect(adapted.receiveCount).toBe(2);
    expect(adapted.letter).toEqual({
      target: 'assistant',
      event: JSON.parse(eventBridgeRecord.body as string),
      // RETRY_ATTEMPTS = 2 retries after the first attempt.
      attempts: 3,
      error: {
        code: 'NO_PERMISSIONS',
        message:
          'EventBridge could not deliver the event to the function: Lambda returned AccessDeniedException: ' +
          'events.amazonaws.com is not authorized to perform lambda:InvokeFunction',
      },
    });
  });

  it('rejects a body that is not JSON, naming the message and its queue', () => {
    const error = errorOf(() =>
      toDeadLetterRecord(withRecord(lambdaRecord, { body: '{"version":"1.0",' }), QUEUES),
    );

    expect(error.message).toMatch(/^dead letter 2e1424d4-f796-459a-8184-9c92662be6da: body is not JSON/);
    expect(error.details).toEqual({ messageId: '2e1424d4-f796-459a-8184-9c92662be6da', queue: QUEUE.tool });
  });

  it('rejects a record from a queue that is not a step dead-letter queue, listing the steps it knows', () => {
    const other = 'arn:aws:sqs:eu-west-1:111122223333:someone-elses-queue';
    const error = errorOf(() =>
      toDeadLetterRecord(withRecord(lambdaRecord, { eventSourceARN: other }), QUEUES),
    );

    expect(error.message).toContain(`comes from ${other}, which is not the dead-letter queue of a step`);
    expect(error.message).toContain('CLD_DEAD_LETTER_QUEUES names plan, assistant, tool');
  });

  it.each([
    ['an event without error attributes', { messageAttributes: {} }, /neither a Lambda invocation record/],
    [
      'an invocation record without requestContext fields',
      { body: JSON.stringify({ requestContext: {}, requestPayload: {} }) },
      /not a Lambda invocation record/,
    ],
    [
      'an invocation record whose payload is not a resource event',
      {
        body: JSON.stringify({
          ...invocationRecord(),
          requestPayload: { ...(invocationRecord().requestPayload as object), detail: { bucket: {} } },
        }),
      },
      /does not carry a resource's S3 Object Created event/,
    ],
  ])('rejects %s', (_label, changes, message) => {
    const base = 'body' in changes ? lambdaRecord : eventBridgeRecord;
    expect(errorOf(() => toDeadLetterRecord(withRecord(base, changes), QUEUES)).message).toMatch(message);
  });

  it('rejects what is not an SQS record, keeping its messageId for the batch response', () => {
    const error = errorOf(() =>
      toDeadLetterRecord(withRecord(lambdaRecord, { eventSource: 'aws:sns' }), QUEUES),
    );

    expect(error.message).toMatch(/^not an SQS record/);
    expect(error.details).toEqual({ messageId: '2e1424d4-f796-459a-8184-9c92662be6da' });
  });
});

describe('the dead-letter function, end to end on local adapters with the deadletter policy bundle', () => {
  const BUCKET = 'cld-dev-resources';
  let dataDir: string;
  let storage: FilesystemStorage;
  let deps: Deps;
  let counter = 0;
  let seeded: {
    task: Task;
    call: string;
    leaf: Task;
    supervisor: Task;
    subtask: Task;
    subtaskOutput: Message;
    lonelyMessage: string;
    orphanCall: string;
  };

  const context = {
    functionName: 'cld-deadletter',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:111122223333:function:cld-deadletter',
    memoryLimitInMB: '1024',
    awsRequestId: 'a2b2c3d4-0000-4000-8000-000000000001',
    logGroupName: '/aws/lambda/cld-deadletter',
    logStreamName: 'test',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => 60_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  } satisfies Context;

  async function eventOf(urn: string) {
    return s3ObjectCreatedEvent(BUCKET, keyOf(urn), (await storage.get(keyOf(urn))).length, NOW);
  }

  /** A Lambda on-failure record of `step`'s queue for the resource at `urn` (a fresh message id). */
  async function destinationRecord(step: keyof typeof QUEUE, urn: string) {
    const record = invocationRecord();
    counter += 1;
    return withRecord(lambdaRecord, {
      messageId: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`,
      eventSourceARN: QUEUE[step],
      body: JSON.stringify({ ...record, requestPayload: await eventOf(urn) }),
    });
  }

  /** An EventBridge target dead letter of `step`'s queue for the resource at `urn`. */
  async function targetRecord(step: keyof typeof QUEUE, urn: string) {
    counter += 1;
    return withRecord(eventBridgeRecord, {
      messageId: `00000000-0000-4000-9000-${String(counter).padStart(12, '0')}`,
      eventSourceARN: QUEUE[step],
      body: JSON.stringify(await eventOf(urn)),
    });
  }

  const invoke = (records: Record<string, unknown>[]) =>
    handler({ Records: records }, context) as Promise<SQSBatchResponse>;
  const keys = () => storage.findByPrefix('cld/common.Conversation.');
  const read = async <T>(urn: string) => JSON.parse((await storage.get(keyOf(urn))).toString('utf8')) as T;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cld-dead-letter-fn-'));
    storage = new FilesystemStorage(join(dataDir, 'resources'));
    // The state the steps left behind, written directly (no bus): a leaf task with a tool call, a
    // second leaf, a supervisor whose subtask has output, and a user Message nothing planned yet.
    const put = (resource: AnyResource) => storage.put(keyOf(resource.meta.id), JSON.stringify(resource));
    const c = conversation('dead letters');
    const m = message(c.meta.id, 'question', 'Which bucket settings matter?');
    const t = task(m.meta.id, 'search buckets');
    const leaf = task(m.meta.id, 'search events');
    const sup = task(m.meta.id, 'combine');
    const sub = task(sup.meta.id, 'part', 2);
    const supervisor: Task = { ...sup, subtasks: [sub.meta.id] };
    const plan: Plan = {
      meta: withMeta({ type: 'plan.Plan', name: 'plan', parent: m.meta.id }, NOW),
      tasks: [t.meta.id, leaf.meta.id, supervisor.meta.id],
      model: 'offline',
    };
    const call = toolCall(t.meta.id, `${t.meta.id}/common.Message.0123456789abcdef`);
    const subtaskOutput = message(sub.meta.id, 'output', 'part done', 'assistant');
    const unplanned = conversation('never planned');
    const lonely = message(unplanned.meta.id, 'question', 'Hello?');
    // A call whose task was never stored: the step itself fails on it.
    const orphanTask = task(m.meta.id, 'never stored');
    const orphanCall = toolCall(orphanTask.meta.id, `${orphanTask.meta.id}/common.Message.0123456789abcdef`);
    for (const resource of [c, m, plan, t, leaf, supervisor, sub, call, subtaskOutput, unplanned, lonely])
      await put(resource);
    await put(orphanCall);
    seeded = {
      task: t,
      call: call.meta.id,
      leaf,
      supervisor,
      subtask: sub,
      subtaskOutput,
      lonelyMessage: lonely.meta.id,
      orphanCall: orphanCall.meta.id,
    };

    deps = await assembleDeps({
      storage,
      indexStorage: new FilesystemStorage(dataDir),
      model: new OfflineChatModel(),
      limits: parseLimits(undefined),
      logger: new Logger({ serviceName: 'cld', logLevel: 'SILENT' }),
      projections: new LocalProjectionStore(),
      policy: new RulesPolicy(rules, { function: 'deadletter' }),
    });
    provideDeps(deps);
    process.env[DEAD_LETTER_QUEUES_VARIABLE] = QUEUES_JSON;
  });

  afterAll(async () => {
    provideDeps(undefined);
    delete process.env[DEAD_LETTER_QUEUES_VARIABLE];
    await rm(dataDir, { recursive: true, force: true });
  });

  it('fails the task of a poison tool.Call, and a second copy of the letter writes nothing new', async () => {
    const before = await keys();

    const first = await invoke([await destinationRecord('tool', seeded.call)]);

    expect(first).toEqual({ batchItemFailures: [] });
    const written = (await keys()).filter((key) => !before.includes(key));
    expect(written).toEqual([keyOf(outputUrn(seeded.task.meta.id))]);
    const output = await read<Message>(outputUrn(seeded.task.meta.id));
    expect(output.error?.code).toBe('DELIVERY_FAILED');
    expect(output.error?.message).toBe(
      `event for ${seeded.call} failed 3 times in the tool step: ` +
        'search failed: index generation indexes/chunks.7.json is corrupt (RetriesExhausted)',
    );

    const stored = await storage.get(keyOf(outputUrn(seeded.task.meta.id)));
    const again = await invoke([await destinationRecord('tool', seeded.call)]);

    expect(again).toEqual({ batchItemFailures: [] });
    expect(await keys()).toEqual([...before, ...written].sort());
    expect((await storage.get(keyOf(outputUrn(seeded.task.meta.id)))).equals(stored)).toBe(true);
  });

  it('reports only the records it cannot handle, writes nothing for them, and handles the rest', async () => {
    const before = await keys();
    const malformed = withRecord(await destinationRecord('tool', seeded.call), { body: 'not json' });
    const foreign = withRecord(await destinationRecord('tool', seeded.call), {
      eventSourceARN: 'arn:aws:sqs:eu-west-1:111122223333:unrelated',
    });
    // The step itself fails: the call's task was never stored (NotFoundError).
    const orphan = await destinationRecord('tool', seeded.orphanCall);
    const good = await targetRecord('assistant', seeded.leaf.meta.id);

    const response = await invoke([malformed, foreign, orphan, good]);

    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: malformed.messageId },
      { itemIdentifier: foreign.messageId },
      { itemIdentifier: orphan.messageId },
    ]);
    const written = (await keys()).filter((key) => !before.includes(key));
    expect(written).toEqual([keyOf(outputUrn(seeded.leaf.meta.id))]);
    const output = await read<Message>(outputUrn(seeded.leaf.meta.id));
    expect(output.error?.message).toMatch(
      /failed 3 times in the assistant step: EventBridge could not deliver the event to the function/,
    );
  });

  it('fails planning of a dead-lettered user Message: a Plan with the error, and the answer says so', async () => {
    const response = await invoke([await destinationRecord('plan', seeded.lonelyMessage)]);

    expect(response).toEqual({ batchItemFailures: [] });
    const under = (await keys()).filter((key) => key.startsWith(keyPrefixOf(seeded.lonelyMessage)));
    expect(under).toHaveLength(1);
    const plan = await read<Plan>(urnOfKey(under[0] as string) as string);
    expect(plan.meta.type).toBe('plan.Plan');
    expect(plan.tasks).toEqual([]);
    expect(plan.error?.code).toBe('DELIVERY_FAILED');
    const root = seeded.lonelyMessage.slice(0, seeded.lonelyMessage.indexOf('/'));
    const answers = (await keys()).filter(
      (key) => key.endsWith('_Conversation-Message.json') && key.startsWith(keyPrefixOf(root)),
    );
    answers.splice(answers.indexOf(keyOf(seeded.lonelyMessage)), 1);
    expect(answers).toHaveLength(1);
    const answer = await read<Message>(urnOfKey(answers[0] as string) as string);
    expect(answer.role).toBe('assistant');
    expect(answer.content).toMatch(
      /^I could not plan this request: event for .* failed 3 times in the plan step/,
    );
  });

  it('counts a dead-lettered subtask output for its supervisor, once, and fails the supervisor', async () => {
    const supervisor = seeded.supervisor.meta.id;
    const letter = await destinationRecord('assistant', seeded.subtaskOutput.meta.id);

    expect(
      await invoke([letter, await destinationRecord('assistant', seeded.subtaskOutput.meta.id)]),
    ).toEqual({
      batchItemFailures: [],
    });

    expect(await countedOutputs(deps.projections, supervisor, 0)).toBe(1);
    const output = await read<Message>(outputUrn(supervisor));
    expect(output.error?.code).toBe('DELIVERY_FAILED');
    expect(output.error?.message).toContain(`event for ${seeded.subtaskOutput.meta.id} failed 3 times`);
    expect((await read<Message>(seeded.subtaskOutput.meta.id)).error).toBeUndefined();
  });

  it('fails the invocation when no record of the batch can be handled (FullBatchFailureError: SQS redrives it)', async () => {
    const before = await keys();
    const malformed = withRecord(await destinationRecord('tool', seeded.call), { body: 'not json' });
    const orphan = await destinationRecord('tool', seeded.orphanCall);

    await expect(invoke([malformed, orphan])).rejects.toBeInstanceOf(FullBatchFailureError);

    expect(await keys()).toEqual(before);
  });

  it('runs the step on the records one after another, in batch order', async () => {
    const spans: string[] = [];
    const step: DeadLetterStepFn = async (input) => {
      spans.push(`start ${input.target}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      spans.push(`end ${input.target}`);
      return { action: 'recorded', urn: input.target };
    };
    const records = [
      await destinationRecord('tool', seeded.call),
      await targetRecord('assistant', seeded.leaf.meta.id),
    ];

    const response = await consumeDeadLetters({ Records: records }, deps, QUEUES, step);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(spans).toEqual(['start tool', 'end tool', 'start assistant', 'end assistant']);
  });

  it('fails the invocation when the event is not an SQS event (nothing to report item by item)', async () => {
    await expect(handler({ detail: {} }, context)).rejects.toBeInstanceOf(ValidationError);
    await expect(handler({ Records: [{ body: '{}' }] }, context)).rejects.toThrow(/has no messageId/);
  });
});
