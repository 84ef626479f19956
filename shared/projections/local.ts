import { join } from 'node:path';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { JsonlJournal } from './journal.js';
import {
  type ApplyResult,
  assertValidApply,
  assertValidKey,
  type Projection,
  type ProjectionKey,
  type ProjectionStore,
  type ProjectionValues,
} from './port.js';

interface State {
  values: Record<string, number>;
  members: Set<string>;
  since?: string;
}

/** One journal record: an applied member (or a reset of the conversation). */
const EntrySchema = z.union([
  z.strictObject({
    name: z.string().min(1),
    member: z.string().min(1),
    increments: z.record(z.string(), z.number().int().nonnegative()),
    since: z.string().optional(),
  }),
  z.strictObject({ reset: z.literal(true) }),
]);

/**
 * The local projection store (embedded default): projections in memory, one per
 * conversation loaded lazily from its journal `<dir>/<conversation element>.jsonl`, every
 * applied member appended to that journal before `applyOnce` resolves. The check-and-apply runs
 * synchronously once the conversation is loaded, so concurrent async calls in one process
 * apply each member exactly once, as DynamoDB's conditional `UpdateItem` does. Without a
 * directory it is memory only (tests). One process owns a directory at a time.
 */
export class LocalProjectionStore implements ProjectionStore {
  private readonly conversations = new Map<string, Promise<Map<string, State>>>();
  private readonly journals = new Map<string, JsonlJournal>();

  /** @param dir journal folder (`<data dir>/projections`); undefined → memory only. */
  constructor(readonly dir?: string) {}

  async applyOnce(
    key: ProjectionKey,
    member: string,
    increments: Readonly<Record<string, number>>,
    options: { since?: string } = {},
  ): Promise<ApplyResult> {
    assertValidApply(key, member, increments);
    const items = await this.load(key.conversation);
    // From here to the append nothing awaits: the check and the update are one atomic step.
    let state = items.get(key.name);
    if (state?.members.has(member)) return { applied: false, projection: view(key, state) };
    if (!state) {
      state = { values: {}, members: new Set() };
      items.set(key.name, state);
    }
    apply(state, member, increments, options.since);
    const projection = view(key, state);
    await this.journal(key.conversation)?.append({
      name: key.name,
      member,
      increments,
      ...(options.since ? { since: options.since } : {}),
    });
    return { applied: true, projection };
  }

  async get(key: ProjectionKey): Promise<ProjectionValues | undefined> {
    assertValidKey(key);
    const state = (await this.load(key.conversation)).get(key.name);
    return state ? view(key, state) : undefined;
  }

  async list(conversation: string): Promise<Projection[]> {
    assertValidKey({ conversation, name: '-' });
    const items = await this.load(conversation);
    return [...items.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, state]) => ({
        ...view({ conversation, name }, state),
        members: [...state.members].sort(),
      }));
  }

  async deleteConversation(conversation: string): Promise<number> {
    assertValidKey({ conversation, name: '-' });
    const items = await this.load(conversation);
    const count = items.size;
    items.clear();
    await this.journal(conversation)?.append({ reset: true });
    return count;
  }

  private journal(conversation: string): JsonlJournal | undefined {
    if (!this.dir) return undefined;
    let journal = this.journals.get(conversation);
    if (!journal) {
      journal = new JsonlJournal(join(this.dir, `${conversation.slice('cld:'.length)}.jsonl`));
      this.journals.set(conversation, journal);
    }
    return journal;
  }

  private load(conversation: string): Promise<Map<string, State>> {
    let loading = this.conversations.get(conversation);
    if (!loading) {
      loading = this.read(conversation);
      this.conversations.set(conversation, loading);
      loading.catch(() => this.conversations.delete(conversation)); // a failed load may be retried
    }
    return loading;
  }

  private async read(conversation: string): Promise<Map<string, State>> {
    const items = new Map<string, State>();
    const journal = this.journal(conversation);
    if (!journal) return items;
    const records = await journal.readAll();
    records.forEach((record, i) => {
      const parsed = EntrySchema.safeParse(record);
      if (!parsed.success)
        throw new ValidationError(`${journal.path} line ${i + 1}: ${z.prettifyError(parsed.error)}`);
      const entry = parsed.data;
      if ('reset' in entry) {
        items.clear();
        return;
      }
      let state = items.get(entry.name);
      if (!state) {
        state = { values: {}, members: new Set() };
        items.set(entry.name, state);
      }
      if (!state.members.has(entry.member)) apply(state, entry.member, entry.increments, entry.since);
    });
    return items;
  }
}

function apply(
  state: State,
  member: string,
  increments: Readonly<Record<string, number>>,
  since: string | undefined,
): void {
  state.members.add(member);
  for (const [name, amount] of Object.entries(increments))
    state.values[name] = (state.values[name] ?? 0) + amount;
  if (since && state.since === undefined) state.since = since;
}

/** The values of a projection: a copy of its few values, never of its members (O(1)). */
function view(key: ProjectionKey, state: State): ProjectionValues {
  return {
    conversation: key.conversation,
    name: key.name,
    values: { ...state.values },
    ...(state.since !== undefined ? { since: state.since } : {}),
  };
}
