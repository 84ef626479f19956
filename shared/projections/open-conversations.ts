import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { JsonlJournal } from './journal.js';

/**
 * The "open conversations" projection (issue 12): one item per conversation that may have work
 * pending, with the time of its last progress, kept by the steps (every plan and assistant
 * invocation that did something touches it; shared/runtime/progress-middleware.ts) and by the
 * channels when they store a user Message. The sweeper (shared/domain/sweep.ts) finds stalled
 * conversations here — a query on one partition, never a scan of the bucket — checks each against
 * its stored resources, re-drives it, and closes the item when every message is answered.
 *
 * Item on the projections table (shared/projections/port.ts has the others):
 *
 * | `pk` | `sk` | attributes |
 * |---|---|---|
 * | `open` | conversation URN | `progress` (S, ISO 8601): last progress; `redrives` (N): redrives since storage last changed; `seen` (S): the newest resource time at the last redrive |
 *
 * Like every projection it is derived: losing it loses no work (the resource tree stays the
 * truth), it only delays the sweeper finding a conversation until a step touches it again.
 */

/** Partition key of the open-conversation items. */
export const OPEN_PARTITION = 'open';

/** One open conversation. */
export interface OpenConversation {
  /** URN of the conversation (`cld:common.Conversation.<hash>`). */
  conversation: string;
  /** Time of the last progress a step or channel recorded (ISO 8601). */
  progress: string;
  /** Redrives since the stored resources last changed (0 when never re-driven). */
  redrives: number;
  /** Creation time of the newest stored resource when it was last re-driven (ISO 8601). */
  seen?: string;
}

/** The port (DynamoDB in AWS, a journaled local store in the embedded default). */
export interface OpenConversationStore {
  /** Opens the item or moves its `progress` forward to `at` (never back). */
  touch(conversation: string, at: Date): Promise<void>;
  /** Open conversations whose last progress is at or before `idleSince` (all when undefined). */
  list(idleSince?: Date): Promise<OpenConversation[]>;
  /** Records a redrive: the count and the newest resource time it was decided on. */
  recordRedrive(conversation: string, redrives: number, seen: string | undefined): Promise<void>;
  /**
   * Closes the item, unless its `progress` moved after `progress` (a step touched it since it was
   * read: the conversation stays open).
   */
  close(conversation: string, progress: string): Promise<void>;
}

const CONVERSATION = /^cld:common\.Conversation\.[0-9a-f]{16}$/;

/** @throws ValidationError when `conversation` is not a conversation URN */
export function assertConversation(conversation: string): void {
  if (!CONVERSATION.test(conversation))
    throw new ValidationError(`not a conversation URN: ${conversation.slice(0, 120)}`);
}

const EntrySchema = z.union([
  z.strictObject({ conversation: z.string().regex(CONVERSATION), progress: z.string() }),
  z.strictObject({
    conversation: z.string().regex(CONVERSATION),
    redrives: z.number().int().nonnegative(),
    seen: z.string().optional(),
  }),
  z.strictObject({ conversation: z.string().regex(CONVERSATION), closed: z.string() }),
]);

/**
 * The local store: items in memory, every change appended to `<dir>/open.jsonl` before the call
 * resolves; the journal is compacted to the open items when it is first loaded. One process owns
 * the directory (as the local projection store). Without a directory it is memory only.
 */
export class LocalOpenConversationStore implements OpenConversationStore {
  private items: Promise<Map<string, OpenConversation>> | undefined;
  private readonly journal: JsonlJournal | undefined;

  /** @param dir `<data dir>/projections`; undefined → memory only. */
  constructor(readonly dir?: string) {
    this.journal = dir ? new JsonlJournal(join(dir, 'open.jsonl')) : undefined;
  }

  async touch(conversation: string, at: Date): Promise<void> {
    assertConversation(conversation);
    const items = await this.load();
    const progress = at.toISOString();
    const item = items.get(conversation);
    if (item && item.progress >= progress) return;
    items.set(conversation, { redrives: 0, ...item, conversation, progress });
    await this.journal?.append({ conversation, progress });
  }

  async list(idleSince?: Date): Promise<OpenConversation[]> {
    const cutoff = idleSince?.toISOString();
    return [...(await this.load()).values()]
      .filter((item) => cutoff === undefined || item.progress <= cutoff)
      .map((item) => ({ ...item }))
      .sort((a, b) => a.progress.localeCompare(b.progress));
  }

  async recordRedrive(conversation: string, redrives: number, seen: string | undefined): Promise<void> {
    assertConversation(conversation);
    const items = await this.load();
    const item = items.get(conversation);
    if (!item) return;
    item.redrives = redrives;
    if (seen === undefined) delete item.seen;
    else item.seen = seen;
    await this.journal?.append({ conversation, redrives, ...(seen === undefined ? {} : { seen }) });
  }

  async close(conversation: string, progress: string): Promise<void> {
    assertConversation(conversation);
    const items = await this.load();
    const item = items.get(conversation);
    if (!item || item.progress > progress) return;
    items.delete(conversation);
    await this.journal?.append({ conversation, closed: progress });
  }

  private load(): Promise<Map<string, OpenConversation>> {
    this.items ??= this.read();
    return this.items;
  }

  private async read(): Promise<Map<string, OpenConversation>> {
    const items = new Map<string, OpenConversation>();
    if (!this.journal) return items;
    const records = await this.journal.readAll();
    records.forEach((record, i) => {
      const parsed = EntrySchema.safeParse(record);
      if (!parsed.success)
        throw new ValidationError(`${this.journal?.path} line ${i + 1}: ${z.prettifyError(parsed.error)}`);
      const entry = parsed.data;
      const item = items.get(entry.conversation);
      if ('closed' in entry) {
        if (item && item.progress <= entry.closed) items.delete(entry.conversation);
      } else if ('progress' in entry) {
        if (!item || item.progress < entry.progress)
          items.set(entry.conversation, {
            redrives: 0,
            ...item,
            progress: entry.progress,
            conversation: entry.conversation,
          });
      } else if (item) {
        item.redrives = entry.redrives;
        if (entry.seen === undefined) delete item.seen;
        else item.seen = entry.seen;
      }
    });
    await this.compact(items, records.length);
    return items;
  }

  /** Rewrites the journal with only the open items (a crash keeps either file whole: rename). */
  private async compact(items: ReadonlyMap<string, OpenConversation>, records: number): Promise<void> {
    if (!this.journal || records <= items.size * 2) return;
    const lines = [...items.values()].flatMap((item) => [
      JSON.stringify({ conversation: item.conversation, progress: item.progress }),
      ...(item.redrives > 0 || item.seen
        ? [
            JSON.stringify({
              conversation: item.conversation,
              redrives: item.redrives,
              ...(item.seen ? { seen: item.seen } : {}),
            }),
          ]
        : []),
    ]);
    const tmp = `${this.journal.path}.compact`;
    await writeFile(tmp, lines.length ? `${lines.join('\n')}\n` : '', 'utf8');
    await rename(tmp, this.journal.path);
  }
}
