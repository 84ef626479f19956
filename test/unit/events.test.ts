import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import {
  decodeS3EventKey,
  encodeS3EventKey,
  type S3ObjectCreatedEvent,
  S3ObjectCreatedEventSchema,
  s3ObjectCreatedEvent,
  toResourcePut,
} from '../../shared/events/envelope.js';
import { matchesPattern } from '../../shared/events/pattern.js';
import { routeAccepts, routingTable, type StepName, typePathOf } from '../../shared/events/routing.js';
import { RESOURCE_SCHEMAS } from '../../shared/resources/schemas.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { thrownBy } from './builders.js';

/**
 * The documented S3 "Object Created" EventBridge event (AWS's example, with the field set of a
 * versioned bucket: `version-id`, `source-ip-address`, `reason`), with a resource key as S3 sends
 * it: URL-encoded, which leaves a resource key unchanged.
 */
const FIXTURE = JSON.parse(
  readFileSync(new URL('../fixtures/s3-object-created.json', import.meta.url), 'utf8'),
) as S3ObjectCreatedEvent;
const BUCKET = FIXTURE.detail.bucket.name;

// The URNs the fixture was made from.
const CONVERSATION = childUrn(undefined, 'common.Conversation', 'fixture conversation');
const MESSAGE = childUrn(CONVERSATION, 'common.Message', 'fixture user message');

/** The fixture as plain JSON that a test may break on purpose. */
interface RawEvent {
  [field: string]: unknown;
  source: string;
  'detail-type': string;
  detail: {
    [field: string]: unknown;
    bucket?: { name: string };
    object: { key?: string; size?: number };
  };
}

/** A deep copy of the fixture, changed by `edit`. */
function fixture(edit: (event: RawEvent) => void = () => {}): RawEvent {
  const event = structuredClone(FIXTURE) as unknown as RawEvent;
  edit(event);
  return event;
}

/** The fixture with its object key set to `key`. */
function eventFor(key: string, bucket = BUCKET): S3ObjectCreatedEvent {
  return fixture((event) => {
    event.detail.object.key = key;
    event.detail.bucket = { name: bucket };
  }) as S3ObjectCreatedEvent;
}

describe('the S3 Object Created fixture', () => {
  it('is keyed by the message URN it was made for, as S3 encodes keys (unchanged)', () => {
    expect(FIXTURE.detail.object.key).toBe(keyOf(MESSAGE));
    expect(encodeS3EventKey(keyOf(MESSAGE))).toBe(keyOf(MESSAGE));
  });

  it('carries the fields S3 sends for a versioned bucket', () => {
    expect(Object.keys(FIXTURE.detail.object).sort()).toEqual([
      'etag',
      'key',
      'sequencer',
      'size',
      'version-id',
    ]);
    expect(Object.keys(FIXTURE.detail).sort()).toEqual([
      'bucket',
      'object',
      'reason',
      'request-id',
      'requester',
      'source-ip-address',
      'version',
    ]);
  });

  it('has the same top-level fields as the event the local storage emits', () => {
    const local = s3ObjectCreatedEvent(BUCKET, keyOf(MESSAGE), 10);

    expect(Object.keys(local).sort()).toEqual(Object.keys(FIXTURE).sort());
    expect(S3ObjectCreatedEventSchema.safeParse(local).success).toBe(true);
  });
});

describe('toResourcePut', () => {
  it('normalises the S3 event to RESOURCE_PUT', () => {
    const event = toResourcePut(fixture());

    expect(event).toEqual({
      id: '17793124-05d4-b198-2fde-7ededc63b103',
      detailType: 'RESOURCE_PUT',
      source: 'aws.s3',
      time: '2021-11-12T00:00:00Z',
      bucket: BUCKET,
      key: keyOf(MESSAGE),
      urn: MESSAGE,
      type: 'common.Message',
    });
  });

  it('normalises the event the local storage emits', () => {
    const task = childUrn(MESSAGE, 'plan.Task', 'research');

    const event = toResourcePut(
      s3ObjectCreatedEvent('local-bucket', keyOf(task), 99, new Date('2025-01-01T00:00:00.123Z')),
    );

    expect(event).toMatchObject({
      bucket: 'local-bucket',
      urn: task,
      type: 'plan.Task',
      time: '2025-01-01T00:00:00Z',
    });
  });

  it.each<[string, (event: RawEvent) => void]>([
    [
      'another source',
      (event) => {
        event.source = 'aws.ec2';
      },
    ],
    [
      'another detail-type',
      (event) => {
        event['detail-type'] = 'Object Deleted';
      },
    ],
    [
      'a missing object key',
      (event) => {
        delete event.detail.object.key;
      },
    ],
    [
      'an empty object key',
      (event) => {
        event.detail.object.key = '';
      },
    ],
    [
      'a missing bucket',
      (event) => {
        delete event.detail.bucket;
      },
    ],
    [
      'a missing detail',
      (event) => {
        Reflect.deleteProperty(event, 'detail');
      },
    ],
    [
      'a negative size',
      (event) => {
        event.detail.object.size = -1;
      },
    ],
  ])('rejects an event with %s', (_label, edit) => {
    const error = thrownBy(() => toResourcePut(fixture(edit)));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^not an S3 Object Created event/);
  });

  it.each([
    ['null', null],
    ['a string', 'Object Created'],
  ])('rejects %s', (_label, value) => {
    expect(() => toResourcePut(value)).toThrow(ValidationError);
  });

  const C_PATH = CONVERSATION.slice('cld:'.length);
  it.each([
    ['an object outside the URN tree', 'uploads/photo.jpg'],
    ['a URN', MESSAGE],
    ['the old key form <urn>.json', `${MESSAGE}.json`],
    ['the old key form, URL-encoded', encodeS3EventKey(`${MESSAGE}.json`)],
    ['a key with an unknown namespace', 'cld/secret.Thing.0123456789abcdef_Thing.json'],
    [
      'a key with a ".." element',
      `cld/${C_PATH}/../common.Message.0123456789abcdef_Conversation-Message.json`,
    ],
    [
      'a key with an empty element',
      `cld/${C_PATH}//common.Message.0123456789abcdef_Conversation-Message.json`,
    ],
    [
      "a key whose shape is not its URN's",
      keyOf(MESSAGE).replace('_Conversation-Message', '_Conversation-Task'),
    ],
    ['a key with a malformed percent escape', `${keyOf(MESSAGE)}%E0%A4%A`],
  ])('rejects %s as not a resource key', (_label, key) => {
    const error = thrownBy(() => toResourcePut(eventFor(key)));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^object key is not a resource key/);
  });

  it.each([
    ['as S3 encodes it (unchanged)', encodeS3EventKey(keyOf(MESSAGE))],
    ['"/" encoded too', encodeURIComponent(keyOf(MESSAGE))],
    [
      'every character but letters and digits percent-encoded',
      keyOf(MESSAGE).replace(/[^A-Za-z0-9]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
    ],
  ])('parses the raw key and a URL-encoded one: %s', (_label, key) => {
    const event = toResourcePut(eventFor(key));

    expect(event.urn).toBe(MESSAGE);
    expect(event.key).toBe(keyOf(MESSAGE));
  });
});

describe('encodeS3EventKey / decodeS3EventKey', () => {
  it.each([
    ['red flower.jpg', 'red+flower.jpg'],
    ['a:b/c+d', 'a%3Ab/c%2Bd'],
    ["x~y!(z)'*", 'x%7Ey%21%28z%29%27*'],
    ['é/ü', '%C3%A9/%C3%BC'],
  ])('encodes %j as S3 does in event notifications: %j', (raw, encoded) => {
    expect(encodeS3EventKey(raw)).toBe(encoded);
    expect(decodeS3EventKey(encoded)).toBe(raw);
  });
});

describe('routingTable', () => {
  const routes = routingTable(BUCKET);

  /**
   * Targets that react to the resource at `urn`, as EventBridge decides: the event pattern
   * alone. The handlers' route filter accepts exactly what the patterns deliver to them.
   */
  function targetsOf(urn: string, event = eventFor(encodeS3EventKey(keyOf(urn)))): StepName[] {
    const delivered = routes.filter((route) => matchesPattern(route.pattern, event));
    for (const route of routes) expect(routeAccepts(route, urn)).toBe(delivered.includes(route));
    return delivered.map((route) => route.target);
  }

  // Conversation C, user message M, root task T, subtask SUB.
  const C = CONVERSATION;
  const M = MESSAGE;
  const T = childUrn(M, 'plan.Task', 'root task');
  const SUB = childUrn(T, 'plan.Task', 'subtask');
  const TURN = childUrn(T, 'common.Message', 'turn 1');
  const DOCUMENT = childUrn(undefined, 'doc.Document', 'readme.md');

  it.each<[string, string, StepName[]]>([
    ['a user message in a conversation', M, ['plan', 'reply']],
    ['a root task', T, ['assistant']],
    ['a nested task', SUB, ['assistant']],
    ['a tool call under a root task', childUrn(T, 'tool.Call', 'tooluse-1'), ['tool']],
    ['a tool call under a subtask', childUrn(SUB, 'tool.Call', 'tooluse-2'), ['tool']],
    // The user's decision on an approval request resumes the call (shared/domain/approval.ts);
    // the request reaches the reply step (the user is asked on the channel); the run's claim
    // reaches no step.
    [
      'an approval request under a call',
      childUrn(childUrn(T, 'tool.Call', 'tooluse-1'), 'tool.Approval', 'approval'),
      ['reply'],
    ],
    [
      "the user's decision on a call of a subtask",
      childUrn(
        childUrn(childUrn(SUB, 'tool.Call', 'tooluse-2'), 'tool.Approval', 'approval'),
        'tool.Decision',
        'decision',
      ),
      ['tool'],
    ],
    [
      'the claim of an approved run',
      childUrn(
        childUrn(childUrn(T, 'tool.Call', 'tooluse-1'), 'tool.Approval', 'approval'),
        'tool.Execution',
        'execution',
      ),
      [],
    ],
    // A Message under a task reaches the assistant only (a tool result continues the inner loop,
    // a turn is ignored); a task's output has the shape `Output`.
    [
      'a tool result under a root task',
      childUrn(T, 'common.Message', 'result-call-1-tooluse-1'),
      ['assistant'],
    ],
    ['a turn under a subtask', childUrn(SUB, 'common.Message', 'turn-1'), ['assistant']],
    [
      'a tool result under a subtask',
      childUrn(SUB, 'common.Message', 'result-call-1-tooluse-2'),
      ['assistant'],
    ],
    ['the output of a root task', childUrn(T, 'common.Message', 'output'), ['plan', 'reply']],
    ['the output of a subtask', childUrn(SUB, 'common.Message', 'output'), ['assistant', 'reply']],
    [
      'the output of a corrective subtask at depth 3 (below the Slack progress message)',
      childUrn(childUrn(SUB, 'plan.Task', 'corrective-1-1'), 'common.Message', 'output'),
      ['assistant'],
    ],
    ['the final answer under the conversation', childUrn(C, 'common.Message', 'answer'), ['plan', 'reply']],
    ['a document chunk', childUrn(DOCUMENT, 'doc.Chunk', '0'), []],
    ['a document', DOCUMENT, []],
    ['the conversation itself', C, []],
    ['the Plan under a message', childUrn(M, 'plan.Plan', 'plan'), []],
    ['a verdict under a task', childUrn(T, 'plan.Verdict', 'round 1'), []],
    ['a message under an assistant turn', childUrn(TURN, 'common.Message', 'x'), []],
    ['an assistant in the catalog', childUrn(undefined, 'common.Assistant', 'researcher'), []],
  ])('routes %s to exactly %j', (_label, urn, expected) => {
    expect(targetsOf(urn)).toEqual(expected);
  });

  it('reaches each step at most once per object, for every type path of up to 4 elements', () => {
    const types = Object.keys(RESOURCE_SCHEMAS);
    const hash = '0123456789abcdef';
    let paths: string[] = types.map((type) => `cld:${type}.${hash}`);
    const all: string[] = [...paths];
    for (let depth = 2; depth <= 4; depth++) {
      paths = paths.flatMap((parent) => types.map((type) => `${parent}/${type}.${hash}`));
      all.push(...paths);
    }
    const outputs = all
      .filter((urn) => urn.endsWith(`plan.Task.${hash}`))
      .map((task) => childUrn(task, 'common.Message', 'output'));
    let delivered = 0;
    for (const urn of [...all, ...outputs]) {
      const event = eventFor(keyOf(urn));
      const targets = routes
        .filter((route) => matchesPattern(route.pattern, event))
        .map((route) => route.target);
      expect(new Set(targets).size, urn).toBe(targets.length);
      delivered += targets.length;
    }
    const n = types.length;
    expect(all.length).toBe(n + n ** 2 + n ** 3 + n ** 4);
    expect(delivered).toBeGreaterThan(0);
  });

  it('matches no route pattern for a doc chunk, before any shape is checked', () => {
    const event = eventFor(keyOf(childUrn(DOCUMENT, 'doc.Chunk', '0')));

    expect(routes.filter((route) => matchesPattern(route.pattern, event))).toEqual([]);
  });

  it.each<[string, S3ObjectCreatedEvent]>([
    ['another bucket', eventFor(keyOf(T), 'someone-elses-bucket')],
    [
      'another detail-type',
      fixture((event) => {
        event['detail-type'] = 'Object Deleted';
        event.detail.object.key = keyOf(T);
      }) as S3ObjectCreatedEvent,
    ],
    [
      'another source',
      fixture((event) => {
        event.source = 'custom.s3';
        event.detail.object.key = keyOf(T);
      }) as S3ObjectCreatedEvent,
    ],
  ])('routes nothing from %s', (_label, event) => {
    expect(routes.filter((route) => matchesPattern(route.pattern, event))).toEqual([]);
  });

  it('gives every route a unique id', () => {
    const ids = routes.map((route) => route.id);

    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes a resource by its type path', () => {
    expect(typePathOf(SUB)).toBe('common.Conversation/common.Message/plan.Task/plan.Task');
  });
});
