import * as z from 'zod';
import { PolicyDeniedError, ValidationError } from '../errors.js';
import type { JsonValue } from '../llm/port.js';
import { isUrn } from '../urn.js';
import type { ToolContext, ToolImplementation } from './port.js';

/** Most hits one call may ask for. */
export const MAX_SEARCH_RESULTS = 20;

/** Hits returned when the call does not say. */
export const DEFAULT_SEARCH_RESULTS = 8;

/**
 * Characters of a hit's text returned to the model: a whole chunk (ingest's CHUNK_SIZE is
 * 1,500), so the example that carries the answer is not cut off; longer texts are one `read` away.
 */
export const SEARCH_TEXT_LIMIT = 1600;

/** Arguments of the `search` tool (shared/catalog/tools/search.json describes them to the model). */
export const SearchInputSchema = z.strictObject({
  query: z.string().trim().min(1).max(1000),
  type: z
    .string()
    .regex(/^[a-z]+\.[A-Z][A-Za-z0-9]*$/, 'a resource type such as doc.Chunk')
    .optional(),
  prefix: z.string().refine(isUrn, 'a cld: URN').optional(),
  limit: z.number().int().min(1).max(MAX_SEARCH_RESULTS).default(DEFAULT_SEARCH_RESULTS),
});
export type SearchInput = z.infer<typeof SearchInputSchema>;

/**
 * The `search` tool: ranked full-text search over the indexed chunks, restricted to what the
 * calling actor may read (hits the policy denies are dropped before the limit is applied).
 *
 * Input `{ query, type?, prefix?, limit? ≤ 20 }`. Result `{ results: [{ urn, title?, source?,
 * text, bridge?, score }] }` (`source`: the document's path; `bridge`: up to 2 `{ name, summary }`, the
 * names of the hit's code whose API summary holds query words its text lacks, shared/search/bridge.ts), best first, `text` cut to {@link SEARCH_TEXT_LIMIT} characters (ending in `…`
 * when cut) and `score` rounded to 3 decimals.
 * @throws ValidationError for arguments that do not match {@link SearchInputSchema}
 */
export const searchTool: ToolImplementation = {
  name: 'search',
  async execute(input: Record<string, unknown>, context: ToolContext): Promise<JsonValue> {
    const parsed = SearchInputSchema.safeParse(input);
    if (!parsed.success) {
      throw new ValidationError(`invalid search arguments: ${z.prettifyError(parsed.error)}`, {
        cause: parsed.error,
      });
    }
    const { query, type, prefix, limit } = parsed.data;
    context.signal.throwIfAborted();
    const filter = { ...(type !== undefined ? { type } : {}), ...(prefix !== undefined ? { prefix } : {}) };
    const hits = await context.search.search(query, {
      filter,
      limit,
      accept: (urn) => mayRead(context, urn),
    });
    const results = hits.map((hit) => ({
      urn: hit.urn,
      ...(hit.title !== undefined ? { title: hit.title } : {}),
      ...(hit.source !== undefined ? { source: hit.source } : {}),
      text: truncate(hit.text, SEARCH_TEXT_LIMIT),
      ...(hit.bridge !== undefined && hit.bridge.length > 0
        ? { bridge: hit.bridge.map(({ name, summary }) => ({ name, summary })) }
        : {}),
      score: Math.round(hit.score * 1000) / 1000,
    }));
    return { results };
  },
};

/** True when the policy lets the actor `get` the URN; other failures propagate. */
function mayRead(context: ToolContext, urn: string): boolean {
  try {
    context.resources.authorize(context.actor, 'get', [urn]);
    return true;
  } catch (error) {
    if (error instanceof PolicyDeniedError) return false;
    throw error;
  }
}

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1).trimEnd()}…`;
}
