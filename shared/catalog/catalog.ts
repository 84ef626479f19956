import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { withMeta } from '../resources/meta.js';
import {
  type Assistant,
  AssistantSchema,
  parseResource,
  type Tool,
  ToolSchema,
} from '../resources/schemas.js';
import { keyOf } from '../urn.js';
import apiReference from './assistants/api-reference.json' with { type: 'json' };
import coordinator from './assistants/coordinator.json' with { type: 'json' };
import editor from './assistants/editor.json' with { type: 'json' };
import researcher from './assistants/researcher.json' with { type: 'json' };
import graph from './tools/graph.json' with { type: 'json' };
import read from './tools/read.json' with { type: 'json' };
import search from './tools/search.json' with { type: 'json' };

/**
 * The default catalog: Assistants and Tools defined as files in the repo (four description
 * fields each) and stored as root resources `cld:common.Assistant.<hash>` /
 * `cld:common.Tool.<hash>`, never hard-coded in handlers. JSON imports are bundled into each
 * function, so the catalog ships with the code that uses it.
 */

const Description = {
  name: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/),
  purpose: z.string().min(1),
  instructions: z.string().min(1),
  applicability: z.string().min(1),
  evaluation: z.string().min(1),
};

/** An assistant definition file. */
export const AssistantFileSchema = z.strictObject({
  ...Description,
  tools: z.array(z.string()),
  /** MCP servers whose approved tools the assistant may use (shared/tools/registry.ts). */
  servers: AssistantSchema.shape.servers,
});

/** A tool definition file. */
export const ToolFileSchema = z.strictObject({
  ...Description,
  description: z.string().min(1),
  parameters: ToolSchema.shape.function.shape.parameters,
  timeoutMs: z.number().int().positive().optional(),
  /** Each call needs the conversation's user's approval (`always`) or not (`never`); absent: the policy's default. */
  approval: z.enum(['always', 'never']).optional(),
});

/**
 * Per-tool approval settings over the catalog files' (`CLD_TOOL_APPROVAL`, JSON
 * `{"<tool name>": "always" | "never"}`): what an operator sets without editing a file.
 */
export const ToolApprovalSchema = z.record(
  z.string().regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/),
  z.enum(['always', 'never']),
);
export type ToolApproval = z.infer<typeof ToolApprovalSchema>;

/**
 * Parses `CLD_TOOL_APPROVAL` (undefined → no settings).
 * @throws ValidationError for malformed JSON or a value other than `always`/`never`
 */
export function parseToolApproval(json: string | undefined): ToolApproval {
  if (json === undefined || json.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ValidationError('CLD_TOOL_APPROVAL is not JSON', { cause: error });
  }
  return parseFile(ToolApprovalSchema, value, 'CLD_TOOL_APPROVAL');
}

/** Fixed creation time of catalog resources, so the catalog's content is the same on every machine. */
const CATALOG_TIME = new Date('2026-01-01T00:00:00.000Z');

function parseFile<T extends z.ZodType>(schema: T, file: unknown, what: string): z.infer<T> {
  const parsed = schema.safeParse(file);
  if (!parsed.success) throw new ValidationError(`invalid catalog ${what}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Builds an Assistant resource from a definition file. @throws ValidationError */
export function assistantFromFile(file: unknown): Assistant {
  const def = parseFile(AssistantFileSchema, file, 'assistant');
  const { tools, servers, ...description } = def;
  return {
    meta: withMeta({ type: 'common.Assistant', ...description }, CATALOG_TIME),
    tools,
    ...(servers ? { servers } : {}),
  };
}

/** Builds a Tool resource from a definition file. @throws ValidationError */
export function toolFromFile(file: unknown): Tool {
  const def = parseFile(ToolFileSchema, file, 'tool');
  const { description, parameters, timeoutMs, approval, ...meta } = def;
  return {
    meta: withMeta({ type: 'common.Tool', ...meta }, CATALOG_TIME),
    function: { name: def.name, description, parameters },
    timeoutMs: timeoutMs ?? 10_000,
    ...(approval ? { approval } : {}),
  };
}

/**
 * The default catalog's resources; `approval` sets the `approval` of the tools it names (a name
 * that is no catalog tool is ignored).
 * @throws ValidationError when a file is malformed
 */
export function defaultCatalog(approval: ToolApproval = {}): { assistants: Assistant[]; tools: Tool[] } {
  return {
    assistants: [apiReference, coordinator, editor, researcher].map(assistantFromFile),
    tools: [graph, read, search].map(toolFromFile).map((tool) => {
      const setting = approval[tool.function.name];
      return setting ? { ...tool, approval: setting } : tool;
    }),
  };
}

/** One stored catalog resource: its URN, its object key and the bytes stored there. */
export interface CatalogObject {
  urn: string;
  /** `keyOf(urn)` (shared/urn.ts): the object key in the resources bucket. */
  key: string;
  /** The object's content: the resource as `ResourceIndex.put` stores it (validated, as JSON). */
  body: string;
}

/**
 * The default catalog as the objects that store it, by key (sorted): what the stack's catalog
 * seed puts at deploy (infra/lib/catalog-seed.ts) and what `seedCatalog` stores locally.
 * @throws ValidationError when a file or resource is malformed
 */
export function catalogObjects(): CatalogObject[] {
  const catalog = defaultCatalog();
  return [...catalog.assistants, ...catalog.tools]
    .map((resource) => {
      const urn = resource.meta.id;
      return { urn, key: keyOf(urn), body: JSON.stringify(parseResource(resource)) };
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
