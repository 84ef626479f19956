import * as z from 'zod';
import { ValidationError } from '../errors.js';
import type { GraphIndex } from '../graph/graph-index.js';
import { describeEntity, queryPatterns } from '../graph/query.js';
import { FollowSchema, MemberFilterSchema } from '../graph/structure.js';
import { PREFIXES } from '../graph/vocabulary.js';
import type { JsonValue } from '../llm/port.js';
import type { ToolContext, ToolImplementation } from './port.js';

/** Most solutions one page returns. */
export const MAX_GRAPH_RESULTS = 100;

/** Solutions per page when the call does not say. */
export const DEFAULT_GRAPH_RESULTS = 25;

const Term = z.string().trim().min(1).max(600);

/**
 * Arguments of the `graph` tool (shared/catalog/tools/graph.json describes them to the model):
 * exactly one of `patterns` (1–4 triple patterns `[subject, predicate, object]`, joined on their
 * `?variables`), `describe` (an entity) or `summary: true` (the graph's shape). With `describe`
 * only: `follow` (1–3 hops, `"base"` or `"property:<name>"`, taken before describing) and
 * `where` (a member filter: kind, optional, type, takes, returns, static, inherited), typed in
 * shared/graph/structure.ts.
 */
export const GraphInputSchema = z
  .strictObject({
    patterns: z
      .array(z.tuple([Term, Term, Term]))
      .min(1)
      .max(4)
      .optional(),
    describe: z.string().trim().min(1).max(600).optional(),
    follow: FollowSchema.optional(),
    where: MemberFilterSchema.optional(),
    summary: z.literal(true).optional(),
    module: z
      .string()
      .regex(/^[a-z0-9_]+$/, 'a submodule name such as aws_s3')
      .optional(),
    limit: z.number().int().min(1).max(MAX_GRAPH_RESULTS).default(DEFAULT_GRAPH_RESULTS),
    offset: z.number().int().min(0).max(100_000).default(0),
  })
  .refine(
    (input) => [input.patterns, input.describe, input.summary].filter((x) => x !== undefined).length === 1,
    'give exactly one of "patterns", "describe" or "summary"',
  )
  .refine(
    (input) => input.describe !== undefined || (input.follow === undefined && input.where === undefined),
    '"follow" and "where" go with "describe"',
  );
export type GraphInput = z.infer<typeof GraphInputSchema>;

/**
 * The `graph` tool (seed roadmap-v2 step 16): queries the linked data beside the resources.
 *
 * - `{ patterns: [[s, p, o], …], module?, limit?, offset? }` → `{ bindings: [{var: term}], total,
 *   offset, next?, sources }`; terms are prefixed names (`jsii:Class`, `rdfs:label`), `<iri>`,
 *   `"literals"`, `true`/`false`, `cld:` URNs or `?variables`.
 * - `{ describe: "BucketProps" }` → the entity's triples both ways (bounded) and, for a type,
 *   its members with value type, optionality, default and summary;
 *   `{ describe: "Queue", follow: ["base"], where: { takes: "IGrantable" } }` → the same for the
 *   entity the hops lead to, members filtered, with `path` (each hop and its sources) and `filter`.
 * - `{ summary: true }` → sources, classes with counts and the predicates between them.
 *
 * `sources` lists the `doc.Graph` resources read and the documentation chunks linked to the
 * entities (`jsii:mentionedIn`), for citation. Shards are read as the calling actor.
 * @throws ValidationError (→ INVALID_ARGUMENTS) for malformed arguments or patterns;
 *   NotFoundError (→ NOT_FOUND) for an unknown entity or module
 */
export function createGraphTool(openGraph: () => Promise<GraphIndex>): ToolImplementation {
  let graph: Promise<GraphIndex> | undefined;
  return {
    name: 'graph',
    async execute(input: Record<string, unknown>, context: ToolContext): Promise<JsonValue> {
      const parsed = GraphInputSchema.safeParse(input);
      if (!parsed.success) {
        throw new ValidationError(`invalid graph arguments: ${z.prettifyError(parsed.error)}`, {
          cause: parsed.error,
        });
      }
      graph ??= openGraph().catch((error: unknown) => {
        graph = undefined;
        throw error;
      });
      const index = await graph;
      context.signal.throwIfAborted();
      const args = parsed.data;
      if (args.summary) return summarize(index);
      if (index.empty)
        return { message: 'the graph is empty: nothing has been ingested as linked data', sources: [] };
      if (args.describe !== undefined)
        return (await describeEntity(index, context.actor, args.describe, {
          follow: args.follow,
          where: args.where,
        })) as unknown as JsonValue;
      const result = await queryPatterns(index, context.actor, args.patterns ?? [], {
        module: args.module,
        limit: args.limit,
        offset: args.offset,
      });
      return result as unknown as JsonValue;
    },
  };
}

/** The graph's shape: what a model needs to write patterns. */
export function summarize(graph: GraphIndex): JsonValue {
  return {
    prefixes: PREFIXES,
    sources: graph.manifest.sources.map((source) => ({
      document: source.document,
      name: source.name,
      kind: source.kind,
      triples: source.triples,
      shards: source.shards.length,
      classes: source.classes,
      shape: source.shape.map((line) => `${line.from} ${line.predicate} ${line.to} (${line.count})`),
    })),
  };
}
