import { withMeta } from '../../shared/resources/meta.js';
import type {
  Assistant,
  Chunk,
  Conversation,
  Message,
  Task,
  Tool,
  ToolCallResource,
} from '../../shared/resources/schemas.js';

/** Builders of valid resources for unit tests (a fixed clock keeps `createdAt` stable). */

export const NOW = new Date('2025-01-02T03:04:05.000Z');

export const ASSISTANT_URN = withMeta({ type: 'common.Assistant', name: 'researcher' }, NOW).id;

export function conversation(name = 'conversation', actor = 'U123'): Conversation {
  return {
    meta: withMeta({ type: 'common.Conversation', name }, NOW),
    actor,
    channel: { kind: 'cli' },
  };
}

export function message(
  parent: string,
  name: string,
  content = 'hello',
  role: Message['role'] = 'user',
): Message {
  return { meta: withMeta({ type: 'common.Message', name, parent }, NOW), role, content };
}

export function task(parent: string, name: string, depth = 1): Task {
  return {
    meta: withMeta(
      {
        type: 'plan.Task',
        name,
        parent,
        purpose: `do ${name}`,
        evaluation: `${name} is done`,
      },
      NOW,
    ),
    title: name,
    subtasks: [],
    assistant: ASSISTANT_URN,
    election: { assistant: ASSISTANT_URN, name: 'researcher', score: 0.9 },
    status: 'pending',
    depth,
    round: 0,
  };
}

export function assistant(name = 'researcher'): Assistant {
  return {
    meta: withMeta({ type: 'common.Assistant', name, purpose: 'Finds facts.' }, NOW),
    tools: ['search'],
  };
}

export function tool(name = 'search'): Tool {
  return {
    meta: withMeta({ type: 'common.Tool', name }, NOW),
    function: {
      name,
      description: 'Searches the corpus.',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
    timeoutMs: 5_000,
  };
}

export function toolCall(parent: string, turn: string, id = 'tooluse-1'): ToolCallResource {
  return {
    meta: withMeta({ type: 'tool.Call', name: id, parent }, NOW),
    call: { id, name: 'search', input: { query: 'urns' } },
    turn,
  };
}

export function chunk(document: string, index = 0): Chunk {
  return {
    meta: withMeta({ type: 'doc.Chunk', name: String(index), parent: document }, NOW),
    text: 'Resources are identified by URNs.',
    index,
  };
}

/** Runs `fn` and returns what it threw (fails the test when it throws nothing). */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}
