/**
 * The offline model's answers and supervision, part by part (issue 21 items 2–4): objections
 * about content, corrective rounds over the whole corpus that end when they add nothing, back-
 * references that carry the earlier subject and its API, and answers that lead with the fact.
 */
import { describe, expect, it } from 'vitest';
import {
  CREATE_PLAN,
  CREATE_PLAN_SPEC,
  SUBMIT_VERDICT_SPEC,
  type TaskPayload,
} from '../../shared/domain/payloads.js';
import {
  dangles,
  excerpt,
  extractiveAnswer,
  importsOnly,
  questionNames,
  referentAliases,
  rejectedTerms,
  sourceLabel,
  usesModule,
  visibleText,
  withoutRejected,
} from '../../shared/llm/extract.js';
import {
  apiOf,
  contentTerms,
  judge,
  OfflineChatModel,
  resolveReferences,
  SHOWS_CODE,
} from '../../shared/llm/offline.js';
import type { ContentBlock, ConverseRequest, ToolSpec } from '../../shared/llm/port.js';

const SEARCH: ToolSpec = {
  name: 'search',
  description: 'Full-text search over the ingested documentation chunks',
  inputSchema: {
    json: {
      type: 'object',
      properties: { query: { type: 'string', maxLength: 2000 }, prefix: { type: 'string' } },
      required: ['query'],
    },
  },
};

const model = new OfflineChatModel();

/** The task prompt as the assistant step writes it: a `## Task` section with its description. */
function taskRequest(purpose: string, instructions: string, more: ConverseRequest['messages'] = []) {
  return {
    messages: [
      {
        role: 'user' as const,
        content: [{ text: `## Task\n**Purpose:** ${purpose}\n\n**Instructions:** ${instructions}` }],
      },
      ...more,
    ],
    toolConfig: { tools: [{ toolSpec: SEARCH }] },
  };
}

function toolUseOf(content: readonly ContentBlock[]) {
  const block = content.find((b) => 'toolUse' in b);
  if (!block || !('toolUse' in block)) throw new Error('no tool use');
  return block.toolUse;
}

describe('the judge objects about content (item 2)', () => {
  it('a part names its content terms for the judge: nouns and identifiers, not filler verbs', async () => {
    const text =
      '1. How do I create a DynamoDB table with a stream? 2. How do I send the records it fails to process to an SQS queue?';
    const response = await model.converse({
      messages: [{ role: 'user', content: [{ text }] }],
      toolConfig: { tools: [{ toolSpec: CREATE_PLAN_SPEC }], toolChoice: { tool: { name: CREATE_PLAN } } },
    });
    const plan = toolUseOf(response.output.message.content).input as unknown as { tasks: TaskPayload[] };
    const second = plan.tasks[0]?.subtasks?.[1];
    expect(second?.evaluation).toMatch(/mentions: records, SQS, queue\.$/);
    expect(second?.evaluation).not.toMatch(/\b(?:send|fail|process|still|after)\b/);
  });

  it.each([
    ['How do I change the event before it reaches that target?', ['event', 'target']],
    ['How do I make it scale out when CPU utilization is high?', ['scale', 'CPU', 'utilization']],
    [
      'How do I read its value at synthesis time rather than with a deploy-time token?',
      ['value', 'synthesis', 'time'],
    ],
  ])('content terms of %j', (question, terms) => {
    expect(contentTerms(question)).toEqual(terms);
  });

  it('its objection names the content terms the answer lacks, from the evaluation the planner wrote', async () => {
    const response = await model.converse({
      messages: [
        {
          role: 'user',
          content: [{ text: 'How do I send the records it fails to process to an SQS queue?' }],
        },
      ],
      toolConfig: { tools: [{ toolSpec: CREATE_PLAN_SPEC }], toolChoice: { tool: { name: CREATE_PLAN } } },
    });
    const plan = toolUseOf(response.output.message.content).input as unknown as { tasks: TaskPayload[] };
    const verdict = judge({
      id: 's1',
      sources: ['aws-s3 README › Bucket Notifications'],
      evaluation: plan.tasks[0]?.evaluation ?? '',
      output: 'Set `startingPosition` on the event source:\n\n```ts\nnew DynamoEventSource(table, {});\n```',
    });
    expect(verdict).toMatchObject({ pass: false, reason: 'does not mention records, SQS, queue' });
    expect(verdict.missing).toEqual(['records', 'SQS', 'queue']);
  });
});

describe('corrective rounds (item 2)', () => {
  const subtask = {
    id: 's1',
    title: 'How do I send the records it fails to process to an SQS queue?',
    purpose:
      'Answer the question: How do I send the records it fails to process to an SQS queue? (it: the Lambda function)',
    evaluation: `The answer cites at least one documentation chunk, ${SHOWS_CODE}, and mentions: records, SQS, queue.`,
    output: 'Use `startingPosition`:\n\n```ts\nnew DynamoEventSource(table, {});\n```',
    sources: ['aws-lambda-event-sources README › DynamoDB Streams'],
  };
  const verdictOf = async (subtasks: object[]) => {
    const text = `## Task\n**Purpose:** Answer 2 parts\n\n## Subtask outputs\n\`\`\`json\n${JSON.stringify({ subtasks }, null, 2)}\n\`\`\``;
    const response = await model.converse({
      messages: [{ role: 'user', content: [{ text }] }],
      toolConfig: { tools: [{ toolSpec: SUBMIT_VERDICT_SPEC }] },
    });
    return toolUseOf(response.output.message.content).input as unknown as {
      pass: boolean;
      reason: string;
      corrective: TaskPayload[];
    };
  };

  it('reformulates with the referent and the missing terms and searches the whole corpus', async () => {
    const verdict = await verdictOf([subtask]);
    const [retry] = verdict.corrective;
    expect(retry?.instructions).toMatch(
      /^Search the whole documentation for "How do I send the records it fails to process to an SQS queue\? \(it: the Lambda function\) records SQS queue"/,
    );
    expect(retry?.instructions).not.toMatch(/within cld:/);
    // The corrective task's search: that query, with no prefix.
    const response = await model.converse(taskRequest(retry?.purpose ?? '', retry?.instructions ?? ''));
    const call = toolUseOf(response.output.message.content);
    expect(call.input).toEqual({
      query:
        'How do I send the records it fails to process to an SQS queue? (it: the Lambda function) records SQS queue',
    });
  });

  it('ends the rounds early when a corrective round adds nothing new, and goes on when it does', async () => {
    const [retry] = (await verdictOf([subtask])).corrective;
    const same = { ...subtask, id: 's2', instructions: retry?.instructions };
    const ended = await verdictOf([same]);
    expect(ended.pass).toBe(false);
    expect(ended.corrective).toEqual([]);
    expect(ended.reason).toMatch(/added nothing new/);
    // A round that cites a new document goes on.
    const moved = { ...same, sources: ['aws-lambda README › Destinations'] };
    expect((await verdictOf([moved])).corrective).toHaveLength(1);
  });
});

describe('referents that carry (item 3)', () => {
  it('"it" in a later part is what the part before it was about, when that part referred back too', () => {
    expect(
      resolveReferences([
        'How do I run a Fargate service in an ECS cluster?',
        'How do I make it scale out when CPU utilization is high?',
        'How do I register it as a target of an application load balancer listener?',
      ]),
    ).toEqual([
      undefined,
      { phrase: 'it', subject: 'Fargate service' },
      { phrase: 'it', subject: 'Fargate service' },
    ]);
  });

  it('carries what the referred-to part itself referred back to, when that is something else', () => {
    // "it" is the Lambda function of part 2, which processed "that stream" (the table's stream).
    expect(
      resolveReferences([
        'How do I create a DynamoDB table with a stream of new and old images?',
        'How do I process that stream with a Lambda function?',
        'How do I send the records it fails to process to an SQS queue?',
      ])[2],
    ).toEqual({ phrase: 'it', subject: 'Lambda function', via: 'DynamoDB table stream' });
    // "that queue" is the SQS queue of part 2, which was subscribed to "it" (the FIFO topic).
    expect(
      resolveReferences([
        'How do I create a FIFO topic?',
        'How do I subscribe an SQS queue to it?',
        'How do I filter the messages that queue receives on the message body?',
      ])[2],
    ).toEqual({ phrase: 'that queue', subject: 'SQS queue', via: 'FIFO topic' });
  });

  it('looks up both referents and searches with both APIs', async () => {
    const purpose =
      'Answer the question: How do I send the records it fails to process to an SQS queue? (it: the Lambda function, with the DynamoDB table stream)';
    const lookups = (await model.converse(taskRequest(purpose, 'Search.'))).output.message.content.flatMap(
      (b) => ('toolUse' in b ? [b.toolUse] : []),
    );
    expect(lookups.map((call) => call.input)).toEqual([
      { query: 'Lambda function' },
      { query: 'DynamoDB table stream' },
    ]);
    const code = (line: string) => ({ urn: `u-${line}`, text: `\`\`\`ts\n${line}\n\`\`\`` });
    const results = [
      code("const fn = new lambda.Function(this, 'F', {});"),
      code("const table = new dynamodb.Table(this, 'T', { stream: dynamodb.StreamViewType.NEW_IMAGE });"),
    ];
    const looked: ConverseRequest['messages'] = [
      { role: 'assistant', content: lookups.map((toolUse) => ({ toolUse })) },
      {
        role: 'user',
        content: lookups.map((call, i) => ({
          toolResult: {
            toolUseId: call.toolUseId,
            content: [{ json: { results: results.slice(i, i + 1) } }],
            status: 'success' as const,
          },
        })),
      },
    ];
    const search = toolUseOf(
      (await model.converse(taskRequest(purpose, 'Search.', looked))).output.message.content,
    );
    expect(search.input).toEqual({
      query:
        'How do I send the records it fails to process to an SQS queue? (it: `lambda.Function`, `dynamodb.Table`)',
    });
  });

  it('"add X to Y", then "it": Y', () => {
    expect(
      resolveReferences([
        'How do I add a wait state to a Step Functions state machine?',
        'How do I add a Choice state to it?',
      ])[1],
    ).toEqual({ phrase: 'it', subject: 'Step Functions state machine' });
  });

  const fargate = {
    urn: 'cld:doc.Document.ecs/doc.Chunk.1',
    text: [
      'Use a Fargate service:',
      '',
      '```ts',
      'const taskDefinition = new ecs.FargateTaskDefinition(this, "TaskDef");',
      'const service = new ecs.FargateService(this, "Service", { cluster, taskDefinition });',
      '```',
    ].join('\n'),
  };

  it('finds the API the earlier subject is answered with', () => {
    expect(apiOf('Fargate service', [fargate])).toBe('ecs.FargateService');
    expect(apiOf('SQS queue', [{ urn: 'u', text: '```ts\nconst q = new sqs.Queue(this, "Q");\n```' }])).toBe(
      'sqs.Queue',
    );
    expect(apiOf('errors metric', [fargate])).toBeUndefined();
    const topics = {
      urn: 'u',
      text: '```ts\nrule.addTarget(new targets.SnsTopic(topic));\nconst topic = new sns.Topic(this, "T");\n```',
    };
    expect(apiOf('SNS topic', [topics])).toBe('sns.Topic');
    const apis = {
      urn: 'u',
      text: '```ts\nnew tasks.CallApiGatewayRestApiEndpoint(this, "Call", {});\nconst api = new apigateway.RestApi(this, "A");\n```',
    };
    expect(apiOf('REST API', [apis])).toBe('apigateway.RestApi');
  });

  it("prefers the construct named after the subject's head noun to one named after its qualifier", () => {
    // The mixin comes first and spells both words of the subject; the bucket is what "that bucket" is.
    const buckets = {
      urn: 'u',
      text: [
        '```ts',
        "new s3.CfnBucket(this, 'Bucket').with(new mixins.BucketVersioning());",
        "const bucket = new s3.Bucket(this, 'MyBucket', { versioned: true });",
        '```',
      ].join('\n'),
    };
    expect(apiOf('versioned bucket', [buckets])).toBe('s3.Bucket');
    // A module alias the subject names still counts more than the head noun.
    const tables = {
      urn: 'u',
      text: "```ts\nconst stream = new kinesis.Stream(this, 'S');\nconst table = new dynamodb.Table(this, 'T');\n```",
    };
    expect(apiOf('DynamoDB table stream', [tables])).toBe('dynamodb.Table');
  });

  it('looks the referent up, then searches with its API, and answers from the chunk that spells it', async () => {
    const purpose =
      'Answer the question: How do I make it scale out when CPU utilization is high? (it: the Fargate service)';
    const first = toolUseOf((await model.converse(taskRequest(purpose, 'Search.'))).output.message.content);
    expect(first.input).toEqual({ query: 'Fargate service' });
    const looked: ConverseRequest['messages'] = [
      { role: 'assistant', content: [{ toolUse: first }] },
      {
        role: 'user',
        content: [
          {
            toolResult: {
              toolUseId: first.toolUseId,
              content: [{ json: { results: [fargate] } }],
              status: 'success',
            },
          },
        ],
      },
    ];
    const second = toolUseOf(
      (await model.converse(taskRequest(purpose, 'Search.', looked))).output.message.content,
    );
    expect(second.input).toEqual({
      query: 'How do I make it scale out when CPU utilization is high? (it: `ecs.FargateService`)',
    });
    const ec2 = {
      urn: 'cld:doc.Document.autoscaling/doc.Chunk.1',
      text: 'To scale out when CPU utilization is high, scale the group on CPU utilization:\n\n```ts\nautoScalingGroup.scaleOnCpuUtilization("KeepSpareCPU", { targetUtilizationPercent: 50 });\n```',
    };
    const ecs = {
      urn: 'cld:doc.Document.ecs/doc.Chunk.2',
      text: 'Scale the service out on CPU utilization:\n\n```ts\nconst scaling = fargateService.autoScaleTaskCount({ maxCapacity: 10 });\nscaling.scaleOnCpuUtilization("CpuScaling", { targetUtilizationPercent: 50 });\n// a FargateService scales its task count\n```',
    };
    const answered: ConverseRequest['messages'] = [
      ...looked,
      { role: 'assistant', content: [{ toolUse: second }] },
      {
        role: 'user',
        content: [
          {
            toolResult: {
              toolUseId: second.toolUseId,
              content: [{ json: { results: [ec2, ecs] } }],
              status: 'success',
            },
          },
        ],
      },
    ];
    const reply = (await model.converse(taskRequest(purpose, 'Search.', answered))).output.message.content;
    const text = reply.flatMap((b) => ('text' in b ? [b.text] : [])).join('');
    expect(text.indexOf('autoScaleTaskCount')).toBeGreaterThan(-1);
    expect(text.indexOf('autoScaleTaskCount')).toBeLessThan(
      text.indexOf('autoScalingGroup') === -1 ? Number.POSITIVE_INFINITY : text.indexOf('autoScalingGroup'),
    );
  });
});

describe('answers that lead with the fact (item 4)', () => {
  it('demotes the alternative the user ruled out', () => {
    const token = {
      urn: 'cld:doc.Document.ssm/doc.Chunk.1',
      text: 'To read the value of a parameter as a deploy-time token, use `valueForStringParameter`. The token is resolved at deploy time.',
    };
    const lookup = {
      urn: 'cld:doc.Document.ssm/doc.Chunk.2',
      text: 'To read the value at synthesis time, use `valueFromLookup`, which queries the parameter when the app is synthesized.',
    };
    const question = 'How do I read its value at synthesis time rather than with a deploy-time token?';
    expect(rejectedTerms(question)).toEqual(expect.arrayContaining(['deploi', 'token']));
    const answer = extractiveAnswer(question, [token, lookup]);
    expect(answer.split('\n\n')[0]).toContain('valueFromLookup');
    expect(answer.indexOf('valueFromLookup')).toBeLessThan(
      answer.indexOf('valueForStringParameter') === -1
        ? Number.POSITIVE_INFINITY
        : answer.indexOf('valueForStringParameter'),
    );
  });

  it('keeps what "not" or "without" before a verb in -ing asks to be without: that is the subject', () => {
    const question = 'How do I save money by not having any NAT gateways in my VPC?';
    expect(rejectedTerms(question)).toEqual([]);
    expect(withoutRejected(question)).toBe(question);
    expect(rejectedTerms('How do I deploy it without creating a new role?')).toEqual([]);
    // An alternative ruled out stays ruled out, -ing or not.
    expect(withoutRejected('How do I filter on the body rather than filtering on attributes?')).toBe(
      'How do I filter on the body?',
    );
    expect(rejectedTerms('How do I connect with Session Manager instead of SSH?')).toEqual(['ssh']);
    expect(withoutRejected('How do I make it work without a NAT gateway?')).toBe('How do I make it work?');
    // Nouns in -ing, and a verb too short to tell, still rule out.
    expect(rejectedTerms('How do I pass it a number, not string?')).toEqual(['string']);
    expect(rejectedTerms('How do I deploy it without using CloudFormation?')).toEqual(
      expect.arrayContaining(['cloudform']),
    );
  });

  it('opens with the code that holds the question terms and drops leading sentences holding none of its key terms', () => {
    const hit = {
      urn: 'cld:doc.Document.cw/doc.Chunk.1',
      text: [
        'This can be useful if you want to scope alarms to one stack.',
        '',
        'Composite alarms combine alarms with a rule:',
        '',
        '```ts',
        'new cloudwatch.CompositeAlarm(this, "Composite", { alarmRule: cloudwatch.AlarmRule.anyOf(alarm1, alarm2) });',
        '```',
      ].join('\n'),
    };
    const other = {
      urn: 'cld:doc.Document.cw/doc.Chunk.2',
      text: 'An alarm watches a metric. You can create alarms on any metric you like.',
    };
    const answer = extractiveAnswer('How do I combine two alarms into a composite alarm?', [hit, other]);
    const [first, second] = answer.split('\n\n');
    expect(first).toBe('Composite alarms combine alarms with a rule:');
    expect(second).toMatch(/^```ts\nnew cloudwatch\.CompositeAlarm/);
    expect(answer).not.toContain('This can be useful');
  });

  it('cuts a long code block around the asked-for statement, weighing rare terms over common ones', () => {
    const code = [
      'declare const alarm1: cloudwatch.Alarm;',
      ...Array.from({ length: 20 }, (_, i) => `const rule${i} = cloudwatch.AlarmRule.anyOf(alarm${i});`),
      'new cloudwatch.CompositeAlarm(this, "MyCompositeAlarm", {',
      '  alarmRule: rule0,',
      '});',
      ...Array.from({ length: 10 }, (_, i) => `const later${i} = ${i};`),
    ].join('\n');
    const weights = new Map([
      ['alarm', 1],
      ['rule', 1],
      ['composit', 3],
    ]);
    const lines = excerpt(code, weights, 'ts').split('\n');
    expect(lines.length).toBeLessThanOrEqual(18);
    expect(lines[0]).toBe('// …');
    const at = lines.indexOf('new cloudwatch.CompositeAlarm(this, "MyCompositeAlarm", {');
    expect(lines.slice(at, at + 3)).toEqual([
      'new cloudwatch.CompositeAlarm(this, "MyCompositeAlarm", {',
      '  alarmRule: rule0,',
      '});',
    ]);
  });

  it('reads the names a question gives: capitalised or digit-bearing runs, outside parentheses and rejections', () => {
    expect(questionNames('How do I send S3 object events to EventBridge?')).toEqual([
      ['s3'],
      ['eventbridg', 'event', 'bridg'],
    ]);
    expect(questionNames('How do I create a string parameter in SSM Parameter Store?')).toEqual([
      ['ssm', 'paramet', 'store', 'ssmparameterstor'],
    ]);
    expect(
      questionNames('How do I point a Route 53 alias record at it? (it: `cloudfront.Distribution`)'),
    ).toEqual([['rout', '53', 'route53']]);
    expect(questionNames('How do I keep 30 days of logs rather than with SNS?')).toEqual([]);
  });

  it("leads with the code block that holds the question's names over a higher-ranked one of another service", () => {
    // The shape of the S3 README's "EventBridge notifications" ranked third under the EventBridge
    // Scheduler's "Send events to an EventBridge event bus", whose code spells most question terms.
    const scheduler = {
      urn: 'cld:doc.Document.scheduler/doc.Chunk.1',
      title:
        'Amazon EventBridge Scheduler Targets Construct Library › Send events to an EventBridge event bus',
      text: [
        'Use the `EventBridgePutEvents` target to send events to an EventBridge event bus.',
        '',
        'The code snippet below sends events to an event bus every hour:',
        '',
        '```ts',
        "const eventBus = new events.EventBus(this, 'EventBus');",
        'const entry: targets.EventBridgePutEventsEntry = {',
        '  eventBus,',
        "  detail: ScheduleTargetInput.fromObject({ Name: 'Fluffy' }),",
        '};',
        "new Schedule(this, 'Schedule', { target: new targets.EventBridgePutEvents(entry) });",
        '```',
      ].join('\n'),
    };
    const rule = {
      urn: 'cld:doc.Document.events/doc.Chunk.2',
      title: 'Amazon EventBridge Construct Library › Rule',
      text: 'A rule matches events and sends them to targets. Rules route events from an event bus to targets.',
    };
    const s3 = {
      urn: 'cld:doc.Document.s3/doc.Chunk.3',
      title: 'Amazon S3 Construct Library › Bucket Notifications › EventBridge notifications',
      text: [
        'Amazon S3 can send events to Amazon EventBridge whenever certain events happen in your bucket.',
        '',
        'The following example will enable EventBridge notifications:',
        '',
        '```ts',
        "const bucket = new s3.Bucket(this, 'MyEventBridgeBucket', {",
        '  eventBridgeEnabled: true,',
        '});',
        '```',
      ].join('\n'),
    };
    const answer = extractiveAnswer('How do I send S3 object events to EventBridge?', [scheduler, rule, s3]);
    const firstCode = answer.indexOf('```');
    expect(answer.slice(firstCode, answer.indexOf('```', firstCode + 3))).toContain(
      'eventBridgeEnabled: true',
    );
  });

  it('says a sentence once, though it also introduces a later code block', () => {
    const overview = {
      urn: 'cld:doc.Document.ecr/doc.Chunk.0',
      text: 'Amazon ECR can scan container images for vulnerabilities when they are pushed to a repository.',
    };
    const intro =
      'To scan container images when they are pushed, enable `imageScanOnPush` on the repository.';
    const scanning = {
      urn: 'cld:doc.Document.ecr/doc.Chunk.1',
      text: [intro, '', '```ts', "new ecr.Repository(this, 'Repo', { imageScanOnPush: true });", '```'].join(
        '\n',
      ),
    };
    const answer = extractiveAnswer(
      'How do I scan container images for vulnerabilities when they are pushed to ECR?',
      [overview, scanning],
    );
    expect(answer.split('\n\n')[0]).toBe(`${overview.text} ${intro}`);
    expect(answer.split(intro)).toHaveLength(2);
    expect(answer).toContain(`${intro}\n\n\`\`\`ts\nnew ecr.Repository`);
  });

  it('says a sentence pointing at code ("the snippet below") only before its own block', () => {
    const pointer = 'The code snippet below creates a queue that is encrypted with a customer managed key.';
    const encryption = {
      urn: 'cld:doc.Document.sqs/doc.Chunk.0',
      text: [
        'Queues can be encrypted with a KMS key that you manage.',
        '',
        pointer,
        '',
        '```ts',
        "new sqs.Queue(this, 'Queue', { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key });",
        '```',
      ].join('\n'),
    };
    // Its sentence holds the question's terms, its code none of them: out of place, the
    // sentence would point at code the answer does not show.
    const scheduler = {
      urn: 'cld:doc.Document.scheduler/doc.Chunk.1',
      text: [
        'The code snippet below creates a schedule that sends to an encrypted SQS queue with a customer managed KMS key.',
        '',
        '```ts',
        "new Schedule(this, 'Schedule', { schedule: ScheduleExpression.rate(Duration.hours(1)), target });",
        '```',
      ].join('\n'),
    };
    const answer = extractiveAnswer('How do I encrypt an SQS queue with a customer managed KMS key?', [
      encryption,
      scheduler,
    ]);
    // Said right before the block it introduces, never as prose on its own.
    expect(answer).toContain(`${pointer}\n\n\`\`\`ts\nnew sqs.Queue(this, 'Queue'`);
    expect(answer.split(pointer)).toHaveLength(2);
    expect(answer).not.toContain('creates a schedule');
    expect(dangles('In the above example, the function is invoked when the stack is deployed.')).toBe(true);
    expect(dangles('In the above example, the function defined in `MyTrigger` is invoked.')).toBe(false);
    expect(dangles('Queues can be encrypted with a KMS key that you manage.')).toBe(false);
    expect(dangles('As shown below, the queue is encrypted.')).toBe(true);
    expect(dangles('Set the threshold above 80 percent.')).toBe(false);
    expect(dangles('Values below 1 are rejected.')).toBe(false);
  });

  it("weighs a sentence by the words a reader sees, not by its links' addresses", () => {
    const linked =
      'You can optionally attach a [dead letter queue](https://docs.aws.amazon.com/eventbridge/latest/userguide/rule-dlq.html).';
    const target = {
      urn: 'cld:doc.Document.targets/doc.Chunk.0',
      text: [
        linked,
        '',
        '```ts',
        'rule.addTarget(new targets.LambdaFunction(fn, { retryAttempts: 2 }));',
        '```',
        '',
        'Use the `LambdaFunction` target to invoke a Lambda function when an EventBridge rule matches.',
      ].join('\n'),
    };
    const answer = extractiveAnswer('How do I make a Lambda function the target of an EventBridge rule?', [
      target,
    ]);
    expect(answer).toContain('Use the `LambdaFunction` target');
    expect(answer).toContain('rule.addTarget(new targets.LambdaFunction');
    expect(answer).not.toContain('dead letter queue');
    expect(visibleText(linked)).toBe('You can optionally attach a dead letter queue.');
    expect(visibleText('See <https://example.com/rule> or https://example.com/x.')).toBe('See   or  ');
  });

  it("prefers, for a part that refers back, code using the referent's module over another module's", () => {
    const firehose = {
      urn: 'cld:doc.Document.firehose/doc.Chunk.0',
      title: 'Amazon Data Firehose Construct Library > Data transformation with AWS Lambda',
      text: [
        'Provide a Lambda function that processes records, starting with the latest record batch:',
        '',
        '```ts',
        "const lambdaFunction = new lambda.Function(this, 'Processor', { runtime: lambda.Runtime.NODEJS_LATEST });",
        'const processor = new firehose.LambdaFunctionProcessor(lambdaFunction, { retries: 5 });',
        '```',
      ].join('\n'),
    };
    const kinesis = {
      urn: 'cld:doc.Document.event-sources/doc.Chunk.4',
      title: 'AWS Lambda Event Sources > Kinesis',
      text: [
        '```ts',
        "import * as ks from 'aws-cdk-lib/aws-kinesis';",
        "const stream = new ks.Stream(this, 'MyStream');",
        'myFunction.addEventSource(new KinesisEventSource(stream, { startingPosition: lambda.StartingPosition.LATEST }));',
        '```',
      ].join('\n'),
    };
    const answer = extractiveAnswer(
      'How do I process its records with a Lambda function, starting from the latest record? (its: `kinesis.Stream`)',
      [firehose, { ...kinesis, rank: 3 }],
    );

    expect(answer.indexOf('KinesisEventSource')).toBeGreaterThan(-1);
    expect(answer.indexOf('KinesisEventSource')).toBeLessThan(
      answer.indexOf('LambdaFunctionProcessor') >>> 0,
    );
    expect(referentAliases('`lambda.Function`, `dynamodb.Table`')).toEqual(['lambda', 'dynamodb']);
    // A block's code, as the composer passes it (without its fences).
    expect(usesModule(kinesis.text.split('\n').slice(1, -1).join('\n'), ['kinesis'])).toBe(true);
    expect(usesModule('declare const s: secretsmanager.ISecret;', ['secretsmanager'])).toBe(true);
    expect(usesModule(firehose.text.split('\n').slice(3, -1).join('\n'), ['kinesis'])).toBe(false);
    expect(
      usesModule(
        'import * as sm from "aws-cdk-lib/aws-secretsmanager";\nsm.Secret.fromSecretNameV2(this, "S", "n");',
        ['secretsmanager'],
      ),
    ).toBe(true);
    // A mention in a comment or a string is no use of the module.
    expect(
      usesModule("// see kinesis.Stream\nconst s = 'kinesis.Stream';\nfirehose.DeliveryStream;", ['kinesis']),
    ).toBe(false);
    expect(referentAliases('`s3.Bucket.fromBucketName`')).toEqual(['s3']);
  });

  it('answers a question to create something with code that creates it, not code that imports one', () => {
    const importing = {
      urn: 'cld:doc.Document.kms/doc.Chunk.2',
      title: 'AWS Key Management Service Construct Library > Importing existing keys',
      text: [
        'To use a KMS key that is not defined in this CDK app, use `Key.fromKeyArn(parent, name, ref)`:',
        '',
        '```ts',
        "const myKeyImported = kms.Key.fromKeyArn(this, 'MyImportedKey', 'arn:aws:...');",
        "myKeyImported.addAlias('alias/foo');",
        '```',
      ].join('\n'),
    };
    const defining = {
      urn: 'cld:doc.Document.kms/doc.Chunk.0',
      title: 'AWS Key Management Service Construct Library',
      text: [
        'Define a KMS key:',
        '',
        '```ts',
        "new kms.Key(this, 'MyKey', { enableKeyRotation: true });",
        '```',
      ].join('\n'),
    };

    const answer = extractiveAnswer('How do I create a KMS key?', [importing, { ...defining, rank: 2 }]);

    expect(answer.startsWith('Define a KMS key:')).toBe(true);
    const imported = answer.indexOf('kms.Key.fromKeyArn');
    expect(imported === -1 || imported > answer.indexOf('new kms.Key')).toBe(true);
    expect(importsOnly("const k = kms.Key.fromKeyArn(this, 'K', arn);")).toBe(true);
    expect(importsOnly("new lambda.Function(this, 'F', { code: lambda.Code.fromInline('x') });")).toBe(false);
    // A value factory imports nothing; a generic construction constructs.
    expect(importsOnly("const code = lambda.Code.fromAsset('dist');")).toBe(false);
    expect(
      importsOnly("const t = ddb.Table.fromTableName(this, 'T', 'n');\nconst m = new Map<string, number>();"),
    ).toBe(false);
    // Asked to import, the importing code stays first.
    expect(
      extractiveAnswer('How do I use an existing KMS key by its ARN?', [importing, { ...defining, rank: 2 }]),
    ).toContain('fromKeyArn');
  });

  it('cites the document and heading, not only the URN', () => {
    const hit = {
      urn: 'cld:doc.Document.ssm/doc.Chunk.3',
      source: 'node_modules/aws-cdk-lib/aws-ssm/README.md',
      title: 'AWS Systems Manager Construct Library › Lookups',
      text: 'You can look up the value of a parameter at synthesis time with `valueFromLookup` in your stack.',
    };
    expect(sourceLabel(hit)).toBe('aws-ssm README › Lookups');
    expect(extractiveAnswer('How do I look up a parameter value?', [hit])).toMatch(
      /Sources:\n- aws-ssm README › Lookups \(cld:doc\.Document\.ssm\/doc\.Chunk\.3\)$/,
    );
  });
});
