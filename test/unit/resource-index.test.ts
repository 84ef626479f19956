import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidUrnError, NotFoundError, PolicyDeniedError, ValidationError } from '../../shared/errors.js';
import type { Actor } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { Message } from '../../shared/resources/schemas.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { childUrn, keyOf } from '../../shared/urn.js';
import { conversation, message, task } from './builders.js';

const policy = new RulesPolicy(
  JSON.parse(await readFile(new URL('../../policies/rules.json', import.meta.url), 'utf8')) as unknown,
);

// Conversation C with user message M, root tasks T and T2, subtask SUB of T, and a Message under T.
const CONVERSATION = conversation('c');
const C = CONVERSATION.meta.id;
const MESSAGE = message(C, 'user message', 'What is a URN?');
const M = MESSAGE.meta.id;
const TASK = task(M, 'research');
const T = TASK.meta.id;
const TASK2 = task(M, 'write');
const SUBTASK = task(T, 'read the design', 2);
const TURN = message(T, 'turn 1', 'Searching.', 'assistant');

const user: Actor = { kind: 'user', id: 'U123', conversation: C };
const plan: Actor = { kind: 'plan', id: 'plan', conversation: C, message: M };
const assistant: Actor = { kind: 'assistant', id: TASK.assistant, conversation: C, task: T };
const stranger: Actor = {
  kind: 'user',
  id: 'U999',
  conversation: childUrn(undefined, 'common.Conversation', 'someone else'),
};

let root: string;
let storage: FilesystemStorage;
let index: ResourceIndex;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'cld-resource-index-'));
  storage = new FilesystemStorage(root);
  index = new ResourceIndex(storage, policy);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Path of the object stored under a resource's key. */
function pathOf(urn: string): string {
  return join(root, ...keyOf(urn).split('/'));
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Runs `fn` and returns what it rejected with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

/** Stores the conversation tree used by the list tests. */
async function seedTree(): Promise<void> {
  await index.put(user, CONVERSATION);
  await index.put(user, MESSAGE);
  await index.put(plan, TASK);
  await index.put(plan, TASK2);
  await index.put(assistant, SUBTASK);
  await index.put(assistant, TURN);
}

describe('ResourceIndex.put', () => {
  it('validates the resource and writes it under its key (cld/<path>_<shape>.json)', async () => {
    const outcome = await index.put(user, CONVERSATION);

    expect(outcome).toEqual({ created: true, resource: CONVERSATION });
    expect(JSON.parse(await readFile(pathOf(C), 'utf8'))).toEqual(CONVERSATION);
  });

  it('stores schema defaults, so what is read back is what was parsed', async () => {
    const bare = structuredClone(MESSAGE) as Partial<Message>;
    delete bare.content;

    const outcome = await index.put(user, bare as Message);

    expect(outcome.resource.content).toBe('');
    expect(JSON.parse(await readFile(pathOf(M), 'utf8'))).toHaveProperty('content', '');
  });

  it('returns created: false and the FIRST stored content on a second put', async () => {
    await index.put(user, message(C, 'follow-up', 'first'));

    const second = await index.put(user, message(C, 'follow-up', 'second'));

    expect(second.created).toBe(false);
    expect(second.resource.content).toBe('first');
    expect((await index.getAs(user, 'common.Message', second.resource.meta.id)).content).toBe('first');
    expect(JSON.parse(await readFile(pathOf(second.resource.meta.id), 'utf8'))).toHaveProperty(
      'content',
      'first',
    );
  });

  it('rejects a malformed resource with ValidationError and writes nothing', async () => {
    const invalid = { ...MESSAGE, role: 'robot' } as unknown as Message;

    const error = await rejectionOf(index.put(user, invalid));

    expect(error).toBeInstanceOf(ValidationError);
    expect(await storage.findByExtension('.json')).toEqual([]);
  });

  it('rejects a resource whose meta does not match its URN and writes nothing', async () => {
    // Claims the id of another message: the name does not hash to it.
    const forged: Message = { ...MESSAGE, meta: { ...MESSAGE.meta, name: 'something else' } };

    const error = await rejectionOf(index.put(user, forged));

    expect(error).toBeInstanceOf(ValidationError);
    expect(await exists(pathOf(M))).toBe(false);
  });

  it('throws PolicyDeniedError with the reason when the policy denies, and writes nothing', async () => {
    const underSibling = message(TASK2.meta.id, 'output', 'not mine');

    const error = await rejectionOf(index.put(assistant, underSibling));

    expect(error).toBeInstanceOf(PolicyDeniedError);
    const denied = error as PolicyDeniedError;
    expect(denied.code).toBe('POLICY_DENIED');
    expect(denied.details).toMatchObject({ actor: assistant.id, kind: 'assistant', action: 'put' });
    expect(denied.details?.reason).toBe(
      `no rule allows assistant ${assistant.id} to put ${underSibling.meta.id}`,
    );
    expect(await exists(pathOf(underSibling.meta.id))).toBe(false);
    expect(await storage.findByExtension('.json')).toEqual([]);
  });
});

describe('ResourceIndex.get', () => {
  it('returns a stored resource, parsed', async () => {
    await index.put(user, CONVERSATION);
    await index.put(user, MESSAGE);

    expect(await index.get(user, M)).toEqual(MESSAGE);
  });

  it('throws NotFoundError for a resource that does not exist', async () => {
    expect(await rejectionOf(index.get(user, M))).toBeInstanceOf(NotFoundError);
  });

  it('throws InvalidUrnError for a malformed URN before asking storage', async () => {
    expect(await rejectionOf(index.get(user, `${C}/../x`))).toBeInstanceOf(InvalidUrnError);
  });

  it('throws PolicyDeniedError for a resource of another conversation', async () => {
    await index.put(user, CONVERSATION);

    const error = await rejectionOf(index.get(stranger, C));

    expect(error).toBeInstanceOf(PolicyDeniedError);
    expect((error as PolicyDeniedError).details?.reason).toContain(C);
  });

  it.each<[string, () => string, RegExp]>([
    ['is not JSON', () => '{"meta": ', /is not JSON/],
    ['is another resource (wrong id)', () => JSON.stringify(message(C, 'another message')), /claims id/],
    ['fails its schema', () => JSON.stringify({ ...MESSAGE, role: 'robot' }), /invalid common\.Message/],
    [
      'has a meta.name that does not hash to its id',
      () => JSON.stringify({ ...MESSAGE, meta: { ...MESSAGE.meta, name: 'edited' } }),
      /does not match its URN/,
    ],
    [
      'is a Task stored under a Message URN',
      () => JSON.stringify({ ...task(C, 'x'), meta: { ...task(C, 'x').meta, id: M } }),
      /does not match its URN/,
    ],
  ])('throws ValidationError when the stored JSON %s', async (_label, tampered, message) => {
    await storage.put(keyOf(M), tampered());

    const error = await rejectionOf(index.get(user, M));

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(message);
  });

  it('getAs rejects a stored resource of another type with ValidationError', async () => {
    await index.put(user, MESSAGE);

    expect(await rejectionOf(index.getAs(user, 'plan.Task', M))).toBeInstanceOf(ValidationError);
  });

  it('find returns undefined for a missing resource but still enforces the policy', async () => {
    expect(await index.find(user, 'common.Message', M)).toBeUndefined();
    expect(await rejectionOf(index.find(stranger, 'common.Message', M))).toBeInstanceOf(PolicyDeniedError);
  });

  it('find reads a stored resource (from storage, not only the cache) and rejects another type', async () => {
    await index.put(user, MESSAGE);
    const fresh = new ResourceIndex(storage, policy);

    expect(await fresh.find(user, 'common.Message', M)).toEqual(MESSAGE);
    expect(await rejectionOf(fresh.find(user, 'plan.Task', M))).toBeInstanceOf(ValidationError);
    expect(await rejectionOf(new ResourceIndex(storage, policy).find(user, 'plan.Task', M))).toBeInstanceOf(
      ValidationError,
    );
  });

  it('getMany skips missing resources and keeps the order asked for', async () => {
    await seedTree();
    const missing = childUrn(M, 'plan.Task', 'never planned');

    const found = await index.getMany(user, [TASK2.meta.id, missing, T]);

    expect(found.map((resource) => resource.meta.id)).toEqual([TASK2.meta.id, T]);
  });
});

describe('ResourceIndex.list', () => {
  it('lists the whole subtree under a URN, without the URN itself', async () => {
    await seedTree();

    const urns = await index.listUrns(user, C);

    expect(urns.sort()).toEqual([M, T, TASK2.meta.id, SUBTASK.meta.id, TURN.meta.id].sort());
  });

  it.each<[string, () => string, Parameters<ResourceIndex['listUrns']>[2], () => string[]]>([
    ['direct children only', () => M, { childrenOnly: true }, () => [T, TASK2.meta.id]],
    ['one type at any depth', () => M, { type: 'plan.Task' }, () => [T, TASK2.meta.id, SUBTASK.meta.id]],
    [
      'one type among direct children',
      () => T,
      { type: 'plan.Task', childrenOnly: true },
      () => [SUBTASK.meta.id],
    ],
    ['Messages under a task', () => T, { type: 'common.Message' }, () => [TURN.meta.id]],
    ['a type that is not there', () => C, { type: 'doc.Chunk' }, () => []],
  ])('filters to %s', async (_label, under, options, expected) => {
    await seedTree();

    const urns = await index.listUrns(user, under(), options);

    expect(urns.sort()).toEqual(expected().sort());
  });

  it('returns parsed resources', async () => {
    await seedTree();

    const resources = await index.list(user, M, { childrenOnly: true });

    expect(resources.map((resource) => resource.meta.type)).toEqual(['plan.Task', 'plan.Task']);
    expect(resources.find((resource) => resource.meta.id === T)).toEqual(TASK);
  });

  it('throws PolicyDeniedError for a subtree the actor may not list', async () => {
    await seedTree();

    expect(await rejectionOf(index.listUrns(stranger, C))).toBeInstanceOf(PolicyDeniedError);
  });

  it('returns nothing under a URN with no children', async () => {
    await seedTree();

    expect(await index.listUrns(user, TURN.meta.id)).toEqual([]);
  });
});
