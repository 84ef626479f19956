/**
 * The offline model reads a hit the search listed by its header alone (issue 21 item 7): the
 * continuation of the best passage's section, a hit whose heading names the question better
 * than every passage's, or one whose heading names a question term no passage holds; by
 * citation id, at most twice, and composes from the chunk it read.
 */
import { describe, expect, it } from 'vitest';
import {
  CitationIds,
  PASSAGE_HITS,
  parseRenderedHits,
  renderToolResult,
} from '../../shared/context/render-results.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import { MAX_READS, readPlan } from '../../shared/llm/offline-read.js';
import type { ContentBlock, ConverseRequest, ToolSpec } from '../../shared/llm/port.js';

const SEARCH: ToolSpec = {
  name: 'search',
  description: 'Full-text search over the ingested documentation chunks',
  inputSchema: {
    json: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
};
const READ: ToolSpec = {
  name: 'read',
  description: 'Reads a search hit by its id ([n]) or a resource by URN',
  inputSchema: {
    json: {
      type: 'object',
      properties: { urn: { type: 'string', pattern: '^(cld:|\\[)' } },
      required: ['urn'],
    },
  },
};

const EVENT_SOURCES = 'node_modules/aws-cdk-lib/aws-lambda-event-sources/README.md';
const FIREHOSE = 'node_modules/aws-cdk-lib/aws-kinesisfirehose/README.md';
const KINESIS = 'node_modules/aws-cdk-lib/aws-kinesis/README.md';

/** One search hit as the `search` tool returns it. */
function hit(n: number, title: string, source: string, text: string) {
  return { urn: `cld:doc.Document.d${n}/doc.Chunk.c${n}`, title, source, text, score: 10 - n };
}

/** The Kinesis event source's code: in the section's last chunk, which the search lists by header only. */
const KINESIS_CODE = [
  'The event source is added to the function:',
  '',
  '```ts',
  "const stream = new kinesis.Stream(this, 'MyStream');",
  'declare const myFunction: lambda.Function;',
  'myFunction.addEventSource(new KinesisEventSource(stream, {',
  '  startingPosition: lambda.StartingPosition.LATEST,',
  '}));',
  '```',
].join('\n');

/**
 * A search result for "process its records with a Lambda function, starting from the latest
 * record (its: `kinesis.Stream`)": the Kinesis section's property list (3rd) continues in a hit
 * past {@link PASSAGE_HITS} (5th); a DynamoDB Streams list (2nd) covers the question's words as
 * well but not its referent.
 */
const RESULTS = [
  hit(
    1,
    'Amazon Data Firehose Construct Library > Data transformation with AWS Lambda',
    FIREHOSE,
    "Provide a Lambda function that will transform records before delivery:\n\n```ts\nconst lambdaFunction = new lambda.Function(this, 'Processor', { runtime: lambda.Runtime.NODEJS_LATEST });\n```",
  ),
  hit(
    2,
    'AWS Lambda Event Sources > DynamoDB Streams',
    EVENT_SOURCES,
    "* __startingPosition__: Will determine where to begin consumption, either at the most recent ('LATEST') record or the oldest record. 'LATEST' will ignore all records that arrived prior to attaching the event source.\n* __filters__: Filters to apply before sending a change event from a DynamoDB table to a Lambda function, to process it.",
  ),
  hit(
    3,
    'AWS Lambda Event Sources > Kinesis',
    EVENT_SOURCES,
    "* __startingPosition__: Will determine where to begin consumption. 'LATEST' will start at the most recent record, 'TRIM_HORIZON' will start at the oldest record and ensure you process all available data.\n* __tumblingWindow__: The duration of a processing window when using streams.",
  ),
  hit(
    4,
    'Amazon Kinesis Construct Library',
    KINESIS,
    'Amazon Kinesis provides collection of large streams of data in real time.',
  ),
  hit(5, 'AWS Lambda Event Sources > Kinesis', EVENT_SOURCES, KINESIS_CODE),
  hit(6, 'Amazon Kinesis Construct Library > Streams > Permission Grants > Write Permissions', KINESIS, 'x'),
];

const QUESTION =
  'How do I process its records with a Lambda function, starting from the latest record? (its: `kinesis.Stream`)';
const PURPOSE =
  'Answer the question: How do I process its records with a Lambda function, starting from the latest record? (its: the Kinesis data stream)';

/** The search result as the window renders it for the model (citation ids, passages, headers). */
function rendered(results: readonly ReturnType<typeof hit>[], ids = new CitationIds()): string {
  return renderToolResult(JSON.stringify({ results }), ids, QUESTION);
}

function request(messages: ConverseRequest['messages'], tools: ToolSpec[] = [SEARCH, READ]): ConverseRequest {
  return {
    messages: [
      { role: 'user', content: [{ text: `## Task\n**Purpose:** ${PURPOSE}\n\n**Instructions:** Search.` }] },
      ...messages,
    ],
    toolConfig: { tools: tools.map((toolSpec) => ({ toolSpec })) },
  };
}

/** A turn of tool calls and their rendered results. */
function turn(calls: { toolUseId: string; name: string; input: unknown }[], texts: string[]) {
  return [
    {
      role: 'assistant' as const,
      content: calls.map((c) => ({ toolUse: { ...c, input: c.input as never } })) as ContentBlock[],
    },
    {
      role: 'user' as const,
      content: calls.map((c, i) => ({
        toolResult: {
          toolUseId: c.toolUseId,
          content: [{ text: texts[i] as string }],
          status: 'success' as const,
        },
      })),
    },
  ];
}

const model = new OfflineChatModel();

/** The conversation up to the search: the referent's lookup, then the search with its API. */
function searched(): ConverseRequest['messages'] {
  const lookup = hit(
    7,
    'Amazon Kinesis Construct Library > Streams',
    KINESIS,
    "```ts\nnew kinesis.Stream(this, 'MyFirstStream');\n```",
  );
  const ids = new CitationIds();
  return [
    ...turn(
      [{ toolUseId: 'offline-search-lookup-1', name: 'search', input: { query: 'Kinesis data stream' } }],
      [rendered([lookup], ids)],
    ),
    ...turn(
      [{ toolUseId: 'offline-search-2', name: 'search', input: { query: QUESTION } }],
      [rendered(RESULTS, ids)],
    ),
  ];
}

describe('which header-only hits the offline model reads', () => {
  it('shows the continuation by its header only (the premise)', () => {
    const shown = parseRenderedHits(rendered(RESULTS));
    expect(shown.slice(PASSAGE_HITS).every((h) => h.text === '')).toBe(true);
    expect(shown[4]?.title).toBe(shown[2]?.title);
  });

  it("reads the best passage's continuation, the best being the passage that names the referent", () => {
    const hits = parseRenderedHits(rendered(RESULTS));
    // The DynamoDB Streams list holds more of the question's words, but not `kinesis`.
    expect(readPlan(QUESTION, hits)).toEqual({ ids: ['[5]'], rank: 2 });
    // Without the referent, the best passage is another section: nothing continues it.
    expect(
      readPlan('How do I process records with a Lambda function from the latest record?', hits).ids,
    ).toEqual([]);
  });

  it('reads a hit whose heading names the question better than every passage heading, side by side', () => {
    const results = [
      hit(1, 'API Gateway > AWS Lambda-backed APIs', 'apigw/README.md', 'Use Lambda behind a REST API.'),
      hit(2, 'API Gateway > Table of Contents', 'apigw/README.md', 'Lambda integration, REST API.'),
      hit(3, 'API Gateway > Token authorizer', 'apigw/README.md', 'A Lambda authorizer for a REST API.'),
      hit(
        4,
        'API Gateway > Default Integration and Method Options',
        'apigw/README.md',
        'Integration of a REST API.',
      ),
      hit(5, 'API Gateway > Integration Targets > Lambda Integration Permissions', 'apigw/README.md', 'x'),
      // More of the question's words, but none side by side as the question has them.
      hit(
        6,
        'Step Functions > API Gateway > Call REST Endpoint for a Lambda integration',
        'sfn/README.md',
        'x',
      ),
    ];
    const hits = parseRenderedHits(renderToolResult(JSON.stringify({ results }), new CitationIds(), 'x'));
    const plan = readPlan('How do I put a Lambda integration behind a REST API?', hits);
    expect(plan.ids).toContain('[5]');
    expect(plan.ids.length).toBeLessThanOrEqual(MAX_READS);
  });

  it('reads nothing when every hit is shown with its passage or none continues or names the question', () => {
    const hits = parseRenderedHits(rendered(RESULTS.slice(0, 4)));
    expect(readPlan(QUESTION, hits).ids).toEqual([]);
    const unrelated = [...RESULTS.slice(0, 4), hit(5, 'AWS Lambda Event Sources > SQS', EVENT_SOURCES, 'x')];
    expect(readPlan(QUESTION, parseRenderedHits(rendered(unrelated))).ids).toEqual([]);
  });

  it('reads a hit whose heading names a question term no passage holds, on the referent only', () => {
    const TOPIC = 'sns/README.md';
    const SUBSCRIPTIONS = 'sns-subscriptions/README.md';
    const question = 'How do I send an email to subscribers of that topic? (that topic: `sns.ITopic`)';
    const passages = [1, 2, 3, 4].map((n) =>
      hit(n, `SNS > Topic Policy ${n}`, TOPIC, 'A topic policy lets subscribers publish to the topic.'),
    );
    const results = [
      ...passages,
      // The first names no "email"; the second does, but is off the referent (no `sns` in its
      // path or trail).
      hit(5, 'SNS > High-throughput mode', TOPIC, 'x'),
      hit(6, 'SES > Email sending', 'ses/README.md', 'x'),
      hit(7, 'SNS Subscriptions > Subscriptions > Email', SUBSCRIPTIONS, 'x'),
    ];
    const hits = parseRenderedHits(
      renderToolResult(JSON.stringify({ results }), new CitationIds(), question),
    );
    expect(readPlan(question, hits).ids).toEqual(['[7]']);
    // Once a passage holds the term, its header names nothing they lack.
    const covered = [
      hit(1, 'SNS > Topic Policy', TOPIC, 'Subscribers of a topic get each email it sends.'),
      ...results.slice(1),
    ];
    const shown = parseRenderedHits(
      renderToolResult(JSON.stringify({ results: covered }), new CitationIds(), question),
    );
    expect(readPlan(question, shown).ids).toEqual([]);
    // A header-only hit's bridge is shown and read back, but names nothing here: a bridge names one
    // property of the section's code as often as what the section is about.
    const bridged = [
      ...passages,
      {
        ...hit(5, 'SNS Subscriptions > Subscriptions', SUBSCRIPTIONS, 'x'),
        bridge: [{ name: 'EmailSubscription', summary: 'Use an email address as a subscription target.' }],
      },
    ];
    const read = parseRenderedHits(
      renderToolResult(JSON.stringify({ results: bridged }), new CitationIds(), question),
    );
    expect(read[4]?.bridge?.[0]?.name).toBe('EmailSubscription');
    expect(readPlan(question, read).ids).toEqual([]);
    // A referent that names no API (the lookup found none): its module cannot be told, nothing is read.
    expect(
      readPlan('How do I send an email to subscribers of that topic? (that topic: the SNS topic)', hits).ids,
    ).toEqual([]);
  });

  it("tells a hit on the referent by its module, not by the referent's class name", () => {
    const question = 'How do I process its records, starting from the latest record? (its: `kinesis.Stream`)';
    const passages = [1, 2, 3, 4].map((n) =>
      hit(
        n,
        `AWS Lambda Event Sources > Kinesis ${n}`,
        EVENT_SOURCES,
        'Kinesis stream records are processed in batches.',
      ),
    );
    const results = [
      ...passages,
      // "Streams" is the class name's word, but this is DynamoDB's.
      hit(5, 'AWS Lambda Event Sources > DynamoDB Streams > Starting position LATEST', EVENT_SOURCES, 'x'),
      hit(6, 'Amazon Kinesis Construct Library > Streams > Latest records', KINESIS, 'x'),
    ];
    const hits = parseRenderedHits(
      renderToolResult(JSON.stringify({ results }), new CitationIds(), question),
    );
    expect(readPlan(question, hits).ids).toEqual(['[6]']);
  });

  it('never reads a chunk the result already shows with a passage', () => {
    const hits = parseRenderedHits(rendered(RESULTS));
    expect(readPlan(QUESTION, hits).ids).toEqual(['[5]']);
    // The task's other search listed the best passage's own chunk by header (ids are shared): it
    // matches the passage's section, but the model has its passage already.
    const copy = { ...(hits[2] as (typeof hits)[number]), text: '' };
    expect(readPlan(QUESTION, [...hits, copy]).ids).toEqual(['[5]']);
  });

  it('reads at most twice', () => {
    const many = [
      ...RESULTS,
      ...[7, 8, 9].map((n) => hit(n, 'AWS Lambda Event Sources > Kinesis', EVENT_SOURCES, 'x')),
    ];
    expect(readPlan(QUESTION, parseRenderedHits(rendered(many))).ids).toHaveLength(MAX_READS);
  });
});

describe('the offline model reads, then answers from what it read', () => {
  it('calls read with the citation id after the search, once, then composes from the chunk', async () => {
    const first = (await model.converse(request(searched()))).output.message.content;
    expect(first).toEqual([
      { toolUse: { toolUseId: expect.stringContaining('reading-'), name: 'read', input: { urn: '[6]' } } },
    ]);
    // The read as the window renders it: the same URN keeps its id.
    const ids = new CitationIds();
    rendered([hit(7, 'Amazon Kinesis Construct Library > Streams', KINESIS, 'x')], ids);
    rendered(RESULTS, ids);
    const chunk = RESULTS[4] as ReturnType<typeof hit>;
    const read = renderToolResult(
      JSON.stringify({
        urn: chunk.urn,
        text: chunk.text,
        heading: chunk.title,
        document: 'cld:doc.Document.d5',
      }),
      ids,
    );
    expect(read.startsWith('[6] ')).toBe(true);
    const call = first[0] as { toolUse: { toolUseId: string; name: string; input: unknown } };
    const answer = (await model.converse(request([...searched(), ...turn([call.toolUse], [read])]))).output
      .message.content;
    const text = answer.flatMap((b) => ('text' in b ? [b.text] : [])).join('');
    expect(answer.some((b) => 'toolUse' in b)).toBe(false);
    expect(text).toContain('new KinesisEventSource(stream');
    expect(text).toMatch(/Sources:[\s\S]*\(\[6\]\)/);
  });

  it('answers without reading when no read tool is offered', async () => {
    const answer = (await model.converse(request(searched(), [SEARCH]))).output.message.content;
    expect(answer.some((b) => 'toolUse' in b)).toBe(false);
    expect(answer.flatMap((b) => ('text' in b ? [b.text] : [])).join('')).not.toContain('KinesisEventSource');
  });
});
