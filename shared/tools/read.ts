import * as z from 'zod';
import { ValidationError } from '../errors.js';
import type { JsonValue } from '../llm/port.js';
import { isUrn } from '../urn.js';
import type { ToolContext, ToolImplementation } from './port.js';

/** Arguments of the `read` tool (shared/catalog/tools/read.json describes them to the model). */
export const ReadInputSchema = z.strictObject({
  urn: z.string().refine(isUrn, 'a well-formed cld: URN'),
});
export type ReadInput = z.infer<typeof ReadInputSchema>;

/**
 * The `read` tool: one resource by URN, through the policy gate, as compact JSON. A
 * `doc.Chunk` gives `{ urn, text, heading?, document }` (`document`: the parent Document URN);
 * any other resource gives its stored JSON.
 * @throws ValidationError for a missing or malformed URN (also for `InvalidUrnError` cases, so
 *   the tool step reports INVALID_ARGUMENTS), NotFoundError when nothing is stored there,
 *   PolicyDeniedError when the actor may not read it
 */
export const readTool: ToolImplementation = {
  name: 'read',
  async execute(input: Record<string, unknown>, context: ToolContext): Promise<JsonValue> {
    const parsed = ReadInputSchema.safeParse(input);
    if (!parsed.success) {
      throw new ValidationError(`invalid read arguments: ${z.prettifyError(parsed.error)}`, {
        cause: parsed.error,
      });
    }
    context.signal.throwIfAborted();
    const resource = await context.resources.get(context.actor, parsed.data.urn);
    if (resource.meta.type === 'doc.Chunk' && 'text' in resource && 'index' in resource) {
      return {
        urn: resource.meta.id,
        text: resource.text,
        ...(resource.heading !== undefined ? { heading: resource.heading } : {}),
        document: resource.meta.parent ?? null,
      };
    }
    return JSON.parse(JSON.stringify(resource)) as JsonValue;
  },
};
