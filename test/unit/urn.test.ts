import { describe, expect, it } from 'vitest';
import { InvalidUrnError } from '../../shared/errors.js';
import { RESOURCE_SCHEMAS } from '../../shared/resources/schemas.js';
import {
  ancestorsOf,
  childUrn,
  generateHash,
  HASH_LENGTH,
  isUrn,
  isWithin,
  KEY_PREFIX,
  KEY_SUFFIX,
  keyOf,
  keyPrefixOf,
  MAX_KEY_BYTES,
  OUTPUT_SHAPE,
  parentOf,
  parseUrn,
  rootOf,
  shapeOf,
  typeOf,
  urnOfKey,
} from '../../shared/urn.js';
import { thrownBy } from './builders.js';

const H1 = '0123456789abcdef';
const H2 = 'fedcba9876543210';
const H3 = '00112233445566aa';
const CONVERSATION = `cld:common.Conversation.${H1}`;
const MESSAGE = `${CONVERSATION}/common.Message.${H2}`;
const TASK = `${MESSAGE}/plan.Task.${H3}`;

/** Builds a chain of `depth` nested `plan.Task` resources and returns the deepest URN. */
function nestedTasks(depth: number): string {
  let urn: string | undefined;
  for (let level = 0; level < depth; level++) urn = childUrn(urn, 'plan.Task', `task ${level}`);
  if (urn === undefined) throw new Error('depth must be at least 1');
  return urn;
}

describe('parseUrn', () => {
  it.each([
    ['a root conversation', CONVERSATION, ['common.Conversation']],
    ['a message under a conversation', MESSAGE, ['common.Conversation', 'common.Message']],
    ['a task under a message', TASK, ['common.Conversation', 'common.Message', 'plan.Task']],
    [
      'a tool call',
      `${TASK}/tool.Call.${H1}`,
      ['common.Conversation', 'common.Message', 'plan.Task', 'tool.Call'],
    ],
    ['a document chunk', `cld:doc.Document.${H1}/doc.Chunk.${H2}`, ['doc.Document', 'doc.Chunk']],
  ])('accepts %s', (_label, urn, types) => {
    const parsed = parseUrn(urn);

    expect(parsed.urn).toBe(urn);
    expect(parsed.elements.map((element) => element.type)).toEqual(types);
  });

  it('splits each element into namespace, name and hash', () => {
    const { elements } = parseUrn(TASK);

    expect(elements[2]).toEqual({ type: 'plan.Task', namespace: 'plan', name: 'Task', hash: H3 });
  });

  it.each([
    ['another scheme', `urn:common.Conversation.${H1}`, /must start with "cld:"/],
    ['an upper-case scheme', `CLD:common.Conversation.${H1}`, /must start with "cld:"/],
    ['no scheme at all', `common.Conversation.${H1}`, /must start with "cld:"/],
    ['a scheme with nothing after it', 'cld:', /empty path/],
    ['an unknown namespace at the root', `cld:secret.Thing.${H1}`, /unknown namespace "secret"/],
    ['an unknown namespace deeper down', `${CONVERSATION}/aws.Credentials.${H2}`, /unknown namespace "aws"/],
    [
      'an empty element in the middle (a//b)',
      `${CONVERSATION}//common.Message.${H2}`,
      /empty element at position 1/,
    ],
    ['a trailing slash', `${CONVERSATION}/`, /empty element at position 1/],
    ['a leading slash', `cld:/common.Conversation.${H1}`, /empty element at position 0/],
    ['a ".." element', `${CONVERSATION}/../common.Conversation.${H2}`, /contains a "\.\." element/],
    ['a trailing ".." element', `${CONVERSATION}/..`, /contains a "\.\." element/],
    ['a "." element', `${CONVERSATION}/./common.Message.${H2}`, /contains a "\." element/],
    [
      'a hash one hex digit short',
      `cld:common.Conversation.${H1.slice(1)}`,
      /is not "<namespace>\.<Name>\.<16 hex>"/,
    ],
    ['a hash one hex digit long', `cld:common.Conversation.${H1}0`, /is not "<namespace>\.<Name>\.<16 hex>"/],
    ['an upper-case hex hash', `cld:common.Conversation.${H1.toUpperCase()}`, /is not "<namespace>/],
    ['a non-hex hash', `cld:common.Conversation.${'g'.repeat(16)}`, /is not "<namespace>/],
    ['a missing name', `cld:common.${H1}`, /is not "<namespace>/],
    ['an empty name', `cld:common..${H1}`, /is not "<namespace>/],
    ['a lower-case name', `cld:common.conversation.${H1}`, /is not "<namespace>/],
    ['a missing hash', 'cld:common.Conversation', /is not "<namespace>/],
    ['an element with an extra dotted part', `cld:common.Conversation.x.${H1}`, /is not "<namespace>/],
    ['whitespace around the URN', ` ${CONVERSATION}`, /must start with "cld:"/],
  ])('rejects %s with InvalidUrnError', (_label, input, message) => {
    const error = thrownBy(() => parseUrn(input));

    expect(error).toBeInstanceOf(InvalidUrnError);
    expect((error as InvalidUrnError).code).toBe('INVALID_URN');
    expect((error as InvalidUrnError).message).toMatch(message);
  });

  it.each([
    ['a number', 42, /got number/],
    ['null', null, /got object/],
    ['undefined', undefined, /got undefined/],
    ['an object', { urn: CONVERSATION }, /got object/],
    ['an array holding a URN', [CONVERSATION], /got object/],
  ])('rejects %s (not a string) with InvalidUrnError', (_label, input, message) => {
    const error = thrownBy(() => parseUrn(input));

    expect(error).toBeInstanceOf(InvalidUrnError);
    expect((error as Error).message).toMatch(message);
  });

  describe('length bound (storage key `cld/<path>_<shape>.json` at most 1,024 bytes)', () => {
    // A Task chain of n: "cld/" + n elements "plan.Task." + 16 hex joined by "/", "_", n times
    // "Task" joined by "-", ".json": key(n) = 4 + 27n - 1 + 1 + 5n - 1 + 5 = 8 + 32n.
    const perLevel = 'plan.Task.'.length + HASH_LENGTH + '/'.length + 'Task'.length + '-'.length;
    const fixedBytes = KEY_PREFIX.length + '_'.length + KEY_SUFFIX.length - 2;
    const maxDepth = Math.floor((MAX_KEY_BYTES - fixedBytes) / perLevel);

    it('fits 31 nested tasks, by the arithmetic of the key format', () => {
      expect(maxDepth).toBe(31);
      expect(Buffer.byteLength(keyOf(nestedTasks(2)), 'utf8')).toBe(fixedBytes + 2 * perLevel);
    });

    it('accepts the deepest task chain whose key fits', () => {
      const deepest = nestedTasks(maxDepth);

      expect(Buffer.byteLength(keyOf(deepest), 'utf8')).toBe(1000);
      expect(parseUrn(deepest).elements).toHaveLength(maxDepth);
    });

    it('rejects one more level through childUrn with InvalidUrnError', () => {
      const deepest = nestedTasks(maxDepth);

      const error = thrownBy(() => childUrn(deepest, 'plan.Task', 'one level too deep'));

      expect(error).toBeInstanceOf(InvalidUrnError);
      expect((error as Error).message).toMatch(/too long: its key would be 1032 bytes/);
    });

    /**
     * A task under a padding element whose Name length and namespace set the key length: the
     * Message named `name` under it has a key of exactly `bytes` bytes with the plain shape.
     */
    function taskFor(bytes: number): string {
      for (const namespace of ['common', 'doc']) {
        for (let length = 1; length < 900; length++) {
          const pad = `${namespace}.P${'a'.repeat(length - 1)}.${H1}`;
          const task = `${MESSAGE}/${pad}/plan.Task.${H3}`;
          // key = "cld/" + path(task) + "/common.Message.<16>" + "_" + shape(task) + "-Message" + ".json"
          const path = task.length - 'cld:'.length + '/common.Message.'.length + HASH_LENGTH;
          const shape = `Conversation-Message-P${'a'.repeat(length - 1)}-Task-Message`.length;
          if (4 + path + 1 + shape + 5 === bytes) return task;
        }
      }
      throw new Error(`no padding gives ${bytes} bytes`);
    }

    it('accepts a Message whose key is exactly 1,024 bytes and rejects one of 1,025', () => {
      const fits = childUrn(taskFor(1024), 'common.Message', 'turn-1');
      expect(Buffer.byteLength(keyOf(fits), 'utf8')).toBe(1024);

      const error = thrownBy(() => childUrn(taskFor(1025), 'common.Message', 'turn-1'));
      expect((error as Error).message).toMatch(/too long: its key would be 1025 bytes/);
    });

    it('measures the key a task output really has (`Output`, one byte shorter than `Message`)', () => {
      const task = taskFor(1025);
      const output = childUrn(task, 'common.Message', 'output');

      expect(keyOf(output)).toMatch(/-Task-Output\.json$/);
      expect(Buffer.byteLength(keyOf(output), 'utf8')).toBe(1024);
      expect(() => childUrn(task, 'common.Message', 'turn-1')).toThrow(InvalidUrnError);
    });

    it('rejects an over-long string before looking at its elements', () => {
      const error = thrownBy(() => parseUrn(`cld:${'x'.repeat(MAX_KEY_BYTES)}`));

      expect((error as Error).message).toMatch(/too long/);
    });

    it('counts UTF-8 bytes, not characters', () => {
      // 4 + 1010 two-byte characters + "_" + ".json": at least 2030 bytes although the string has 1014 characters
      const error = thrownBy(() => parseUrn(`cld:${'é'.repeat(1010)}`));

      expect((error as Error).message).toMatch(/too long: its key would be at least 2030 bytes/);
    });
  });
});

describe('isUrn', () => {
  it.each([
    [TASK, true],
    [`${TASK}/`, false],
    ['cld:**', false],
    [7, false],
  ])('says %s is a URN: %s', (input, expected) => {
    expect(isUrn(input)).toBe(expected);
  });
});

describe('generateHash', () => {
  it('is deterministic over parent, type and name', () => {
    expect(generateHash(MESSAGE, 'plan.Task', 'research')).toBe(
      generateHash(MESSAGE, 'plan.Task', 'research'),
    );
  });

  it('returns 16 lower-case hex characters', () => {
    expect(generateHash(undefined, 'common.Conversation', 'c')).toMatch(/^[0-9a-f]{16}$/);
  });

  it.each([
    ['the parent differs', [CONVERSATION, 'plan.Task', 'research'] as const],
    ['there is no parent', [undefined, 'plan.Task', 'research'] as const],
    ['the type differs', [MESSAGE, 'plan.Plan', 'research'] as const],
    ['the name differs', [MESSAGE, 'plan.Task', 'Research'] as const],
    ['characters move from the type to the name', [MESSAGE, 'plan.Tas', 'kresearch'] as const],
    ['characters move from the parent to the type', [`${MESSAGE}p`, 'lan.Task', 'research'] as const],
  ])('differs when %s', (_label, [parent, type, name]) => {
    const base = generateHash(MESSAGE, 'plan.Task', 'research');

    expect(generateHash(parent, type, name)).not.toBe(base);
  });
});

describe('childUrn', () => {
  it('builds a root URN from the type and the hash of the name', () => {
    const urn = childUrn(undefined, 'common.Conversation', 'hello');

    expect(urn).toBe(`cld:common.Conversation.${generateHash(undefined, 'common.Conversation', 'hello')}`);
  });

  it('appends one element to the parent', () => {
    const urn = childUrn(MESSAGE, 'plan.Task', 'research');

    expect(urn).toBe(`${MESSAGE}/plan.Task.${generateHash(MESSAGE, 'plan.Task', 'research')}`);
  });

  it('gives the same URN for the same logical resource', () => {
    expect(childUrn(MESSAGE, 'plan.Task', 'research')).toBe(childUrn(MESSAGE, 'plan.Task', 'research'));
  });

  it('gives different URNs to same-named resources under different parents', () => {
    const first = childUrn(MESSAGE, 'plan.Task', 'research');
    const second = childUrn(`${CONVERSATION}/common.Message.${H3}`, 'plan.Task', 'research');

    expect(first.slice(first.lastIndexOf('/') + 1)).not.toBe(second.slice(second.lastIndexOf('/') + 1));
  });

  it.each([
    ['an unknown namespace', MESSAGE, 'secret.Thing'],
    ['a type without a name', MESSAGE, 'plan'],
    ['a malformed parent', 'cld:nope', 'plan.Task'],
    ['a parent with a trailing slash', `${MESSAGE}/`, 'plan.Task'],
  ])('rejects %s with InvalidUrnError', (_label, parent, type) => {
    expect(() => childUrn(parent, type, 'x')).toThrow(InvalidUrnError);
  });
});

describe('navigation', () => {
  it.each([
    [TASK, MESSAGE],
    [MESSAGE, CONVERSATION],
    [CONVERSATION, undefined],
  ])('parentOf(%s) is %s', (urn, parent) => {
    expect(parentOf(urn)).toBe(parent);
  });

  it.each([
    [TASK, [CONVERSATION, MESSAGE]],
    [MESSAGE, [CONVERSATION]],
    [CONVERSATION, []],
  ])('ancestorsOf(%s) lists the ancestors root first', (urn, ancestors) => {
    expect(ancestorsOf(urn)).toEqual(ancestors);
  });

  it.each([
    [TASK, CONVERSATION],
    [CONVERSATION, CONVERSATION],
    [`cld:doc.Document.${H1}/doc.Chunk.${H2}`, `cld:doc.Document.${H1}`],
  ])('rootOf(%s) is %s', (urn, root) => {
    expect(rootOf(urn)).toBe(root);
  });

  it.each([
    [TASK, 'plan.Task'],
    [MESSAGE, 'common.Message'],
    [`${TASK}/tool.Call.${H1}`, 'tool.Call'],
  ])('typeOf(%s) is %s', (urn, type) => {
    expect(typeOf(urn)).toBe(type);
  });

  it('typeOf rejects a malformed URN with InvalidUrnError', () => {
    expect(() => typeOf(`${TASK}/../x`)).toThrow(InvalidUrnError);
  });
});

describe('keyOf / urnOfKey / keyPrefixOf / shapeOf', () => {
  const OUTPUT = childUrn(TASK, 'common.Message', 'output');
  const TURN = childUrn(TASK, 'common.Message', 'turn-1');

  it('stores a resource under cld/<path>_<shape>.json', () => {
    expect(keyOf(TASK)).toBe(
      `cld/common.Conversation.${H1}/common.Message.${H2}/plan.Task.${H3}_Conversation-Message-Task.json`,
    );
    expect(keyOf(CONVERSATION)).toBe(`cld/common.Conversation.${H1}_Conversation.json`);
  });

  it.each([
    ['a conversation', CONVERSATION, 'Conversation'],
    ['a task', TASK, 'Conversation-Message-Task'],
    ['a tool call', `${TASK}/tool.Call.${H1}`, 'Conversation-Message-Task-Call'],
    ['a turn under a task', TURN, 'Conversation-Message-Task-Message'],
    ['the output of a task', OUTPUT, 'Conversation-Message-Task-Output'],
    [
      'a Message named "output" directly under a conversation',
      childUrn(CONVERSATION, 'common.Message', 'output'),
      'Conversation-Message',
    ],
    ['a chunk', `cld:doc.Document.${H1}/doc.Chunk.${H2}`, 'Document-Chunk'],
  ])('the shape of %s is its type Names (Output for a task output)', (_label, urn, shape) => {
    expect(shapeOf(urn)).toBe(shape);
    expect(keyOf(urn).endsWith(`_${shape}.json`)).toBe(true);
  });

  it('uses only characters S3 never escapes in event notifications (letters, digits, -_./)', () => {
    for (const urn of [CONVERSATION, TASK, OUTPUT, TURN, `cld:doc.Document.${H1}/doc.Chunk.${H2}`]) {
      expect(keyOf(urn)).toMatch(/^[A-Za-z0-9\-_./]+$/);
      expect(encodeURIComponent(keyOf(urn)).replace(/%2F/g, '/')).toBe(keyOf(urn));
    }
  });

  it('gives every resource type its own Name, and none is the output shape', () => {
    const names = Object.keys(RESOURCE_SCHEMAS).map((type) => type.slice(type.indexOf('.') + 1));
    expect(new Set(names).size).toBe(names.length);
    expect(names).not.toContain(OUTPUT_SHAPE);
  });

  it.each([TASK, OUTPUT, TURN, CONVERSATION])('reads the URN back from its key: %s', (urn) => {
    expect(urnOfKey(keyOf(urn))).toBe(urn);
  });

  it('lists a subtree by the key prefix of its URN, and nothing of a sibling that starts alike', () => {
    expect(keyPrefixOf(TASK)).toBe(`cld/common.Conversation.${H1}/common.Message.${H2}/plan.Task.${H3}/`);
    expect(keyOf(TURN).startsWith(keyPrefixOf(TASK))).toBe(true);
    expect(keyOf(TASK).startsWith(keyPrefixOf(TASK))).toBe(false);
    expect(keyOf(TASK).startsWith(keyPrefixOf(MESSAGE))).toBe(true);
    expect(keyOf(`${MESSAGE}/plan.Task.${H3.slice(0, 15)}b`).startsWith(keyPrefixOf(TASK))).toBe(false);
    expect(() => keyPrefixOf(`${TASK}/`)).toThrow(InvalidUrnError);
  });

  it.each([
    ['a key without the .json suffix', keyOf(TASK).slice(0, -'.json'.length)],
    ['an upper-case suffix', `${keyOf(TASK).slice(0, -'.json'.length)}.JSON`],
    ['the old form <urn>.json', `${TASK}.json`],
    ['a key whose URN is malformed', `cld/common.Conversation.${H1}/../x_Conversation.json`],
    ['a key without a shape', `cld/common.Conversation.${H1}.json`],
    ['a key with another shape', `cld/common.Conversation.${H1}/common.Message.${H2}_Conversation-Task.json`],
    ['a turn claiming the output shape', keyOf(TURN).replace('-Message.json', '-Output.json')],
    ['an output claiming the Message shape', keyOf(OUTPUT).replace('-Output.json', '-Message.json')],
    ['a doubled suffix', `${keyOf(TASK)}.json`],
    ['an unrelated object', 'uploads/photo.jpg'],
    ['a chunk index generation', 'indexes/chunks.1.json'],
    ['the bare suffix', '.json'],
  ])('returns undefined for %s', (_label, key) => {
    expect(urnOfKey(key)).toBeUndefined();
  });
});

describe('isWithin', () => {
  it.each([
    ['the URN itself', 'cld:c1', 'cld:c1', true],
    ['a child', 'cld:c1/m', 'cld:c1', true],
    ['a grandchild', 'cld:c1/m/t', 'cld:c1', true],
    ['a sibling that merely starts with the same characters (c10 vs c1)', 'cld:c10', 'cld:c1', false],
    ['a child of that sibling (c10/m vs c1)', 'cld:c10/m', 'cld:c1', false],
    ['the parent', 'cld:c1', 'cld:c1/m', false],
    ['a real task under its conversation', TASK, CONVERSATION, true],
    ['a real conversation under its own task', CONVERSATION, TASK, false],
  ])('%s: %s within %s is %s', (_label, urn, ancestor, expected) => {
    expect(isWithin(urn, ancestor)).toBe(expected);
  });
});
