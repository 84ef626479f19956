import { beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_CONSUMPTION, FUNCTIONS, type FunctionSpec } from '../../infra/lib/functions.js';
import { ConfigError } from '../../shared/errors.js';
import {
  DEAD_LETTER_QUEUES_VARIABLE,
  parseDeadLetterQueues,
} from '../../shared/events/dead-letter-record.js';
import {
  API_CONTEXT,
  isAllowed,
  logicalId,
  resolveValue,
  resourcesOfType,
  roleStatements,
  type Statement,
  type Synthesized,
  synthesize,
} from './helpers.js';

/**
 * The dead-letter consumer in the synthesized template (issue 5's guarantee in AWS): the
 * `deadletter` function reads the dead-letter queues of the task-tree steps through SQS event
 * source mappings that report batch item failures, with exactly the SQS permissions the
 * mappings need; the queues it reads redrive what it cannot handle to its own queue, which has
 * an alarm; the reply step's queue is left for the operator. Bundling is skipped.
 */

const NAMES = Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[];
const CONSUMED = NAMES.filter((name) => (FUNCTIONS[name] as FunctionSpec).deadLetters === 'fail-task');
const RETAINED = NAMES.filter((name) => (FUNCTIONS[name] as FunctionSpec).deadLetters === 'retain');
const SQS_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

let dev: Synthesized;
let consumerFn: string;
let consumerRole: string;
let unprocessed: string;

const pascal = (name: string) => `${name[0]?.toUpperCase()}${name.slice(1)}`;
const dlqOf = (name: string) => logicalId(dev.json, 'AWS::SQS::Queue', `${pascal(name)}StepDeadLetterQueue`);
const consumerStatements = (): Statement[] => roleStatements(dev.json, consumerRole);

beforeAll(() => {
  dev = synthesize({ context: API_CONTEXT });
  consumerFn = logicalId(dev.json, 'AWS::Lambda::Function', 'DeadletterStepFunction');
  consumerRole = logicalId(dev.json, 'AWS::IAM::Role', 'DeadletterStepRole');
  unprocessed = logicalId(dev.json, 'AWS::SQS::Queue', 'DeadletterStepUnprocessedQueue');
});

describe('the function table', () => {
  it('has one dead-letter consumer, and the task-tree steps hand it their letters', () => {
    expect(NAMES.filter((name) => FUNCTIONS[name].trigger === 'sqs')).toEqual(['deadletter']);
    expect([...CONSUMED].sort()).toEqual(['assistant', 'plan', 'tool']);
    expect(RETAINED).toEqual(['reply', 'sweeper']);
  });
});

describe('event source mappings', () => {
  it('reads exactly the queues of the task-tree steps, nothing else', () => {
    const mappings = resourcesOfType(dev.json, 'AWS::Lambda::EventSourceMapping').map(
      (id) => dev.json.Resources[id]?.Properties as Record<string, unknown>,
    );
    const sources = mappings.map(
      (m) => (m.EventSourceArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0],
    );
    expect(sources.sort()).toEqual(CONSUMED.map(dlqOf).sort());
    for (const name of RETAINED) expect(sources).not.toContain(dlqOf(name));
    expect(sources).not.toContain(unprocessed);
  });

  it.each(
    CONSUMED,
  )('%s: batches of 10, batch item failures reported, at most 2 concurrent invocations', (name) => {
    dev.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [dlqOf(name), 'Arn'] },
      FunctionName: { Ref: consumerFn },
      BatchSize: DEAD_LETTER_CONSUMPTION.batchSize,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: DEAD_LETTER_CONSUMPTION.maxConcurrency },
    });
  });

  it('are created after the consumer role can read the queues (the function depends on its policy)', () => {
    const policy = logicalId(dev.json, 'AWS::IAM::Policy', 'DeadletterStepRoleDefaultPolicy');
    const statements = (dev.json.Resources[policy]?.Properties?.PolicyDocument as { Statement: Statement[] })
      .Statement;
    expect(statements.some((s) => s.Sid === 'ConsumeDeadLetterQueues')).toBe(true);
    expect(dev.json.Resources[consumerFn]?.DependsOn).toEqual(expect.arrayContaining([policy]));
  });
});

describe('the consumer role', () => {
  it.each(CONSUMED)('may receive, delete and read the attributes of the %s queue', (name) => {
    for (const action of SQS_ACTIONS)
      expect(isAllowed(consumerStatements(), action, `<${dlqOf(name)}.Arn>`), action).toBe(true);
  });

  it('has no SQS access to the retained queues or to its own queue, and only those three actions', () => {
    const queues = [...RETAINED.map(dlqOf), unprocessed];
    for (const queue of queues) {
      for (const action of [...SQS_ACTIONS, 'sqs:SendMessage'])
        expect(isAllowed(consumerStatements(), action, `<${queue}.Arn>`), `${action} ${queue}`).toBe(false);
    }
    const actions = consumerStatements()
      .flatMap((s) => [s.Action].flat())
      .filter((a) => a.startsWith('sqs:'));
    expect([...new Set(actions)].sort()).toEqual([...SQS_ACTIONS].sort());
    for (const name of CONSUMED) {
      for (const action of ['sqs:SendMessage', 'sqs:ChangeMessageVisibility', 'sqs:PurgeQueue'])
        expect(isAllowed(consumerStatements(), action, `<${dlqOf(name)}.Arn>`), action).toBe(false);
    }
  });

  it('reads the conversations and the catalog, never the chunk index or a document (it does not search)', () => {
    const bucket = `<${logicalId(dev.json, 'AWS::S3::Bucket', 'ResourcesBucket')}.Arn>`;
    const allowed = (key: string) => isAllowed(consumerStatements(), 's3:GetObject', `${bucket}/${key}`);
    expect(
      allowed(
        'cld/common.Conversation.0123456789abcdef/common.Message.0123456789abcdef_Conversation-Message.json',
      ),
    ).toBe(true);
    expect(allowed('cld/common.Assistant.0123456789abcdef_Assistant.json')).toBe(true);
    for (const key of [
      'indexes/chunks.1.json',
      'cld/doc.Document.0123456789abcdef_Document.json',
      'cld/doc.Document.0123456789abcdef/doc.Chunk.0123456789abcdef_Document-Chunk.json',
    ]) {
      expect(allowed(key), key).toBe(false);
    }
    expect(isAllowed(consumerStatements(), 's3:ListBucket', bucket, { 's3:prefix': 'indexes/chunks.' })).toBe(
      false,
    );
  });

  it('names the queues it may read, by step, in CLD_DEAD_LETTER_QUEUES, which the handler parses', () => {
    const env = (
      dev.json.Resources[consumerFn]?.Properties?.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(env.CLD_FUNCTION).toBe('deadletter');
    const map = JSON.parse(resolveValue(env[DEAD_LETTER_QUEUES_VARIABLE])) as Record<string, string>;
    expect(map).toEqual(Object.fromEntries(CONSUMED.map((name) => [name, `<${dlqOf(name)}.Arn>`])));
    // As deployed (each GetAtt an ARN), the value parses: every queue maps back to its step.
    const deployed = JSON.stringify(
      Object.fromEntries(
        Object.entries(map).map(([step]) => [step, `arn:aws:sqs:eu-west-1:111122223333:Cld-dev-${step}-dlq`]),
      ),
    );
    const queues = parseDeadLetterQueues(deployed);
    expect([...queues.values()].sort()).toEqual([...CONSUMED].sort());
  });

  it('is not an EventBridge target: no rule invokes it, no asynchronous settings, no queue of the steps', () => {
    const targets = resourcesOfType(dev.json, 'AWS::Events::Rule').flatMap(
      (id) => (dev.json.Resources[id]?.Properties?.Targets as { Arn: unknown }[]) ?? [],
    );
    expect(targets.map((t) => resolveValue(t.Arn))).not.toContain(`<${consumerFn}.Arn>`);
    const configs = resourcesOfType(dev.json, 'AWS::Lambda::EventInvokeConfig').filter(
      (id) => (dev.json.Resources[id]?.Properties?.FunctionName as { Ref?: string }).Ref === consumerFn,
    );
    expect(configs).toEqual([]);
    expect(dev.json.Resources[consumerFn]?.Properties?.DeadLetterConfig).toBeUndefined();
    expect(
      resourcesOfType(dev.json, 'AWS::SQS::Queue').filter((id) => id.startsWith('DeadletterStep')),
    ).toEqual([unprocessed]);
  });
});

describe('queues', () => {
  it.each(
    CONSUMED,
  )('%s: redrives to the consumer queue after 5 receives, visibility 6 × the consumer timeout', (name) => {
    const queue = dev.json.Resources[dlqOf(name)]?.Properties as Record<string, unknown>;
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [unprocessed, 'Arn'] },
      maxReceiveCount: DEAD_LETTER_CONSUMPTION.maxReceiveCount,
    });
    const timeout = dev.json.Resources[consumerFn]?.Properties?.Timeout as number;
    expect(timeout).toBe(FUNCTIONS.deadletter.timeoutSeconds);
    expect(queue.VisibilityTimeout).toBe(6 * timeout);
  });

  it.each(
    RETAINED,
  )('%s: keeps its letters (no redrive, default visibility), with the written cdk-nag reason', (name) => {
    const queue = dev.json.Resources[dlqOf(name)]?.Properties as Record<string, unknown>;
    expect(queue.RedrivePolicy).toBeUndefined();
    expect(queue.VisibilityTimeout).toBeUndefined();
    const acknowledgedOn = (queueOf: string) =>
      dev.stack.node
        .findAll()
        .filter((c) => c.node.path.endsWith(`/${pascal(queueOf)}Step/DeadLetterQueue`))
        .flatMap((c) => c.node.metadata)
        .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
        .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
    expect(acknowledgedOn(name)).toContainEqual([
      'Annotation::AwsSolutions-SQS3',
      expect.stringContaining('itself a dead-letter queue'),
    ]);
    // The consumed queues satisfy the rule with their redrive policy: nothing acknowledged there.
    for (const consumed of CONSUMED) expect(acknowledgedOn(consumed), consumed).toEqual([]);
  });

  it('the consumer queue is encrypted, TLS-only, keeps letters 14 days and alarms on any message in it', () => {
    const queue = dev.json.Resources[unprocessed]?.Properties as Record<string, unknown>;
    expect(queue.SqsManagedSseEnabled).toBe(true);
    expect(queue.MessageRetentionPeriod).toBe(14 * 24 * 3600);
    expect(queue.RedrivePolicy).toBeUndefined();
    const policy = resourcesOfType(dev.json, 'AWS::SQS::QueuePolicy')
      .map(
        (id) =>
          dev.json.Resources[id]?.Properties as {
            Queues: unknown[];
            PolicyDocument: { Statement: Statement[] };
          },
      )
      .find((p) => p.Queues.some((q) => (q as { Ref?: string }).Ref === unprocessed));
    expect(policy?.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    // Messages moved by SQS redrive are not counted as sent: the alarm watches what is visible.
    dev.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Statistic: 'Maximum',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [unprocessed, 'QueueName'] } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('keeps a retained queue in ALARM while letters wait there, and only a retained one', () => {
    const waiting = (name: string) =>
      resourcesOfType(dev.json, 'AWS::CloudWatch::Alarm').filter((id) => {
        const alarm = dev.json.Resources[id]?.Properties as {
          MetricName?: string;
          Dimensions?: { Value: unknown }[];
        };
        return (
          alarm.MetricName === 'ApproximateNumberOfMessagesVisible' &&
          JSON.stringify(alarm.Dimensions?.[0]?.Value) ===
            JSON.stringify({ 'Fn::GetAtt': [dlqOf(name), 'QueueName'] })
        );
      });
    for (const name of RETAINED) expect(waiting(name), name).toHaveLength(1);
    for (const name of CONSUMED) expect(waiting(name), name).toEqual([]);
  });

  it('leaves no cdk-nag finding on the consumer, the queues or their alarms', () => {
    const findings = dev.report.pluginReports
      .flatMap((report) => report.violations)
      .filter((v) =>
        (v.violatingConstructs ?? []).some((c) => /DeadletterStep|DeadLetterQueue/.test(c.constructPath)),
      );
    expect(findings).toEqual([]);
  });
});

describe('synth fails with a clear error', () => {
  const without = (name: string) =>
    Object.fromEntries(Object.entries(FUNCTIONS).filter(([key]) => key !== name)) as Record<
      string,
      FunctionSpec
    >;

  it('when a step hands its letters to a consumer the table does not have', () => {
    const synth = () => synthesize({ stack: { functions: without('deadletter') } });
    expect(synth).toThrow(ConfigError);
    expect(synth).toThrow(/deadLetters is fail-task, but the function table has no dead-letter consumer/);
  });

  it('when the table has two consumers', () => {
    const functions = { ...FUNCTIONS, spare: FUNCTIONS.deadletter } as Record<string, FunctionSpec>;
    expect(() => synthesize({ stack: { functions } })).toThrow(
      /2 dead-letter consumers \(trigger "sqs": deadletter, spare\)/,
    );
  });

  it('when an EventBridge function does not say what becomes of its dead letters', () => {
    const { deadLetters: _omitted, ...tool } = FUNCTIONS.tool;
    const functions = { ...FUNCTIONS, tool } as Record<string, FunctionSpec>;
    expect(() => synthesize({ stack: { functions } })).toThrow(
      /function tool: an eventbridge function must say what becomes of its dead letters/,
    );
  });
});
