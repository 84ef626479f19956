import { appendFileSync, mkdirSync, readFileSync, truncateSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ValidationError } from '../errors.js';

/**
 * An append-only JSON-lines file: the persistence of the local projection store and the local
 * idempotency layer (the embedded default). Appends are written in batches, in call order: the
 * records appended in one turn of the event loop go out together in one synchronous
 * `appendFileSync` (group commit; a few microseconds on a local disk, where Node's asynchronous
 * `appendFile` costs several times more CPU), so records land whole and in call order; each
 * append resolves once its batch is written. A crash in the middle of an append leaves at most one partial last line, which
 * {@link JsonlJournal.readAll} ignores (that record was never acknowledged) and the first append
 * of the next process cuts off (so the torn record never joins the next one into a malformed
 * line); a malformed line anywhere else is corruption and fails loudly.
 *
 * One process owns a journal at a time (the CLI's process in local mode): appends of two
 * processes are each whole (O_APPEND), but neither sees the other's records in memory.
 */
export class JsonlJournal {
  private ready = false;
  /** Lines waiting for the next write, and who waits for them. */
  private pending: { lines: string[]; waiters: { resolve: () => void; reject: (error: unknown) => void }[] } =
    {
      lines: [],
      waiters: [],
    };
  private scheduled = false;

  /** @param path file path; its folder is created on the first append. */
  constructor(readonly path: string) {}

  /**
   * Reads every complete record, in order (`[]` when the file does not exist).
   * @throws ValidationError naming the file and line of a malformed record
   */
  async readAll(): Promise<unknown[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return [];
      throw error;
    }
    // The last piece is '' after a final newline, or a torn record that was never acknowledged.
    const complete = text.split('\n').slice(0, -1);
    return complete.map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch (error) {
        throw new ValidationError(`${this.path} line ${i + 1} is not JSON`, { cause: error });
      }
    });
  }

  /**
   * Appends one record (one JSON line); resolves when it is written. Records appended in the
   * same turn of the event loop go out together (group commit: one write for many records, in
   * call order), each resolving when that write has; a failed write rejects its whole batch.
   */
  append(record: unknown): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    return new Promise<void>((resolve, reject) => {
      this.pending.lines.push(line);
      this.pending.waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = { lines: [], waiters: [] };
    try {
      if (!this.ready) {
        mkdirSync(dirname(this.path), { recursive: true });
        this.cutTornTail();
        this.ready = true;
      }
      appendFileSync(this.path, batch.lines.join(''), 'utf8');
      for (const waiter of batch.waiters) waiter.resolve();
    } catch (error) {
      for (const waiter of batch.waiters) waiter.reject(error);
    }
  }

  /** Truncates the file after its last newline: drops a record a crash left half-written. */
  private cutTornTail(): void {
    let text: Buffer;
    try {
      text = readFileSync(this.path);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') return;
      throw error;
    }
    if (text.length === 0 || text[text.length - 1] === 0x0a) return;
    truncateSync(this.path, text.lastIndexOf(0x0a) + 1);
  }
}
