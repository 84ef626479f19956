import { readdir, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Deps } from '../shared/domain/ports.js';
import { InvalidUrnError, ValidationError } from '../shared/errors.js';
import { ingestGraph, isGraphFile } from '../shared/graph/ingest.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import type { AnyResource } from '../shared/resources/schemas.js';
import type { LocalRuntime } from '../shared/runtime/local.js';
import { INGEST_EXTENSIONS, ingest } from '../shared/search/ingest.js';
import type { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { parseUrn } from '../shared/urn.js';
import { subtreeOf } from './subtree.js';

/**
 * Ingests documents through `deps` (the embedded default's, or the deployed bucket's): Markdown
 * and text into chunks and the chunk index, then linked data (`.jsii` assemblies, Turtle,
 * N-Triples, N-Quads, TriG, JSON-LD, HTML) into `doc.Graph` resources and the graph index; prints
 * one summary line for each, and one `left out <path>: <reason>` line per file whose content is
 * not UTF-8 text (shared/search/ingest.ts `contentProblem`: a binary renamed `.md`, random bytes
 * as `.txt`).
 * @throws ValidationError for a path that does not exist, and — after ingesting the other paths —
 *   for a path that yielded nothing ingestible (no text file passing the checks, no linked-data
 *   file), naming it: exit code 2 (cli/errors.ts)
 */
export async function runIngest(deps: Deps, paths: string[]): Promise<void> {
  for (const path of paths) {
    const found = await stat(resolve(path)).catch(() => undefined);
    if (!found) throw new ValidationError(`docs path does not exist: ${path}`);
  }
  const documentPaths = paths.filter((path) => !isGraphFile(path));
  const index = deps.search as MiniSearchIndex;
  const empty: string[] = [];
  if (documentPaths.length > 0) {
    const report = await ingest(documentPaths, {
      resources: deps.resources,
      index,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
      ...(deps.embedder.name.startsWith('bedrock:') ? { embedder: deps.embedder } : {}),
    });
    console.log(
      `ingested ${report.files} files: ${report.documents} new (${report.chunks} chunks, ${(report.bytes / 1024).toFixed(0)} KB), ${report.skipped} unchanged, in ${(report.ms / 1000).toFixed(1)} s`,
    );
    const excluded = report.excluded.reduce((sum, entry) => sum + entry.files, 0);
    if (excluded > 0)
      console.log(
        `left out ${excluded} file(s): ${report.excluded.map((entry) => `${entry.files} ${entry.pattern}`).join(', ')}`,
      );
    for (const file of report.leftOut) console.log(`left out ${file.path}: ${file.reason}`);
    for (const problem of report.glossaryProblems ?? [])
      console.log(`API glossary of ${problem.path} left out (searched without it): ${problem.reason}`);
    if (report.embedded > 0) console.log(`embedded ${report.embedded} chunks with ${deps.embedder.name}`);
    // A folder of linked data only yields nothing here but is ingested below.
    for (const path of report.empty) if (!(await hasGraphFile(path))) empty.push(path);
  }
  await ingestGraphOf(deps, index, paths);
  if (empty.length > 0)
    throw new ValidationError(
      `nothing ingestible in ${empty.join(', ')}: no ${INGEST_EXTENSIONS.join(', ')} file of UTF-8 text there (see "left out" above) and no linked-data file`,
    );
}

/** True when `path` is a folder with a linked-data file below it (bundled `node_modules` aside). */
async function hasGraphFile(path: string): Promise<boolean> {
  const found = await stat(resolve(path)).catch(() => undefined);
  if (!found?.isDirectory()) return false;
  const entries = await readdir(resolve(path), { recursive: true });
  return entries.some((entry) => !entry.split(sep).includes('node_modules') && isGraphFile(entry));
}

/** The linked-data half of {@link runIngest}. */
async function ingestGraphOf(deps: Deps, index: MiniSearchIndex, paths: string[]): Promise<void> {
  const indexStorage = index.location?.storage;
  if (!indexStorage) return;
  const graph = await ingestGraph(paths, {
    resources: deps.resources,
    indexStorage,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  });
  if (graph.files > 0) {
    console.log(
      `graph: ${graph.files} linked-data file(s), ${graph.files - graph.skipped} new: ${graph.triples} triples in ${graph.shards} shard(s) (${(graph.bytes / 1048576).toFixed(1)} MB), ${graph.mentions} links to chunks, in ${(graph.ms / 1000).toFixed(1)} s`,
    );
  }
}

/** The resource at `urn` (when stored) and everything under it, read as the operator. */
export async function subtree(runtime: Pick<LocalRuntime, 'deps'>, urn: string): Promise<AnyResource[]> {
  return subtreeOf(runtime.deps.resources, urn);
}

/**
 * Why `input` is not a conversation URN (`cld:common.Conversation.<hash>`), or undefined when it
 * is one. Errors other than a malformed URN propagate.
 */
export function conversationUrnProblem(input: string): string | undefined {
  try {
    const parsed = parseUrn(input);
    if (parsed.elements.length !== 1 || parsed.elements[0]?.type !== 'common.Conversation')
      return `${input} is not a conversation URN (cld:common.Conversation.<hash>)`;
    return undefined;
  } catch (error) {
    if (error instanceof InvalidUrnError) return error.message;
    throw error;
  }
}
