import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
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
 * function, so the catalog ships with the code that uses it. Each resource is versioned by its
 * content ({@link contentVersion}, `meta.version`, part of the URN's hash): an edited file is a
 * new resource under a new URN, which the deploy stores (create-only, infra/lib/catalog-seed.ts)
 * and the redeployed functions' bundled catalog names (Task `assistant` links, elections), while
 * the old version stays stored for the Tasks that ran with it.
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

/** JSON with object keys sorted at every level, so equal content serializes to equal bytes. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The content version of a validated catalog definition: the first 16 hex digits of the SHA-256
 * of its canonical JSON (keys sorted), prefixed by its kind. Any change of a field (instructions,
 * tools, parameters, ...) gives another version, hence another URN; key order and whitespace in
 * the file do not.
 */
export function contentVersion(kind: 'assistant' | 'tool', definition: unknown): string {
  return createHash('sha256')
    .update(`${kind}\u0000${canonicalJson(definition)}`)
    .digest('hex')
    .slice(0, 16);
}

/** Builds an Assistant resource from a definition file (versioned by its content). @throws ValidationError */
export function assistantFromFile(file: unknown): Assistant {
  const def = parseFile(AssistantFileSchema, file, 'assistant');
  const { tools, servers, ...description } = def;
  const version = contentVersion('assistant', def);
  return {
    meta: withMeta({ type: 'common.Assistant', ...description, version }, CATALOG_TIME),
    tools,
    ...(servers ? { servers } : {}),
  };
}

/**
 * Builds a Tool resource from a definition file (versioned by its content; an operator's
 * `CLD_TOOL_APPROVAL` setting is configuration, not content, and changes no version).
 * @throws ValidationError
 */
export function toolFromFile(file: unknown): Tool {
  const def = parseFile(ToolFileSchema, file, 'tool');
  const { description, parameters, timeoutMs, approval, ...meta } = def;
  const version = contentVersion('tool', def);
  return {
    meta: withMeta({ type: 'common.Tool', ...meta, version }, CATALOG_TIME),
    function: { name: def.name, description, parameters },
    timeoutMs: timeoutMs ?? 10_000,
    ...(approval ? { approval } : {}),
  };
}

/** Catalog definition files (unvalidated JSON): what shared/catalog/assistants and tools hold. */
export interface CatalogFiles {
  assistants: readonly unknown[];
  tools: readonly unknown[];
}

/** The definition files of the default catalog, bundled with the code. */
export const DEFAULT_CATALOG_FILES: CatalogFiles = {
  assistants: [apiReference, coordinator, editor, researcher],
  tools: [graph, read, search],
};

/**
 * Where a function's asset holds the catalog given to the `Cld` construct (its `catalog` prop,
 * infra/lib/cld.ts), relative to the asset's `index.mjs`: `{ "assistants": [...], "tools": [...] }`
 * of definition files.
 */
export const BUNDLED_CATALOG_FILE = 'catalog/files.json';

const CatalogFilesSchema = z.strictObject({
  assistants: z.array(z.unknown()).min(1),
  tools: z.array(z.unknown()),
});

/**
 * The catalog files of a function's asset: `<dir>/`{@link BUNDLED_CATALOG_FILE} when the
 * construct wrote one, else undefined (the asset runs the default catalog).
 * @param dir the asset's root as a directory URL (ending in `/`)
 * @throws ValidationError when the file is not JSON of that shape (each definition is validated where it is used)
 */
export function bundledCatalogFiles(dir: URL): CatalogFiles | undefined {
  const file = new URL(`./${BUNDLED_CATALOG_FILE}`, dir);
  if (!existsSync(file)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ValidationError(`${BUNDLED_CATALOG_FILE} is not JSON`, { cause: error });
  }
  return parseFile(CatalogFilesSchema, value, 'files');
}

/**
 * The catalog this code runs: in a function bundle (esbuild's `define` sets
 * `process.env.CLD_BUNDLE_FUNCTION`, shared/runtime/compose.ts) the asset's
 * {@link BUNDLED_CATALOG_FILE} when it has one; otherwise {@link DEFAULT_CATALOG_FILES}.
 * Read once, at cold start.
 */
export const CATALOG_FILES: CatalogFiles =
  (process.env.CLD_BUNDLE_FUNCTION !== undefined
    ? bundledCatalogFiles(new URL('./', import.meta.url))
    : undefined) ?? DEFAULT_CATALOG_FILES;

/**
 * The default catalog's resources; `approval` sets the `approval` of the tools it names (a name
 * that is no catalog tool is ignored); `files`: the definitions (default {@link CATALOG_FILES}).
 * @throws ValidationError when a file is malformed
 */
export function defaultCatalog(
  approval: ToolApproval = {},
  files: CatalogFiles = CATALOG_FILES,
): { assistants: Assistant[]; tools: Tool[] } {
  return {
    assistants: files.assistants.map(assistantFromFile),
    tools: files.tools.map(toolFromFile).map((tool) => {
      const setting = approval[tool.function.name];
      return setting ? { ...tool, approval: setting } : tool;
    }),
  };
}

/** One stored catalog resource: its URN, its object key and the bytes stored there. */
export interface CatalogObject {
  urn: string;
  /** `common.Assistant` or `common.Tool`. */
  type: 'common.Assistant' | 'common.Tool';
  /** The definition's name (the same for every version of it). */
  name: string;
  /** The content version (`meta.version`, {@link contentVersion}). */
  version: string;
  /** `keyOf(urn)` (shared/urn.ts): the object key in the resources bucket. */
  key: string;
  /** The object's content: the resource as `ResourceIndex.put` stores it (validated, as JSON). */
  body: string;
}

/**
 * The default catalog (or `files`) as the objects that store it, by key (sorted): what the
 * stack's catalog seed puts at deploy (infra/lib/catalog-seed.ts) and what `seedCatalog` stores
 * locally.
 * @throws ValidationError when a file or resource is malformed
 */
export function catalogObjects(files: CatalogFiles = CATALOG_FILES): CatalogObject[] {
  const catalog = defaultCatalog({}, files);
  return [...catalog.assistants, ...catalog.tools]
    .map((resource) => {
      const { id: urn, type, name, version } = resource.meta;
      return {
        urn,
        type: type as CatalogObject['type'],
        name,
        version: version as string,
        key: keyOf(urn),
        body: JSON.stringify(parseResource(resource)),
      };
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
