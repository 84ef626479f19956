import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import {
  type S3ObjectCreatedEvent,
  S3ObjectCreatedEventSchema,
  s3ObjectCreatedEvent,
  toResourcePut,
} from '../../shared/events/envelope.js';
import { matchesPattern } from '../../shared/events/pattern.js';
import { routeAccepts, routingTable, type StepName, typePathOf } from '../../shared/events/routing.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { thrownBy } from './builders.js';

/** The documented S3 "Object Created" EventBridge event, with a resource key. */
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
  it('is keyed by the message URN it was made for', () => {
    expect(FIXTURE.detail.object.key).toBe(keyOf(MESSAGE));
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

  it.each([
    ['an object outside the URN tree', 'uploads/photo.jpg'],
    ['a URN without the .json suffix', MESSAGE],
    ['a key with an unknown namespace', `cld:secret.Thing.0123456789abcdef.json`],
    ['a key with a ".." element', `${CONVERSATION}/../${MESSAGE.slice('cld:'.length)}.json`],
    ['a key with an empty element', `${CONVERSATION}//common.Message.0123456789abcdef.json`],
    ['a key with a malformed percent escape', `${keyOf(MESSAGE)}%E0%A4%A`],
  ])('rejects %s as not a resource key', (_label, key) => {
    const error = thrownBy(() => toResourcePut(eventFor(key)));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^object key is not a resource key/);
  });

  it.each([
    ['every reserved character encoded', encodeURIComponent(keyOf(MESSAGE))],
    ['only ":" encoded (as S3 does)', keyOf(MESSAGE).replace(':', '%3A')],
  ])('decodes a URL-encoded key with %s', (_label, key) => {
    const event = toResourcePut(eventFor(key));

    expect(event.urn).toBe(MESSAGE);
    expect(event.key).toBe(keyOf(MESSAGE));
  });
});

describe('routingTable', () => {
  const routes = routingTable(BUCKET);

  /** Targets that react to the resource at `urn`: the event pattern AND the route's shapes. */
  function targetsOf(urn: string, event = eventFor(keyOf(urn))): StepName[] {
    return routes
      .filter((route) => matchesPattern(route.pattern, event) && routeAccepts(route, urn))
      .map((route) => route.target);
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
    // A root task's Messages go to plan too: its output cannot be told from its other Messages by URN.
    [
      'a tool result under a root task',
      childUrn(T, 'common.Message', 'tool result tooluse-1'),
      ['plan', 'assistant', 'reply'],
    ],
    [
      'a tool result under a subtask',
      childUrn(SUB, 'common.Message', 'tool result tooluse-2'),
      ['assistant', 'reply'],
    ],
    ['the output of a subtask', childUrn(SUB, 'common.Message', 'output'), ['assistant', 'reply']],
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

  it('needs the shapes: the tool call key also matches the plan and assistant key wildcards', () => {
    const call = childUrn(T, 'tool.Call', 'tooluse-1');
    const event = eventFor(keyOf(call));

    const byPattern = routes
      .filter((route) => matchesPattern(route.pattern, event))
      .map((route) => route.target);

    expect(byPattern.sort()).toEqual(['assistant', 'plan', 'reply', 'tool']);
    expect(targetsOf(call)).toEqual(['tool']);
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
    expect(targetsOf(T, event)).toEqual([]);
  });

  it('gives every route a unique id', () => {
    const ids = routes.map((route) => route.id);

    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes a resource by its type path', () => {
    expect(typePathOf(SUB)).toBe('common.Conversation/common.Message/plan.Task/plan.Task');
  });
});
