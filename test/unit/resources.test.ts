import { describe, expect, it } from 'vitest';
import { InvalidUrnError, ValidationError } from '../../shared/errors.js';
import { assertMetaConsistent, toDescription, withMeta } from '../../shared/resources/meta.js';
import {
  type AnyResource,
  parseAs,
  parseResource,
  RESOURCE_SCHEMAS,
  ResourceMetaSchema,
} from '../../shared/resources/schemas.js';
import { childUrn, generateHash, parentOf } from '../../shared/urn.js';
import { assistant, chunk, conversation, message, NOW, task, thrownBy, tool, toolCall } from './builders.js';

const CONVERSATION = conversation();
const MESSAGE = message(CONVERSATION.meta.id, 'user message');
const TASK = task(MESSAGE.meta.id, 'research');
const DOCUMENT_URN = childUrn(undefined, 'doc.Document', 'readme.md');

/** A deep copy that a test may mutate freely. */
function copy<T>(value: T): T {
  return structuredClone(value);
}

describe('withMeta', () => {
  it('derives id and hash from parent, type and name', () => {
    const meta = withMeta({ type: 'plan.Task', name: 'research', parent: MESSAGE.meta.id }, NOW);

    expect(meta.id).toBe(childUrn(MESSAGE.meta.id, 'plan.Task', 'research'));
    expect(meta.hash).toBe(generateHash(MESSAGE.meta.id, 'plan.Task', 'research'));
    expect(meta.id.endsWith(`/plan.Task.${meta.hash}`)).toBe(true);
    expect(meta.parent).toBe(MESSAGE.meta.id);
    expect(parentOf(meta.id)).toBe(meta.parent);
  });

  it('gives the same URN for the same inputs at different times', () => {
    const first = withMeta({ type: 'plan.Task', name: 'research', parent: MESSAGE.meta.id }, NOW);
    const later = withMeta(
      { type: 'plan.Task', name: 'research', parent: MESSAGE.meta.id },
      new Date('2030-01-01T00:00:00Z'),
    );

    expect(later.id).toBe(first.id);
    expect(later.hash).toBe(first.hash);
    expect(later.createdAt).not.toBe(first.createdAt);
  });

  it.each([
    ['name', { type: 'plan.Task', name: 'write', parent: MESSAGE.meta.id }],
    ['parent', { type: 'plan.Task', name: 'research', parent: TASK.meta.id }],
    ['type', { type: 'plan.Plan', name: 'research', parent: MESSAGE.meta.id }],
  ] as const)('gives a different URN when the %s differs', (_label, input) => {
    const base = withMeta({ type: 'plan.Task', name: 'research', parent: MESSAGE.meta.id }, NOW);

    expect(withMeta(input, NOW).id).not.toBe(base.id);
  });

  it('leaves parent out of a root resource', () => {
    const meta = withMeta({ type: 'common.Conversation', name: 'root' }, NOW);

    expect(meta).not.toHaveProperty('parent');
    expect(meta.id).toBe(childUrn(undefined, 'common.Conversation', 'root'));
  });

  it('fills the description fields with empty strings and sets createdAt from the clock', () => {
    const meta = withMeta({ type: 'common.Conversation', name: 'root', purpose: 'Chat.' }, NOW);

    expect(meta).toMatchObject({
      purpose: 'Chat.',
      instructions: '',
      applicability: '',
      evaluation: '',
      createdAt: '2025-01-02T03:04:05.000Z',
    });
  });

  it('includes tokens and score only when given', () => {
    const without = withMeta({ type: 'doc.Chunk', name: '0', parent: DOCUMENT_URN }, NOW);
    const withBoth = withMeta(
      { type: 'doc.Chunk', name: '0', parent: DOCUMENT_URN, tokens: 12, score: 0.5 },
      NOW,
    );

    expect(without).not.toHaveProperty('tokens');
    expect(without).not.toHaveProperty('score');
    expect(withBoth).toMatchObject({ tokens: 12, score: 0.5 });
  });

  it('builds meta that the meta schema accepts', () => {
    const meta = withMeta({ type: 'plan.Task', name: 'research', parent: MESSAGE.meta.id, tokens: 3 }, NOW);

    expect(ResourceMetaSchema.safeParse(meta).success).toBe(true);
  });

  it.each([
    ['a malformed parent', 'cld:not-a-urn'],
    ['a parent with a ".." element', `${CONVERSATION.meta.id}/..`],
  ])('rejects %s with InvalidUrnError', (_label, parent) => {
    expect(() => withMeta({ type: 'plan.Task', name: 'x', parent }, NOW)).toThrow(InvalidUrnError);
  });
});

describe('toDescription', () => {
  it.each([
    [
      'all four fields, in order, separated by blank lines',
      { purpose: 'P.', instructions: 'I.', applicability: 'A.', evaluation: 'E.' },
      '**Purpose:** P.\n\n**Instructions:** I.\n\n**Applicability:** A.\n\n**Evaluation:** E.',
    ],
    [
      'only the fields that are set',
      { purpose: 'P.', evaluation: 'E.' },
      '**Purpose:** P.\n\n**Evaluation:** E.',
    ],
    [
      'empty strings as absent',
      { purpose: '', instructions: 'I.', applicability: '', evaluation: '' },
      '**Instructions:** I.',
    ],
    [
      'nothing when every field is empty',
      { purpose: '', instructions: '', applicability: '', evaluation: '' },
      '',
    ],
    ['nothing for no fields', {}, ''],
  ])('compiles %s', (_label, description, expected) => {
    expect(toDescription(description)).toBe(expected);
  });

  it('compiles the description of a built resource', () => {
    expect(toDescription(TASK.meta)).toBe('**Purpose:** do research\n\n**Evaluation:** research is done');
  });
});

describe('parseResource', () => {
  const message2 = message(CONVERSATION.meta.id, 'second');
  const samples: Array<[string, AnyResource]> = [
    ['common.Conversation', CONVERSATION],
    ['common.Message', MESSAGE],
    ['plan.Task', TASK],
    ['common.Assistant', assistant()],
    ['common.Tool', tool()],
    ['tool.Call', toolCall(TASK.meta.id, message2.meta.id)],
    ['doc.Chunk', chunk(DOCUMENT_URN)],
  ];

  it.each(samples)('parses a valid %s with the schema of its meta.type', (type, resource) => {
    const parsed = parseResource(copy(resource));

    expect(parsed.meta.type).toBe(type);
    expect(parsed).toEqual(resource);
  });

  it('applies schema defaults', () => {
    const bare = copy(MESSAGE) as Partial<typeof MESSAGE>;
    delete bare.content;

    const parsed = parseAs('common.Message', bare);

    expect(parsed.content).toBe('');
  });

  it('picks the schema by meta.type, not by the shape', () => {
    // A well-formed Message that claims to be a Task is checked against the Task schema.
    const claimsTask = copy(MESSAGE) as unknown as { meta: { type: string } };
    claimsTask.meta.type = 'plan.Task';

    const error = thrownBy(() => parseResource(claimsTask));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^invalid plan\.Task:/);
  });

  it.each([
    ['an unknown type', { meta: { ...MESSAGE.meta, type: 'common.Secret' } }],
    ['a missing type', { meta: { id: MESSAGE.meta.id } }],
    ['a non-string type', { meta: { ...MESSAGE.meta, type: 42 } }],
    ['a missing meta', { role: 'user' }],
    ['null', null],
    ['a string', 'common.Message'],
    [
      'an inherited property name as the type (constructor)',
      { meta: { ...MESSAGE.meta, type: 'constructor' } },
    ],
    ['an inherited property name as the type (toString)', { meta: { ...MESSAGE.meta, type: 'toString' } }],
    ['an inherited property name as the type (__proto__)', { meta: { ...MESSAGE.meta, type: '__proto__' } }],
  ])('rejects %s with ValidationError', (_label, value) => {
    const error = thrownBy(() => parseResource(value));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('VALIDATION');
    expect((error as Error).message).toMatch(/^unknown resource type/);
  });

  it.each<[string, () => unknown, RegExp]>([
    ['a Message with an unknown role', () => ({ ...copy(MESSAGE), role: 'robot' }), /role/],
    [
      'a Message whose id is not a URN',
      () => ({ ...copy(MESSAGE), meta: { ...MESSAGE.meta, id: 'cld:../etc/passwd' } }),
      /not a valid cld: URN/,
    ],
    [
      'a Message with an upper-case hash',
      () => ({ ...copy(MESSAGE), meta: { ...MESSAGE.meta, hash: 'ABC' } }),
      /hash/,
    ],
    [
      'a Message with an empty name',
      () => ({ ...copy(MESSAGE), meta: { ...MESSAGE.meta, name: '' } }),
      /name/,
    ],
    ['a Task at depth 0', () => ({ ...copy(TASK), depth: 0 }), /depth/],
    ['a Task with a status other than pending', () => ({ ...copy(TASK), status: 'done' }), /status/],
    ['a Task whose subtasks are not URNs', () => ({ ...copy(TASK), subtasks: ['task-2'] }), /subtasks/],
    [
      'a Conversation without an actor',
      () => ({ meta: CONVERSATION.meta, channel: { kind: 'cli' } }),
      /actor/,
    ],
    [
      'a Conversation on an unknown channel',
      () => ({ ...copy(CONVERSATION), channel: { kind: 'fax' } }),
      /channel/,
    ],
    ['a Tool with a zero timeout', () => ({ ...copy(tool()), timeoutMs: 0 }), /timeoutMs/],
    [
      'a Tool whose function name has a space',
      () => {
        const value = copy(tool());
        value.function.name = 'web search';
        return value;
      },
      /function\.name/,
    ],
    ['a Chunk with a negative index', () => ({ ...copy(chunk(DOCUMENT_URN)), index: -1 }), /index/],
  ])('rejects %s with ValidationError naming the field', (_label, build, field) => {
    const error = thrownBy(() => parseResource(build()));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^invalid [a-z]+\.[A-Z][A-Za-z]*:/);
    expect((error as Error).message).toMatch(field);
    expect((error as Error).cause).toBeDefined();
  });

  it.each<[string, () => unknown]>([
    ['at the top level', () => ({ ...copy(MESSAGE), isAdmin: true })],
    ['in meta', () => ({ ...copy(MESSAGE), meta: { ...MESSAGE.meta, isAdmin: true } })],
    [
      'in a tool call',
      () => ({ ...copy(MESSAGE), toolCalls: [{ id: 't1', name: 'search', input: {}, isAdmin: true }] }),
    ],
    ['in a channel', () => ({ ...copy(CONVERSATION), channel: { kind: 'cli', isAdmin: true } })],
    ['in an election', () => ({ ...copy(TASK), election: { ...TASK.election, isAdmin: true } })],
  ])('rejects an unknown field %s (strict objects)', (_label, build) => {
    const error = thrownBy(() => parseResource(build()));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/isAdmin/);
  });

  it('keeps unknown keywords inside a tool JSON schema (loose by design)', () => {
    const value = copy(tool());
    value.function.parameters = { ...value.function.parameters, additionalProperties: false };

    const parsed = parseAs('common.Tool', value);

    expect(parsed.function.parameters).toHaveProperty('additionalProperties', false);
  });

  it('has a schema for every type in its table', () => {
    expect(Object.keys(RESOURCE_SCHEMAS).sort()).toEqual(
      [
        'common.Assistant',
        'common.Conversation',
        'common.Message',
        'common.Tool',
        'doc.Chunk',
        'doc.Document',
        'doc.Graph',
        'plan.Plan',
        'plan.Task',
        'plan.Verdict',
        'tool.Call',
        'tool.Approval',
        'tool.Decision',
        'tool.Execution',
        'tool.Discovery',
        'tool.ToolApproval',
      ].sort(),
    );
  });
});

describe('parseAs', () => {
  it('returns a resource of the expected type', () => {
    expect(parseAs('plan.Task', copy(TASK)).depth).toBe(1);
  });

  it('rejects a valid resource of another type with ValidationError', () => {
    const error = thrownBy(() => parseAs('plan.Task', copy(MESSAGE)));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain(`expected plan.Task, got common.Message (${MESSAGE.meta.id})`);
  });
});

describe('assertMetaConsistent', () => {
  it.each([
    ['a root resource', CONVERSATION.meta],
    ['a nested resource', TASK.meta],
  ])('accepts the meta withMeta built for %s', (_label, meta) => {
    expect(() => assertMetaConsistent(meta)).not.toThrow();
  });

  it.each([
    ['an id that belongs to another name', { id: childUrn(MESSAGE.meta.id, 'plan.Task', 'other') }],
    ['a name that does not hash to the id', { name: 'other' }],
    ['a parent that is not the id’s parent', { parent: CONVERSATION.meta.id }],
    ['no parent on a nested id', { parent: undefined }],
    ['a type that is not the id’s type', { type: 'plan.Plan' }],
    ['a hash field that is not the id’s hash', { hash: '0000000000000000' }],
  ])('rejects a forged meta with %s', (_label, forged) => {
    const meta = { ...TASK.meta, ...forged };

    const error = thrownBy(() => assertMetaConsistent(meta));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('does not match its URN');
  });
});
