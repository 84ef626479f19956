import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NAMES,
  planActor,
  assistantActor as stepAssistantActor,
  toolActor as stepToolActor,
} from '../../shared/domain/common.js';
import { startConversation, userActor } from '../../shared/domain/conversation.js';
import { PolicyDeniedError } from '../../shared/errors.js';
import type { Actor, Policy } from '../../shared/policy/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { AnyResource, Message, Task, ToolCallResource } from '../../shared/resources/schemas.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { ToolContext } from '../../shared/tools/port.js';
import { readTool } from '../../shared/tools/read.js';
import { searchTool } from '../../shared/tools/search.js';
import { childUrn, isWithin, parentOf } from '../../shared/urn.js';
import { OPA_WASM, FUNCTIONS as POLICY_FUNCTIONS, RULES } from './table.js';

/**
 * The isolation matrix (issue "OPA policies ..."): three conversations run end to end through
 * the real handlers (local runtime, offline model: plan → tasks → search tool calls → answers);
 * then every actor those handlers act as in one conversation (plan, each task's assistant, each
 * tool call's tool, the channel user, the reply function, the dead-letter function as plan and as
 * each task's assistant) tries get, list and put on every resource of the other conversations,
 * through the runtime's own ResourceIndex and through the policy of every function of
 * policies/rules.json (`functions`) but `local`, the embedded default that may read everything. Every attempt must be denied with a reason naming the resource, and is
 * recorded; `search` and `read` with a task-scoped actor return nothing outside the task's scope.
 */

const QUESTIONS = {
  alice: '1. How does the zebra barn migration work? 2. What does the frobnicator speed setting control?',
  bob: 'What is the quokka feeding schedule?',
  carol: '1. How are walrus tusks measured? 2. Where do walruses sleep in winter?',
} as const;
type User = keyof typeof QUESTIONS;
const USERS = Object.keys(QUESTIONS) as User[];

/** Words only one conversation's stored text has (indexed below to give search something to leak). */
const SECRETS: Record<User, string> = {
  alice: 'xylophonequartz',
  bob: 'marmaladecomet',
  carol: 'tangerinegalaxy',
};

const DOCS: Record<string, string> = {
  'zebra.md':
    '# Zebra barn\n\n## Migration\n\nThe zebra migration moves every zebra to the new barn each spring, in groups of ten.\n',
  'frobnicator.md':
    '# Frobnicator\n\n## Speed setting\n\nThe frobnicator speed setting controls how fast the widget spins.\n',
  'quokka.md':
    '# Quokka care\n\n## Feeding schedule\n\nQuokkas are fed leaves at dawn and at dusk; the feeding schedule never changes.\n',
  'walrus.md':
    '# Walrus facts\n\n## Tusks\n\nWalrus tusks are measured from the gum line to the tip.\n\n## Sleep\n\nIn winter walruses sleep on sea ice or in the water.\n',
};

interface Conversation {
  user: User;
  urn: string;
  message: string;
  answer: string;
  /** Every resource of the conversation, itself included. */
  resources: AnyResource[];
  tasks: Task[];
  calls: ToolCallResource[];
}

/** One actor a handler acts as, with the function whose bundle decides for it. */
interface NamedActor {
  label: string;
  functions: string[];
  actor: Actor;
  /** The task whose subtree it may write under, for assistants and tools. */
  task?: string;
  /** What it reads of its own conversation (the positive control); default: the Message for plan, else the Conversation. */
  own?: string;
}

/**
 * The functions whose policies the matrix runs: every one of policies/rules.json but `local` (the
 * embedded default, whose `system-read-all` rule lets the operator read every conversation).
 */
const MATRIX_FUNCTIONS = POLICY_FUNCTIONS.filter((fn) => fn !== 'local').sort();

/** One recorded attempt of the matrix. */
interface Attempt {
  engine: string;
  from: User;
  actor: string;
  action: 'get' | 'list' | 'put';
  target: string;
  denied: boolean;
  reason: string;
}

let dataDir: string;
let runtime: LocalRuntime;
const conversations = new Map<User, Conversation>();
const matrix: Attempt[] = [];

function actorsOf(conversation: Conversation): NamedActor[] {
  const actors: NamedActor[] = [
    // The dead-letter function fails a request as the plan actor (a failed Plan, the answer); the
    // sweeper reads a conversation and answers a stalled message as the plan actor too.
    { label: 'plan', functions: ['plan', 'deadletter', 'sweeper'], actor: planActor(conversation.message) },
    {
      label: `user ${conversation.user}`,
      functions: ['http', 'slack', 'teams'],
      actor: userActor(`u-${conversation.user}`, conversation.urn),
    },
    { label: 'reply', functions: ['reply'], actor: userActor('function:reply', conversation.urn) },
  ];
  for (const task of conversation.tasks) {
    actors.push({
      label: `assistant on ${task.title}`,
      functions: ['assistant'],
      actor: stepAssistantActor(task.meta.id, task.assistant),
      task: task.meta.id,
    });
    // The dead-letter function reads a task and fails it (its output) as the task's assistant.
    actors.push({
      label: `dead-letter step on ${task.title}`,
      functions: ['deadletter'],
      actor: stepAssistantActor(task.meta.id),
      task: task.meta.id,
      own: task.meta.id,
    });
  }
  // Forged claims: an actor of this conversation naming a task (plan: a Message) of another one.
  // Its {task}/{message} does not lie under its {conversation}, so it applies nowhere: the actor
  // may write under neither conversation (issue 10).
  for (const other of conversations.values()) {
    if (other === conversation) continue;
    const foreign = other.tasks[0] as Task;
    const forged = { conversation: conversation.urn };
    actors.push(
      {
        label: `forged assistant of ${conversation.user} on a task of ${other.user}`,
        // (the dead-letter bundle lets an assistant read its task only: the table's deadletter rows)
        functions: ['assistant'],
        actor: { ...stepAssistantActor(foreign.meta.id), ...forged },
        task: foreign.meta.id,
        own: conversation.urn,
      },
      {
        label: `forged tool of ${conversation.user} on a task of ${other.user}`,
        functions: ['tool'],
        actor: { ...stepToolActor(foreign.meta.id, 'search'), ...forged },
        task: foreign.meta.id,
      },
      {
        label: `forged plan of ${conversation.user} on the message of ${other.user}`,
        functions: ['plan', 'deadletter'],
        actor: { ...planActor(other.message), ...forged },
        own: conversation.urn,
      },
    );
  }
  for (const call of conversation.calls) {
    const task = parentOf(call.meta.id) as string;
    actors.push(
      {
        label: `tool function reading ${call.call.name} call`,
        functions: ['tool'],
        actor: stepAssistantActor(task),
      },
      {
        label: `tool ${call.call.name}`,
        functions: ['tool'],
        actor: stepToolActor(task, call.call.name),
        task,
      },
    );
  }
  return actors;
}

/** The engines the matrix runs through: the runtime's own index and each function's policy. */
async function enginesFor(named: NamedActor): Promise<{ engine: string; resources: ResourceIndex }[]> {
  const engines = [{ engine: 'runtime (builtin, every rule)', resources: runtime.deps.resources }];
  for (const fn of named.functions) {
    engines.push({
      engine: `builtin ${fn}`,
      resources: new ResourceIndex(runtime.storage, new RulesPolicy(RULES, { function: fn })),
    });
    // The committed bundles (policies/dist): every function has one (decision-table.test.ts).
    const policy: Policy = await OPA_WASM.policyFor(fn);
    engines.push({ engine: `opa-wasm ${fn}`, resources: new ResourceIndex(runtime.storage, policy) });
  }
  return engines;
}

async function attempt(
  record: Omit<Attempt, 'denied' | 'reason'>,
  run: () => Promise<unknown>,
): Promise<Attempt> {
  let row: Attempt;
  try {
    await run();
    row = { ...record, denied: false, reason: 'ALLOWED' };
  } catch (error) {
    if (!(error instanceof PolicyDeniedError)) throw error;
    row = { ...record, denied: true, reason: String(error.details?.reason) };
  }
  matrix.push(row);
  return row;
}

function intrusion(parent: string, name: string): Message {
  return {
    meta: withMeta({ type: 'common.Message', name, parent }),
    role: 'assistant',
    content: 'written from another conversation',
  };
}

function toolContext(actor: Actor): ToolContext {
  return {
    actor,
    resources: runtime.deps.resources,
    search: runtime.deps.search,
    signal: new AbortController().signal,
  };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cld-isolation-'));
  await mkdir(join(dataDir, 'docs'));
  for (const [name, text] of Object.entries(DOCS)) await writeFile(join(dataDir, 'docs', name), text);
  runtime = await createLocalRuntime({ dataDir, backoffMs: () => 5 });
  await ingest(['docs'], {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: dataDir,
  });
  for (const user of USERS) {
    const started = await startConversation(runtime.deps.resources, {
      user: `u-${user}`,
      channel: { kind: 'cli' },
      content: `${QUESTIONS[user]} (${SECRETS[user]})`,
      conversationName: `isolation-${user}`,
    });
    conversations.set(user, {
      user,
      urn: started.conversation,
      message: started.message,
      answer: started.answer,
      resources: [],
      tasks: [],
      calls: [],
    });
  }
  await runtime.bus.idle();
  for (const conversation of conversations.values()) {
    const below = await runtime.deps.resources.list(SYSTEM_ACTOR, conversation.urn);
    conversation.resources = [await runtime.deps.resources.get(SYSTEM_ACTOR, conversation.urn), ...below];
    conversation.tasks = below.filter((r): r is Task => r.meta.type === 'plan.Task');
    conversation.calls = below.filter((r): r is ToolCallResource => r.meta.type === 'tool.Call');
    // Conversation text in the search index: what a leaky search would return to other conversations.
    const index = runtime.deps.search as MiniSearchIndex;
    index.add([
      {
        urn: conversation.message,
        type: 'common.Message',
        text: `${QUESTIONS[conversation.user]} ${SECRETS[conversation.user]}`,
      },
    ]);
  }
}, 60_000);

afterAll(async () => {
  await writeFile(join(dataDir, 'isolation-matrix.json'), JSON.stringify(matrix, null, 1));
});

describe('three conversations driven through the real handlers', () => {
  it('each ran to an answer, with tasks, tool calls and tool results of its own', () => {
    expect(runtime.bus.deadLetters).toEqual([]);
    for (const conversation of conversations.values()) {
      expect(
        conversation.resources.some((r) => r.meta.id === conversation.answer),
        conversation.user,
      ).toBe(true);
      expect(conversation.tasks.length, conversation.user).toBeGreaterThanOrEqual(1);
      expect(conversation.calls.length, conversation.user).toBeGreaterThanOrEqual(1);
      for (const resource of conversation.resources)
        expect(isWithin(resource.meta.id, conversation.urn)).toBe(true);
    }
  });
});

describe('isolation matrix', () => {
  it('denies and records every get, list and put by every actor of one conversation on every resource of the others', async () => {
    let controls = 0;
    for (const from of conversations.values()) {
      for (const named of actorsOf(from)) {
        for (const { engine, resources } of await enginesFor(named)) {
          // Positive control: the actor does reach its own conversation (the denials are not vacuous).
          const own = named.own ?? (named.actor.kind === 'plan' ? from.message : from.urn);
          await resources.get(named.actor, own);
          controls += 1;
          for (const to of conversations.values()) {
            if (to === from) continue;
            for (const resource of to.resources) {
              const target = resource.meta.id;
              const base = { engine, from: from.user, actor: named.label };
              await attempt({ ...base, action: 'get', target }, () => resources.get(named.actor, target));
              await attempt({ ...base, action: 'list', target }, () =>
                resources.listUrns(named.actor, target),
              );
              await attempt({ ...base, action: 'put', target }, () => resources.put(named.actor, resource));
              await attempt({ ...base, action: 'put', target: `${target}/<new Message>` }, () =>
                resources.put(named.actor, intrusion(target, `intrusion-${from.user}`)),
              );
            }
          }
        }
      }
    }

    const allowed = matrix.filter((row) => !row.denied);
    expect(allowed).toEqual([]);
    for (const row of matrix) {
      const urn = row.target.replace('/<new Message>', '');
      expect(row.reason, `${row.engine} ${row.actor} ${row.action} ${row.target}`).toContain(urn);
    }
    // 3 conversations × ≥ 6 actors × 2 others × their resources × 4 attempts.
    expect(matrix.length).toBeGreaterThan(1000);
    // Forged claims were tried on every engine, writes under the claimed foreign task included.
    const forged = matrix.filter((row) => row.actor.startsWith('forged '));
    expect(new Set(forged.map((row) => row.engine.replace(/ \S+$/, '')))).toEqual(
      new Set(['runtime (builtin, every', 'builtin', 'opa-wasm']),
    );
    expect(
      forged.filter(
        (row) => row.action === 'put' && /plan\.Task\.[0-9a-f]{16}\/<new Message>$/.test(row.target),
      ).length,
    ).toBeGreaterThan(10);
    const bundles = new Set(matrix.map((row) => /^builtin (\S+)$/.exec(row.engine)?.[1]).filter(Boolean));
    expect([...bundles].sort()).toEqual(MATRIX_FUNCTIONS);
    expect(MATRIX_FUNCTIONS).toContain('deadletter');
    expect(controls).toBeGreaterThan(20);
  });

  it('keeps each assistant and tool writing only under its own task within its conversation', async () => {
    let checked = 0;
    for (const conversation of conversations.values()) {
      for (const named of actorsOf(conversation).filter((a) => a.task !== undefined)) {
        for (const task of conversation.tasks) {
          if (isWithin(task.meta.id, named.task as string)) continue;
          const row = await attempt(
            {
              engine: 'runtime',
              from: conversation.user,
              actor: named.label,
              action: 'put',
              target: task.meta.id,
            },
            () => runtime.deps.resources.put(named.actor, intrusion(task.meta.id, 'sibling-write')),
          );
          expect(row.denied, `${named.label} → ${task.title}`).toBe(true);
          checked += 1;
        }
        // And never directly under the conversation or the user message.
        for (const parent of [conversation.urn, conversation.message]) {
          const row = await attempt(
            { engine: 'runtime', from: conversation.user, actor: named.label, action: 'put', target: parent },
            () => runtime.deps.resources.put(named.actor, intrusion(parent, 'ancestor-write')),
          );
          expect(row.denied).toBe(true);
        }
      }
    }
    expect(checked).toBeGreaterThan(0);
  });
});

describe('search and read with a task-scoped actor', () => {
  it("search returns nothing outside the task scope, even for another conversation's own words", async () => {
    let positive = 0;
    for (const from of conversations.values()) {
      for (const call of from.calls) {
        const actor = stepToolActor(parentOf(call.meta.id) as string, 'search');
        for (const to of conversations.values()) {
          const { results } = (await searchTool.execute(
            { query: SECRETS[to.user], limit: 20 },
            toolContext(actor),
          )) as {
            results: { urn: string }[];
          };
          for (const { urn } of results) {
            expect(urn.startsWith('cld:doc.Document.') || isWithin(urn, from.urn), urn).toBe(true);
          }
          if (to === from) {
            expect(results.map((r) => r.urn)).toContain(from.message);
            positive += 1;
          } else {
            expect(results).toEqual([]);
            const scoped = (await searchTool.execute(
              { query: QUESTIONS[to.user], prefix: to.urn, limit: 20 },
              toolContext(actor),
            )) as { results: unknown[] };
            expect(scoped.results).toEqual([]);
          }
        }
        // Documents stay searchable: isolation does not hide the shared corpus.
        const docs = (await searchTool.execute({ query: 'walrus tusks' }, toolContext(actor))) as {
          results: { urn: string }[];
        };
        expect(docs.results.length).toBeGreaterThan(0);
      }
    }
    expect(positive).toBeGreaterThanOrEqual(3);
  });

  it('read reaches its own conversation and corpora but no resource of another conversation', async () => {
    for (const from of conversations.values()) {
      const task = from.tasks[0] as Task;
      const actor = stepToolActor(task.meta.id, 'read');
      const own = (await readTool.execute({ urn: from.answer }, toolContext(actor))) as {
        meta: { id: string };
      };
      expect(own.meta.id).toBe(from.answer);
      for (const to of conversations.values()) {
        if (to === from) continue;
        for (const resource of to.resources) {
          const reading = readTool.execute({ urn: resource.meta.id }, toolContext(actor));
          await expect(reading).rejects.toThrow(PolicyDeniedError);
          await expect(reading).rejects.toThrow(`no rule allows tool tool:read to get ${resource.meta.id}`);
        }
      }
    }
  });

  it("a read call of another conversation through the tool handler stores the deny reason in the task's tool result", async () => {
    const alice = conversations.get('alice') as Conversation;
    const bob = conversations.get('bob') as Conversation;
    const leaf = alice.calls[0] as ToolCallResource;
    const task = parentOf(leaf.meta.id) as string;
    const call: ToolCallResource = {
      meta: withMeta({ type: 'tool.Call', name: NAMES.call(99, 'isolation-read'), parent: task }),
      call: { id: 'isolation-read', name: 'read', input: { urn: bob.answer } },
      turn: leaf.turn,
    };

    await runtime.deps.resources.put(stepAssistantActor(task), call);
    await runtime.bus.idle();

    const result = await runtime.deps.resources.getAs(
      SYSTEM_ACTOR,
      'common.Message',
      childUrn(task, 'common.Message', NAMES.result(call.meta.name)),
    );
    expect(result.status).toBe('ERROR');
    expect(result.error).toEqual({
      code: 'POLICY_DENIED',
      message: `policy denied get: no rule allows tool tool:read to get ${bob.answer}`,
    });
    expect(result.content).not.toContain(QUESTIONS.bob);
    expect(runtime.bus.deadLetters).toEqual([]);
  });
});
