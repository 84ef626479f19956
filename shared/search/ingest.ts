import { createHash } from 'node:crypto';
import type { Dirent, Stats } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, relative, resolve, sep } from 'node:path';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import { isBinaryFileSync } from 'isbinaryfile';
import { countTokens } from '../context/tokens.js';
import { ValidationError } from '../errors.js';
import type { Embedder } from '../llm/port.js';
import { globMatch } from '../policy/glob.js';
import type { Actor } from '../policy/port.js';
import { withMeta } from '../resources/meta.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { Chunk, Document } from '../resources/schemas.js';
import { childUrn } from '../urn.js';
import { ApiGlossaries, type BridgeEntries } from './api-glossary.js';
import { markdownChunks } from './chunking.js';
import { type Heading, headingsOf, TRAIL_SEPARATOR } from './headings.js';
import type { MiniSearchIndex } from './minisearch-index.js';
import type { IndexedItem } from './port.js';

export { type Heading, headingsOf };

/**
 * Chunk size in characters. ~1,500 characters is ~400 cl100k tokens of English prose (more for
 * code), small enough that 8 hits fit a context window comfortably and large enough to keep a
 * README paragraph with the example it introduces.
 */
export const CHUNK_SIZE = 1500;

/** Characters shared by consecutive chunks of plain text, so a sentence cut at a boundary is whole in one of them. */
export const CHUNK_OVERLAP = 150;

/**
 * Files ingest leaves out of a folder by default (globs over the path relative to the folder
 * given; a pattern starting with `**\/` also matches at the top; case-insensitive): licences and
 * notices, third-party attributions, change logs and contribution guides, and bundled packages
 * under `node_modules`. Files named explicitly are never excluded.
 */
export const DEFAULT_EXCLUDES: readonly string[] = [
  '**/node_modules/**',
  '**/LICENSE*',
  '**/LICENCE*',
  '**/NOTICE*',
  '**/THIRD-PARTY*',
  '**/THIRD_PARTY*',
  '**/CHANGELOG*',
  '**/HISTORY*',
  '**/CONTRIBUTING*',
  '**/CODE_OF_CONDUCT*',
];

/** Files read, split and written at the same time. */
export const INGEST_CONCURRENCY = 8;

/** File extensions ingest picks up when walking a folder (lower case). */
export const INGEST_EXTENSIONS: readonly string[] = ['.md', '.markdown', '.txt'];

/** Longest document name `meta.name` accepts. */
const MAX_NAME_LENGTH = 512;

/** Progress of one file, reported once per file in completion order. */
export interface IngestProgress {
  /** Files finished so far, this one included. */
  done: number;
  /** Files to process in this run. */
  total: number;
  /** Document name of the file (path relative to `cwd`, `/`-separated). */
  path: string;
  /** True when the file was already ingested with the same content. */
  skipped: boolean;
  /** Chunks written for this file (0 when skipped). */
  chunks: number;
}

/** A file left out for its content, and why (one line a reader can act on). */
export interface LeftOutFile {
  /** Path relative to `cwd`, `/`-separated (as a Document would be named). */
  path: string;
  /** Why, e.g. `binary content (isbinaryfile)` or `not UTF-8: invalid byte sequence at byte 3`. */
  reason: string;
}

/** What {@link ingest} did. */
export interface IngestReport {
  /** Files found under the given paths that passed the content checks (ingested or unchanged). */
  files: number;
  /** Files found that were left out for their content ({@link contentProblem}), in name order. */
  leftOut: LeftOutFile[];
  /**
   * The given paths (as given) that yielded no file to ingest: a file left out for its content, a
   * folder without a `.md`, `.markdown` or `.txt` file that is not excluded and passes the checks.
   */
  empty: string[];
  /** Files skipped because their Document already exists with the same content hash. */
  skipped: number;
  /** Documents written in this run. */
  documents: number;
  /** Chunks written in this run. */
  chunks: number;
  /** Bytes of the files written in this run (skipped files not counted). */
  bytes: number;
  /** Wall time of the run, in milliseconds. */
  ms: number;
  /** Files under the given folders left out by `exclude` (or not matched by `include`), per pattern. */
  excluded: { pattern: string; files: number }[];
  /** Chunks embedded in this run (hybrid retrieval, with `deps.embedder`). */
  embedded: number;
  /** Storage key of the index generation written, when the index was saved. */
  index?: string;
  /**
   * Packages whose API glossary could not be read (shared/search/api-glossary.ts), with why: their
   * chunks are ingested and searched without the `api` field. Present only when there are some.
   */
  glossaryProblems?: { path: string; reason: string }[];
}

/** What {@link ingest} needs. */
export interface IngestDeps {
  /** Policy-gated resource access; Documents and Chunks are written through it. */
  resources: ResourceIndex;
  /**
   * The chunk index new chunks are added to. When it has a storage location (it came from
   * `MiniSearchIndex.open` or was saved before) and something was added, it is saved there
   * once, at the end, as a new generation; an in-memory index is only updated.
   */
  index: MiniSearchIndex;
  /** The operator (kind `system`): the policy lets it put `cld:doc.Document.*` and below. */
  actor: Actor;
  /** Directory that document names are relative to, and that relative paths resolve against. */
  cwd: string;
  /** Clock for `meta.createdAt` (default: the system clock). */
  now?: () => Date;
  /** Called once per file as it finishes. */
  onProgress?: (progress: IngestProgress) => void;
  /**
   * Globs of files to leave out of folders (path relative to the folder given, `/`-separated;
   * see {@link DEFAULT_EXCLUDES}, the default). `[]` keeps everything.
   */
  exclude?: readonly string[];
  /** When given, only files of folders matching one of these globs are ingested (same rules as `exclude`). */
  include?: readonly string[];
  /**
   * Embedding model for hybrid retrieval (Bedrock Titan Text Embeddings V2): chunks of the given
   * files that have no vector by it are embedded ({@link EMBED_BATCH} texts per call of `embed`)
   * and their vectors stored with the index. Absent → the index stays lexical.
   */
  embedder?: Embedder;
}

/** Texts per `Embedder.embed` call during ingest. */
export const EMBED_BATCH = 32;

/** A file found under the given paths. */
interface SourceFile {
  absolute: string;
  /** The given path (as given) it was found under, first one when several. */
  root: string;
  /** Path relative to cwd with `/` separators: the Document's name and `path`. */
  name: string;
  markdown: boolean;
}

/** A file read and checked against what is stored. */
interface ReadFile extends SourceFile {
  /** Why its content is left out ({@link contentProblem}); undefined for a text file. */
  problem: string | undefined;
  content: string;
  bytes: number;
  contentHash: string;
  urn: string;
  existing: Document | undefined;
}

/** The outcome for one file, in file order. */
interface FileOutcome {
  /** URNs of all the file's chunks. */
  urns: string[];
  skipped: boolean;
  bytes: number;
  chunks: number;
  items: IndexedItem[];
  /** `items` are indexed anew even where their URN is indexed (with their `api` field). */
  replace: boolean;
  /** The document's glossary entries, for its hits' bridges (MiniSearchIndex.setBridge, shared/search/bridge.ts). */
  bridge?: { source: string; entries: BridgeEntries };
}

/**
 * Ingests Markdown and text files into `doc.Document` resources (root resources named by the
 * path relative to `cwd`) with their `doc.Chunk` children, and adds the chunks to the index.
 *
 * - `paths` are files or folders, relative to `cwd` or absolute. Folders are walked
 *   recursively for `.md`, `.markdown` and `.txt` files without following symbolic links;
 *   files matching `deps.exclude` ({@link DEFAULT_EXCLUDES}: licences, notices, third-party
 *   files, bundled `node_modules` below the folder given) or not matching `deps.include` are
 *   left out and counted in `report.excluded` (a corpus may itself live under `node_modules`:
 *   only the path below the folder given is matched). Files are processed in sorted name
 *   order, {@link INGEST_CONCURRENCY} at a time; the resources and the index contents do not
 *   depend on timing.
 * - Markdown is split by {@link markdownChunks} (chunks within one heading section, code kept
 *   with the paragraph that introduces it), text with `RecursiveCharacterTextSplitter`
 *   ({@link CHUNK_OVERLAP} overlap); at most {@link CHUNK_SIZE} characters. A chunk is named
 *   `chunk-<i>`, carries the heading trail in force where it starts (`# A` > `## B`) and its
 *   cl100k token count in `meta.tokens`.
 * - A Markdown chunk of a jsii package whose folder is among `paths` (`node_modules/aws-cdk-lib`)
 *   is indexed with the API reference's summaries of the names its code spells, in the search
 *   field `api` (shared/search/api-glossary.ts: searched at a low weight, never shown). The
 *   chunks of an already ingested document of such a package that were indexed without it (an
 *   index stored before the field, the module folder ingested first) are indexed anew with it.
 * - The Document is put after all its chunks, so an existing Document means complete chunks:
 *   a run that crashed is simply run again. A file whose Document exists with the same SHA-256
 *   is skipped without being split; chunks of it that the index lacks are re-added from storage.
 * - Everything is checked before anything is written: missing paths, unsupported files, and
 *   files whose content changed since they were ingested (resources are immutable, so a
 *   changed file cannot be re-ingested under the same name).
 *
 * @throws ValidationError naming the paths that do not exist, are neither file nor folder, have
 *   an unsupported extension, have a name over 512 characters, or changed since ingested
 * @throws PolicyDeniedError when the actor may not read or write documents
 */
export async function ingest(paths: readonly string[], deps: IngestDeps): Promise<IngestReport> {
  const started = performance.now();
  const now = deps.now ?? (() => new Date());
  const { files, excluded } = await collectFiles(paths, deps.cwd, {
    exclude: deps.exclude ?? DEFAULT_EXCLUDES,
    ...(deps.include ? { include: deps.include } : {}),
  });

  const all = await mapConcurrently(files, INGEST_CONCURRENCY, (file) => readSource(file, deps));
  const read = all.filter((file) => file.problem === undefined);
  const leftOut = all.flatMap((file) =>
    file.problem === undefined ? [] : [{ path: file.name, reason: file.problem }],
  );
  const yielding = new Set(read.map((file) => file.root));
  const empty = paths.filter((path) => !yielding.has(path));
  const changed = read.filter((file) => file.existing && file.existing.contentHash !== file.contentHash);
  if (changed.length > 0) {
    throw new ValidationError(
      `${changed.length} file(s) changed since they were ingested and documents are immutable: ` +
        `${changed.map((file) => file.name).join(', ')} (ingest into a fresh data directory)`,
      { details: { changed: changed.map((file) => ({ path: file.name, urn: file.urn })) } },
    );
  }

  let done = 0;
  const glossaries = new ApiGlossaries(paths.map((path) => resolve(deps.cwd, path)));
  // An index stored before the `api` field is rebuilt with it (its chunks keep their words).
  deps.index.upgradeFields();
  const outcomes = await mapConcurrently(read, INGEST_CONCURRENCY, async (file) => {
    const outcome = file.existing
      ? await reindexExisting(file, file.existing, deps, glossaries)
      : await write(file, deps, now, glossaries);
    done += 1;
    deps.onProgress?.({
      done,
      total: read.length,
      path: file.name,
      skipped: outcome.skipped,
      chunks: outcome.skipped ? 0 : outcome.chunks,
    });
    return outcome;
  });

  const report: IngestReport = {
    files: read.length,
    leftOut,
    empty,
    skipped: 0,
    documents: 0,
    chunks: 0,
    bytes: 0,
    ms: 0,
    excluded,
    embedded: 0,
  };
  let added = 0;
  for (const outcome of outcomes) {
    added += deps.index.add(outcome.items, { replace: outcome.replace });
    if (outcome.bridge !== undefined) deps.index.setBridge(outcome.bridge.source, outcome.bridge.entries);
    if (outcome.skipped) {
      report.skipped += 1;
      continue;
    }
    report.documents += 1;
    report.chunks += outcome.chunks;
    report.bytes += outcome.bytes;
  }
  if (glossaries.problems.length > 0)
    report.glossaryProblems = glossaries.problems.map(({ root, reason }) => ({
      path: relative(deps.cwd, root).split(sep).join('/') || '.',
      reason,
    }));
  if (deps.embedder) {
    report.embedded = await embedMissing(
      outcomes.flatMap((outcome) => outcome.urns),
      deps.index,
      deps.embedder,
    );
  }
  if ((added > 0 || report.embedded > 0) && deps.index.location) report.index = await deps.index.save();
  report.ms = Math.round(performance.now() - started);
  return report;
}

/** Include/exclude globs of {@link collectFiles}. */
interface FileFilter {
  exclude: readonly string[];
  include?: readonly string[];
}

/**
 * True when `path` (relative, `/`-separated) matches `pattern`, case-insensitively; a pattern
 * starting with `**\/` also matches at the top (`**\/LICENSE*` matches `LICENSE`).
 */
export function matchesGlob(pattern: string, path: string): boolean {
  const value = path.toLowerCase();
  const glob = pattern.toLowerCase();
  return globMatch(glob, value) || (glob.startsWith('**/') && globMatch(glob.slice(3), value));
}

/** The pattern that leaves `relative` out (first exclude, or the include list), or undefined to keep it. */
function exclusionOf(relative: string, filter: FileFilter): string | undefined {
  const excluded = filter.exclude.find((pattern) => matchesGlob(pattern, relative));
  if (excluded !== undefined) return excluded;
  if (filter.include && !filter.include.some((pattern) => matchesGlob(pattern, relative)))
    return `not included (${filter.include.join(', ')})`;
  return undefined;
}

/** Resolves the given paths into the sorted, de-duplicated list of files to ingest. */
async function collectFiles(
  paths: readonly string[],
  cwd: string,
  filter: FileFilter,
): Promise<{ files: SourceFile[]; excluded: { pattern: string; files: number }[] }> {
  if (paths.length === 0) throw new ValidationError('ingest needs at least one file or folder');
  const roots = await Promise.all(
    paths.map(async (path) => {
      const absolute = resolve(cwd, path);
      return { path, absolute, stats: await statOrUndefined(absolute) };
    }),
  );
  const missing = roots.filter((root) => root.stats === undefined).map((root) => root.path);
  if (missing.length > 0) {
    throw new ValidationError(`ingest path does not exist: ${missing.join(', ')}`, { details: { missing } });
  }
  /** Absolute path → the given path it was first found under. */
  const found = new Map<string, string>();
  const excluded = new Map<string, number>();
  for (const root of roots) {
    const stats = root.stats as Stats;
    if (stats.isDirectory()) {
      for (const file of await walk(root.absolute)) {
        const pattern = exclusionOf(relative(root.absolute, file).split(sep).join('/'), filter);
        if (pattern === undefined) {
          if (!found.has(file)) found.set(file, root.path);
        } else excluded.set(pattern, (excluded.get(pattern) ?? 0) + 1);
      }
    } else if (stats.isFile()) {
      if (!isSupported(root.absolute)) {
        throw new ValidationError(`ingest path ${root.path} is not a ${INGEST_EXTENSIONS.join(', ')} file`);
      }
      if (!found.has(root.absolute)) found.set(root.absolute, root.path);
    } else {
      throw new ValidationError(`ingest path ${root.path} is neither a file nor a folder`);
    }
  }
  const files = [...found].map(([absolute, root]) => ({
    absolute,
    root,
    name: relative(cwd, absolute).split(sep).join('/'),
    markdown: extname(absolute).toLowerCase() !== '.txt',
  }));
  const tooLong = files.filter((file) => file.name.length > MAX_NAME_LENGTH);
  if (tooLong.length > 0) {
    throw new ValidationError(
      `ingest path names over ${MAX_NAME_LENGTH} characters: ${tooLong.map((file) => file.name).join(', ')}`,
    );
  }
  return {
    files: files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    excluded: [...excluded].map(([pattern, count]) => ({ pattern, files: count })),
  };
}

/** Supported files under `folder`, recursively; symbolic links are neither followed nor listed. */
async function walk(folder: string): Promise<string[]> {
  const entries: Dirent[] = await readdir(folder, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...(await walk(path)));
    else if (entry.isFile() && isSupported(path)) files.push(path);
  }
  return files;
}

function isSupported(path: string): boolean {
  return INGEST_EXTENSIONS.includes(extname(path).toLowerCase());
}

async function statOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Strict UTF-8: a malformed byte sequence throws instead of becoming U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** C0 control characters text does not contain (all but tab, line feed, form feed, carriage return). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL = /[\u0000-\u0008\u000B\u000E-\u001F]/;

/**
 * Why `data` (a file's bytes) is not text ingest can split, or undefined when it is: binary
 * content by isbinaryfile's check of the first 512 bytes (NUL bytes, a large share of control
 * characters, a known binary signature such as ELF or PDF); not UTF-8 (strict decoding of the
 * whole file, so a UTF-16 or Latin-1 file is named, not mangled into U+FFFD); or a control
 * character other than tab, line feed, form feed and carriage return anywhere in the file. An
 * extension alone proves nothing: a binary renamed `ls.md` or random bytes as `.txt` are left out.
 */
export function contentProblem(data: Buffer): string | undefined {
  if (isBinaryFileSync(data, data.length)) return 'binary content (isbinaryfile)';
  let text: string;
  try {
    text = UTF8.decode(data);
  } catch {
    return `not UTF-8: invalid byte sequence at byte ${firstInvalidUtf8(data)}`;
  }
  const control = CONTROL.exec(text);
  if (control)
    return `binary content: control character U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at character ${control.index}`;
  return undefined;
}

/** Offset of the first byte where strict UTF-8 decoding fails: bisection over prefixes, each decoded as a stream (a character cut at the end is not an error). */
function firstInvalidUtf8(data: Buffer): number {
  const decodes = (end: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(data.subarray(0, end), { stream: true });
      return true;
    } catch {
      return false;
    }
  };
  let good = 0;
  let bad = data.length;
  while (bad - good > 1) {
    const middle = (good + bad) >>> 1;
    if (decodes(middle)) good = middle;
    else bad = middle;
  }
  return good;
}

/** Reads a file, checks its content, hashes it and looks up its Document. */
async function readSource(file: SourceFile, deps: IngestDeps): Promise<ReadFile> {
  const data = await readFile(file.absolute);
  const urn = childUrn(undefined, 'doc.Document', file.name);
  const problem = contentProblem(data);
  if (problem !== undefined)
    return { ...file, problem, content: '', bytes: data.length, contentHash: '', urn, existing: undefined };
  return {
    ...file,
    problem,
    content: data.toString('utf8'),
    bytes: data.length,
    contentHash: createHash('sha256').update(data).digest('hex'),
    urn,
    existing: await deps.resources.find(deps.actor, 'doc.Document', urn),
  };
}

/** How a chunk's `api` search field is made from its text (shared/search/api-glossary.ts); undefined for none. */
type ApiExpansion = ((text: string) => string) | undefined;

/** The `api` expansion of a file's chunks, given all their texts (api-glossary.ts `forDocument`). */
function apiExpansion(file: ReadFile, glossaries: ApiGlossaries, pieces: readonly string[]): ApiExpansion {
  return file.markdown ? glossaries.forDocument(file.absolute, pieces) : undefined;
}

/** The outcome's `bridge` of a file whose chunks get the glossary (api-glossary.ts `entriesOf`; empty when its code spells no glossary name). */
function bridgeOf(
  file: ReadFile,
  source: string,
  glossaries: ApiGlossaries,
  pieces: readonly string[],
): { bridge?: { source: string; entries: BridgeEntries } } {
  const entries = glossaries.entriesOf(file.absolute, pieces);
  return entries ? { bridge: { source, entries } } : {};
}

/** Splits a new file and puts its chunks, then its Document. */
async function write(
  file: ReadFile,
  deps: IngestDeps,
  now: () => Date,
  glossaries: ApiGlossaries,
): Promise<FileOutcome> {
  const located = await split(file.content, file.markdown);
  const pieces = located.map((piece) => piece.text);
  const api = apiExpansion(file, glossaries, pieces);
  const headings = file.markdown ? headingsOf(file.content) : [];
  const title = headings[0]?.title ?? basename(file.name);
  const trails = trailsOf(
    file.content,
    located.map((piece) => piece.start),
    headings,
  );
  const items: IndexedItem[] = [];
  for (const [index, text] of pieces.entries()) {
    const heading = trails[index];
    const chunk: Chunk = {
      meta: withMeta(
        { type: 'doc.Chunk', name: `chunk-${index}`, parent: file.urn, tokens: countTokens(text) },
        now(),
      ),
      text,
      index,
      ...(heading !== undefined ? { heading } : {}),
    };
    const { resource } = await deps.resources.put(deps.actor, chunk);
    items.push(toItem(resource, title, file.name, api));
  }
  const document: Document = {
    meta: withMeta({ type: 'doc.Document', name: file.name, purpose: title }, now()),
    path: file.name,
    contentHash: file.contentHash,
    bytes: file.bytes,
    chunks: pieces.length,
  };
  await deps.resources.put(deps.actor, document);
  return {
    urns: items.map((item) => item.urn),
    skipped: false,
    bytes: file.bytes,
    chunks: pieces.length,
    items,
    replace: false,
    ...(api !== undefined ? bridgeOf(file, file.name, glossaries, pieces) : {}),
  };
}

/**
 * For a file already ingested: the stored chunks the index lacks (usually none), or all of them
 * when the file belongs to an ingested jsii package and its chunks were indexed without the
 * package's API glossary and the entries its hits' bridges are made of (MiniSearchIndex.hasBridge:
 * an index stored before the `api` field, a module folder ingested before its package, an
 * assembly that could not be read then): they are indexed anew with it, and the entries kept.
 */
async function reindexExisting(
  file: ReadFile,
  existing: Document,
  deps: IngestDeps,
  glossaries: ApiGlossaries,
): Promise<FileOutcome> {
  // The document's chunks as ingest split them (splitting is deterministic), for the names its code spells.
  let splitOnce: Promise<string[]> | undefined;
  const pieces = () =>
    (splitOnce ??= split(file.content, file.markdown).then((found) => found.map((piece) => piece.text)));
  let api: ApiExpansion;
  let replace = false;
  if (file.markdown && glossaries.covers(file.absolute) && !deps.index.hasBridge(existing.path)) {
    api = apiExpansion(file, glossaries, await pieces());
    replace = api !== undefined;
  }
  const missing: string[] = [];
  const urns: string[] = [];
  for (let index = 0; index < existing.chunks; index += 1) {
    const urn = childUrn(existing.meta.id, 'doc.Chunk', `chunk-${index}`);
    urns.push(urn);
    if (replace || !deps.index.has(urn)) missing.push(urn);
  }
  const stored = missing.length > 0 ? await deps.resources.getMany(deps.actor, missing) : [];
  if (!replace && stored.length > 0) api = apiExpansion(file, glossaries, await pieces());
  // Entries for the hits' bridges where the chunks are (re)indexed with the glossary.
  const bridge = api !== undefined ? bridgeOf(file, existing.path, glossaries, await pieces()) : {};
  const items = stored.flatMap((resource) =>
    resource.meta.type === 'doc.Chunk'
      ? [toItem(resource as Chunk, existing.meta.purpose, existing.path, api)]
      : [],
  );
  return {
    urns,
    skipped: true,
    bytes: file.bytes,
    chunks: existing.chunks,
    items,
    replace,
    ...bridge,
  };
}

/** Embeds the indexed chunks among `urns` that lack a vector by `embedder`; returns how many. */
async function embedMissing(
  urns: readonly string[],
  index: MiniSearchIndex,
  embedder: Embedder,
): Promise<number> {
  const missing = index.missingVectors(urns, embedder.name);
  for (let start = 0; start < missing.length; start += EMBED_BATCH) {
    const batch = missing.slice(start, start + EMBED_BATCH);
    const vectors = await embedder.embed(batch.map((urn) => index.embeddingInput(urn) ?? ''));
    index.addVectors(
      batch.map((urn, i) => ({ urn, vector: vectors[i] ?? [] })),
      embedder.name,
    );
  }
  return missing.length;
}

function toItem(chunk: Chunk, documentTitle: string, path: string, api: ApiExpansion): IndexedItem {
  const item: IndexedItem = {
    urn: chunk.meta.id,
    type: 'doc.Chunk',
    title: chunk.heading ?? documentTitle,
    text: chunk.text,
    source: path,
  };
  const expansion = api?.(chunk.text);
  if (expansion) item.api = expansion;
  return item;
}

/**
 * Chunks of a file with where each starts in it (UTF-16 offset): Markdown by
 * {@link markdownChunks}, text by `RecursiveCharacterTextSplitter` (whose pieces are substrings,
 * found in order; a piece not found starts where the previous one did).
 */
async function split(content: string, markdown: boolean): Promise<{ text: string; start: number }[]> {
  if (markdown) return markdownChunks(content, CHUNK_SIZE);
  const splitter = new RecursiveCharacterTextSplitter({ chunkSize: CHUNK_SIZE, chunkOverlap: CHUNK_OVERLAP });
  let searchFrom = 0;
  let lastStart = 0;
  return (await splitter.splitText(content)).map((text) => {
    const found = content.indexOf(text, searchFrom);
    if (found !== -1) {
      searchFrom = found + 1;
      lastStart = found;
    }
    return { text, start: lastStart };
  });
}

/**
 * The heading trail in force where each piece's content starts (`Top > Section > Subsection`),
 * or undefined before the first heading. Headings that open a piece count as in force, so a
 * piece starting `## Install` belongs to "Install". `starts` are the pieces' offsets in
 * `content`, in order.
 */
function trailsOf(
  content: string,
  starts: readonly number[],
  headings: readonly Heading[],
): (string | undefined)[] {
  const byOffset = new Map(headings.map((heading) => [heading.offset, heading]));
  const trails: (string | undefined)[] = [];
  const stack: Heading[] = [];
  let next = 0;
  for (const offset of starts) {
    const start = contentStart(content, offset, byOffset);
    while (next < headings.length && (headings[next] as Heading).offset <= start) {
      const heading = headings[next] as Heading;
      while (stack.length > 0 && (stack[stack.length - 1] as Heading).level >= heading.level) stack.pop();
      stack.push(heading);
      next += 1;
    }
    trails.push(stack.length > 0 ? stack.map((heading) => heading.title).join(TRAIL_SEPARATOR) : undefined);
  }
  return trails;
}

/** First offset at or after `start` that is neither whitespace nor part of a heading. */
function contentStart(content: string, start: number, headings: ReadonlyMap<number, Heading>): number {
  let position = start;
  for (;;) {
    while (position < content.length && /\s/.test(content[position] as string)) position += 1;
    const lineStart = content.lastIndexOf('\n', position - 1) + 1;
    const heading = headings.get(lineStart);
    if (heading === undefined || heading.end <= position) return position;
    position = heading.end;
  }
}

/**
 * Maps `items` with at most `concurrency` calls in flight; results keep the order of `items`.
 * After a failure no new call starts; the first error is thrown once the calls in flight end.
 */
async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let cursor = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (cursor < items.length && !failed) {
      const index = cursor;
      cursor += 1;
      try {
        results[index] = await fn(items[index] as T);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}
