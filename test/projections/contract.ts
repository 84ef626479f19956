import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import type { ProjectionStore } from '../../shared/projections/port.js';

/** A fresh, empty store for one test, and how to dispose of it. */
export type MakeProjectionStore = () => Promise<{ store: ProjectionStore; cleanup: () => Promise<void> }>;

/** Conversations of the suite (partition keys). */
export const CONVERSATION = 'cld:common.Conversation.0123456789abcdef';
export const OTHER = 'cld:common.Conversation.fedcba9876543210';

/** An output URN under the conversation, numbered. */
export function output(n: number): string {
  return `${CONVERSATION}/common.Message.${n.toString(16).padStart(16, '0')}`;
}

/**
 * The behaviour every {@link ProjectionStore} adapter must have (shared/projections/port.ts):
 * apply-once per member, atomic under concurrent calls, `since` kept from the first apply,
 * listing per conversation, deletion, and rejection of malformed input without a write.
 */
export function projectionStoreContract(name: string, make: MakeProjectionStore): void {
  describe(`ProjectionStore contract: ${name}`, () => {
    let store: ProjectionStore;
    let cleanup: () => Promise<void>;
    const counter = { conversation: CONVERSATION, name: 'done#/common.Message.aaaaaaaaaaaaaaaa#0' };
    const budget = { conversation: CONVERSATION, name: 'budget' };

    beforeEach(async () => {
      ({ store, cleanup } = await make());
    });

    afterEach(async () => {
      await cleanup();
    });

    it('creates a projection on the first apply and reads it back', async () => {
      const result = await store.applyOnce(
        budget,
        'a1',
        { tokens: 120, modelCalls: 1 },
        { since: '2025-01-01T00:00:00.000Z' },
      );

      expect(result.applied).toBe(true);
      expect(result.projection).toEqual({
        conversation: CONVERSATION,
        name: 'budget',
        values: { tokens: 120, modelCalls: 1 },
        since: '2025-01-01T00:00:00.000Z',
      });
      expect(await store.get(budget)).toEqual(result.projection);
      expect(await store.list(CONVERSATION)).toEqual([{ ...result.projection, members: ['a1'] }]);
    });

    it('applies a member once: a repeat changes nothing, whatever it carries', async () => {
      await store.applyOnce(
        budget,
        'a1',
        { tokens: 120, modelCalls: 1 },
        { since: '2025-01-01T00:00:00.000Z' },
      );
      const repeat = await store.applyOnce(
        budget,
        'a1',
        { tokens: 999, modelCalls: 5 },
        { since: '2030-01-01T00:00:00.000Z' },
      );

      expect(repeat.applied).toBe(false);
      expect(repeat.projection.values).toEqual({ tokens: 120, modelCalls: 1 });
      expect((await store.list(CONVERSATION))[0]?.members).toEqual(['a1']);
      expect(repeat.projection.since).toBe('2025-01-01T00:00:00.000Z');
    });

    it('adds the increments of distinct members and keeps the first since', async () => {
      await store.applyOnce(budget, 'b', { tokens: 10, modelCalls: 1 });
      await store.applyOnce(budget, 'a', { tokens: 5, modelCalls: 1 }, { since: '2025-01-02T00:00:00.000Z' });
      const last = await store.applyOnce(
        budget,
        'c',
        { toolCalls: 1 },
        { since: '2025-01-03T00:00:00.000Z' },
      );

      expect(last.projection.values).toEqual({ tokens: 15, modelCalls: 2, toolCalls: 1 });
      expect((await store.list(CONVERSATION))[0]?.members).toEqual(['a', 'b', 'c']);
      expect(last.projection.since).toBe('2025-01-02T00:00:00.000Z');
    });

    it('counts each member exactly once under concurrent duplicated applies', async () => {
      const members = Array.from({ length: 12 }, (_, i) => output(i));
      const calls = [...members, ...members, ...members].map((member) =>
        store.applyOnce(counter, member, { done: 1 }),
      );

      const results = await Promise.all(calls);

      expect(results.filter((r) => r.applied)).toHaveLength(12);
      const stored = await store.get(counter);
      expect(stored?.values).toEqual({ done: 12 });
      expect((await store.list(CONVERSATION))[0]?.members).toEqual([...members].sort());
      // Every call saw a consistent state: at least every member it or an earlier call applied.
      for (const result of results) expect(result.projection.values.done).toBeGreaterThanOrEqual(1);
      expect(Math.max(...results.map((r) => r.projection.values.done ?? 0))).toBe(12);
    });

    it('returns undefined for a projection never applied to', async () => {
      expect(await store.get(counter)).toBeUndefined();
    });

    it('lists the projections of one conversation only, sorted by name', async () => {
      await store.applyOnce(counter, output(1), { done: 1 });
      await store.applyOnce(budget, 'x', { tokens: 1, modelCalls: 1 });
      await store.applyOnce({ conversation: OTHER, name: 'budget' }, 'y', { tokens: 7, modelCalls: 1 });

      const listed = await store.list(CONVERSATION);

      expect(listed.map((p) => p.name)).toEqual(['budget', counter.name]);
      expect(listed.every((p) => p.conversation === CONVERSATION)).toBe(true);
      expect(await store.list('cld:common.Conversation.1111111111111111')).toEqual([]);
    });

    it('deletes the projections of a conversation and starts over after', async () => {
      await store.applyOnce(counter, output(1), { done: 1 });
      await store.applyOnce(budget, 'x', { tokens: 1, modelCalls: 1 });
      await store.applyOnce({ conversation: OTHER, name: 'budget' }, 'y', { tokens: 7, modelCalls: 1 });

      expect(await store.deleteConversation(CONVERSATION)).toBe(2);

      expect(await store.list(CONVERSATION)).toEqual([]);
      expect((await store.list(OTHER)).map((p) => p.values)).toEqual([{ tokens: 7, modelCalls: 1 }]);
      const again = await store.applyOnce(counter, output(1), { done: 1 });
      expect(again).toMatchObject({ applied: true, projection: { values: { done: 1 } } });
    });

    it.each([
      [
        'a partition that is not a conversation URN',
        { conversation: 'cld:plan.Task.0123456789abcdef', name: 'n' },
        'm',
        { done: 1 },
      ],
      ['an empty name', { conversation: CONVERSATION, name: '' }, 'm', { done: 1 }],
      ['an empty member', { conversation: CONVERSATION, name: 'n' }, '', { done: 1 }],
      ['a negative increment', { conversation: CONVERSATION, name: 'n' }, 'm', { done: -1 }],
      ['a fractional increment', { conversation: CONVERSATION, name: 'n' }, 'm', { done: 0.5 }],
      ['a reserved value name', { conversation: CONVERSATION, name: 'n' }, 'm', { members: 1 }],
      ['a value name with a space', { conversation: CONVERSATION, name: 'n' }, 'm', { 'two words': 1 }],
      [
        "a name in the member items' range",
        { conversation: CONVERSATION, name: 'member#x' },
        'm',
        { done: 1 },
      ],
    ])('rejects %s with a ValidationError and writes nothing', async (_label, key, member, increments) => {
      await expect(store.applyOnce(key, member, increments as Record<string, number>)).rejects.toBeInstanceOf(
        ValidationError,
      );
      expect(await store.list(CONVERSATION)).toEqual([]);
    });
  });
}
