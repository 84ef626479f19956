import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { LocalProjectionStore } from '../../shared/projections/local.js';
import { CONVERSATION, output, projectionStoreContract } from './contract.js';

projectionStoreContract('local, persisted to a journal', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'cld-projections-'));
  return { store: new LocalProjectionStore(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

projectionStoreContract('local, in memory', async () => ({
  store: new LocalProjectionStore(),
  cleanup: async () => undefined,
}));

describe('LocalProjectionStore persistence', () => {
  let dir: string;
  const counter = { conversation: CONVERSATION, name: 'done#/common.Message.aaaaaaaaaaaaaaaa#0' };
  const journal = () => join(dir, `${CONVERSATION.slice('cld:'.length)}.jsonl`);

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cld-projections-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reloads what another instance applied from the journal, members included', async () => {
    const first = new LocalProjectionStore(dir);
    await first.applyOnce(counter, output(1), { done: 1 });
    await first.applyOnce(counter, output(2), { done: 1 });

    const second = new LocalProjectionStore(dir);

    expect((await second.get(counter))?.values).toEqual({ done: 2 });
    expect((await second.applyOnce(counter, output(2), { done: 1 })).applied).toBe(false);
    expect((await second.applyOnce(counter, output(3), { done: 1 })).projection.values).toEqual({ done: 3 });
  });

  it('ignores a torn last line (an append cut by a crash was never acknowledged)', async () => {
    await new LocalProjectionStore(dir).applyOnce(counter, output(1), { done: 1 });
    await appendFile(journal(), '{"name":"done#/common.Message.aaaaaaaaaaaaaaaa#0","member":"x","incr');

    expect((await new LocalProjectionStore(dir).get(counter))?.values).toEqual({ done: 1 });
  });

  it('fails loudly, naming file and line, on a corrupted record', async () => {
    await new LocalProjectionStore(dir).applyOnce(counter, output(1), { done: 1 });
    const text = await readFile(journal(), 'utf8');
    await writeFile(journal(), `{"name":"n","member":"m","increments":{"done":-4}}\n${text}`);

    const read = new LocalProjectionStore(dir).get(counter);

    await expect(read).rejects.toBeInstanceOf(ValidationError);
    await expect(read).rejects.toThrow(/\.jsonl line 1/);
  });

  it('keeps a deletion across instances', async () => {
    const first = new LocalProjectionStore(dir);
    await first.applyOnce(counter, output(1), { done: 1 });
    await first.deleteConversation(CONVERSATION);
    await first.applyOnce(counter, output(2), { done: 1 });

    const reloaded = (await new LocalProjectionStore(dir).list(CONVERSATION))[0];

    expect(reloaded?.members).toEqual([output(2)]);
    expect(reloaded?.values).toEqual({ done: 1 });
  });
});
