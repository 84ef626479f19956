import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { lazyStrictObject } from '../../shared/resources/lazy-schema.js';

/** The shape of a small resource-like object, with a default, a bound, an optional and a recursion. */
interface Node {
  name: string;
  note: string;
  children?: Node[] | undefined;
}

function nodeShape(self: () => z.ZodType<Node>) {
  return {
    name: z.string().trim().min(1).max(5).describe('Name'),
    note: z.string().default(''),
    get children() {
      return z.array(self()).optional();
    },
  };
}

const Eager: z.ZodType<Node> = z.strictObject(nodeShape(() => Eager));

describe('lazyStrictObject', () => {
  it('builds its object at the first parse, not when it is declared', () => {
    let built = 0;
    const schema = lazyStrictObject(() => {
      built += 1;
      return { a: z.string() };
    });
    expect(built).toBe(0);
    expect(schema.parse({ a: 'x' })).toEqual({ a: 'x' });
    schema.safeParse({ a: 1 });
    expect(built).toBe(1);
  });

  it('parses, defaults, rejects and reports as z.strictObject does', () => {
    const Lazy: z.ZodType<Node> = lazyStrictObject(() => nodeShape(() => Lazy));
    const inputs: unknown[] = [
      { name: ' a ' },
      { name: 'a', note: 'n', children: [{ name: 'b' }] },
      { name: '' },
      { name: 'toolong' },
      { name: 'a', extra: 1 },
      { name: 'a', children: [{ name: 'b', extra: true }] },
      'not an object',
      undefined,
    ];
    for (const input of inputs) {
      const eager = Eager.safeParse(input);
      const lazy = Lazy.safeParse(input);
      expect(lazy.success).toBe(eager.success);
      if (eager.success) expect(lazy.data).toEqual(eager.data);
      else expect(z.prettifyError(lazy.error as z.ZodError)).toBe(z.prettifyError(eager.error));
    }
  });

  it('converts to the same JSON Schema (what a tool spec sends the model)', () => {
    const Lazy: z.ZodType<Node> = lazyStrictObject(() => nodeShape(() => Lazy));
    const holder = (schema: z.ZodType<Node>) =>
      z.toJSONSchema(z.strictObject({ nodes: z.array(schema).min(1).describe('Nodes') }), { io: 'input' });
    expect(holder(Lazy)).toEqual(holder(Eager));
  });
});
