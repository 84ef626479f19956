import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { assemblyTypes, isL1, parseAssembly, shardOf } from '../graph/jsii.js';

/**
 * The API glossary of a jsii package (issue 21, the vocabulary bridge): what the package's own
 * API reference says each name of a module means, added to the chunks of that module's README
 * that spell the name, as a low-weight search field (`api`, shared/search/minisearch-index.ts).
 *
 * Why: users ask in words, the READMEs answer in identifiers. "How do I set how long a log group
 * keeps its logs?" is answered by a chunk with `retention: logs.RetentionDays.ONE_WEEK`, which
 * shares no word with the question; the assembly's summary of `LogGroupProps.retention` is "How
 * long, in days, the log contents will be retained". Indexing each chunk with the summaries of the
 * names its code uses is *document expansion* (Nogueira et al., "Document Expansion by Query
 * Prediction", 2019, do so with a model; here the library's own documentation is the source), so
 * it costs nothing at query time. The summaries are searched, never shown: hits, passages and
 * answers are the chunk's own text.
 *
 * What counts: the summaries (`docs.summary`) of the types, properties and methods of the
 * module's L2 API (L1 `Cfn*` types left out, as the graph does: shared/graph/jsii.ts), for the
 * names of 4+ characters that the chunk's code spells (fenced blocks and inline code spans); a
 * name with more than {@link MAX_SENSES} different summaries in the module (`bucket`, `role`) says
 * too little to count.
 */

/** A name with more different summaries than this in one module adds none (too generic). */
export const MAX_SENSES = 3;

/**
 * A name the code of more chunks of its document than this spells adds none: it is what the
 * whole document is about (`Topic` in the SNS README), so its summary would add the module's
 * subject to every chunk instead of telling one chunk apart (inverse document frequency, applied
 * as a cut).
 */
export const MAX_CHUNKS_WITH_NAME = 3;

/** Most characters of summaries added to one chunk (a long code block names many members). */
export const MAX_EXPANSION_CHARS = 4_000;

/** Identifiers of code: 4+ characters, as JavaScript spells them. */
const IDENTIFIER = /[A-Za-z_$][\w$]{3,}/g;

/** Fenced code blocks and inline code spans of Markdown. */
const CODE = /```[\s\S]*?```|`[^`\n]+`/g;

/**
 * The API names a Markdown text's code spells (identifiers of 4+ characters in its fenced blocks
 * and inline code spans, never its prose), each once, in the order of first use: what the
 * glossary expands and what a hit's bridge names (shared/search/bridge.ts).
 */
export function codeNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [code] of text.matchAll(CODE)) for (const [name] of code.matchAll(IDENTIFIER)) names.add(name);
  return names;
}

/** A document's glossary entries: each API name its code spells → that name's summaries (1 to {@link MAX_SENSES}). */
export type BridgeEntries = Record<string, string[]>;

/** Summaries of one module's API names: name → its distinct summaries. */
type ModuleGlossary = Map<string, string[]>;

/** The glossary of one jsii assembly, by module (its shard: `aws_s3`, `core`). */
export class ApiGlossary {
  private constructor(private readonly modules: ReadonlyMap<string, ModuleGlossary>) {}

  /**
   * The glossary of an assembly's content (`.jsii`, a `jsii/file-redirect`, or the gzipped
   * assembly), `readRedirect` reading a redirect's target.
   * @throws ValidationError when the content is not a jsii assembly (shared/graph/jsii.ts `parseAssembly`)
   */
  static fromAssembly(content: Buffer, readRedirect?: (file: string) => Buffer): ApiGlossary {
    const { types } = assemblyTypes(parseAssembly(content, readRedirect));
    const modules = new Map<string, ModuleGlossary>();
    const add = (module: string, name: string, summary: string | undefined) => {
      if (summary === undefined || summary.trim() === '' || name.length < 4) return;
      let glossary = modules.get(module);
      if (!glossary) {
        glossary = new Map();
        modules.set(module, glossary);
      }
      const senses = glossary.get(name);
      if (!senses) glossary.set(name, [summary]);
      else if (!senses.includes(summary)) senses.push(summary);
    };
    for (const type of types.values()) {
      if (isL1(type)) continue;
      const module = shardOf(type);
      add(module, type.name, type.docs?.summary);
      for (const property of type.properties ?? []) add(module, property.name, property.docs?.summary);
      for (const method of type.methods ?? []) add(module, method.name, method.docs?.summary);
    }
    return new ApiGlossary(modules);
  }

  /** Number of modules with at least one summary. */
  get size(): number {
    return this.modules.size;
  }

  /**
   * The summaries of the names of `module` that the code of `text` spells, each once, in the
   * order of first use, joined by a space, at most {@link MAX_EXPANSION_CHARS} (a summary that
   * would go past it is left out, the shorter ones after it still count); `''` when none (or the
   * module is unknown). Names in `common` add nothing.
   */
  expansion(text: string, module: string, common: ReadonlySet<string> = new Set()): string {
    const glossary = this.modules.get(module);
    if (!glossary) return '';
    const out: string[] = [];
    let length = 0;
    for (const name of codeNames(text)) {
      if (common.has(name)) continue;
      const senses = glossary.get(name);
      if (!senses || senses.length > MAX_SENSES) continue;
      for (const summary of senses) {
        if (out.includes(summary)) continue;
        if (length + summary.length > MAX_EXPANSION_CHARS) continue;
        out.push(summary);
        length += summary.length + 1;
      }
    }
    return out.join(' ');
  }

  /**
   * The glossary entries of `module` for the names the code of `texts` spells (the same names
   * {@link expansion} counts: not in `common`, at most {@link MAX_SENSES} senses): name → its
   * summaries. What the search keeps to tell a hit which of its names matched a query
   * (shared/search/bridge.ts); empty when none (or the module is unknown).
   */
  entries(texts: readonly string[], module: string, common: ReadonlySet<string> = new Set()): BridgeEntries {
    const glossary = this.modules.get(module);
    const out: BridgeEntries = {};
    if (!glossary) return out;
    for (const text of texts)
      for (const name of codeNames(text)) {
        if (common.has(name) || Object.hasOwn(out, name)) continue;
        const senses = glossary.get(name);
        if (senses && senses.length <= MAX_SENSES) out[name] = [...senses];
      }
    return out;
  }
}

/** Name of the file a jsii package holds its assembly in (or a redirect to `.jsii.gz`). */
const ASSEMBLY_FILE = '.jsii';

/** How many folders up from a document its package's assembly is looked for. */
const MAX_DEPTH = 4;

/**
 * The glossaries of the jsii packages documents belong to, each assembly read once: a document
 * belongs to the nearest folder above it (at most {@link MAX_DEPTH} up, not past a
 * `node_modules` folder) that holds a `.jsii` file, and its module is the first folder below
 * that root (`aws-s3` → `aws_s3`; a document at the root → `core`).
 *
 * Only packages whose assembly is among what is ingested count: the package folder itself, or a
 * folder above it, is one of `ingested` (`--docs node_modules/aws-cdk-lib`, as the eval and the
 * graph ingest do). Reading aws-cdk-lib's assembly takes ≈ 2.5–3.5 s and ≈ 550 MB at its peak
 * (gunzip and `JSON.parse` of 88 MB; ≈ 16 MB of glossary stay), once per ingest that adds or
 * re-indexes its documents — the graph ingest of the same run reads it a second time; ingesting
 * one module's folder (`--docs node_modules/aws-cdk-lib/aws-s3`, the quick start) reads none.
 */
export class ApiGlossaries {
  private readonly byRoot = new Map<string, ApiGlossary | undefined>();

  /** @param ingested absolute paths of the files and folders given to ingest */
  constructor(private readonly ingested: readonly string[]) {}
  /** Package roots whose assembly could not be read, with why (ingest goes on without their glossary). */
  readonly problems: { root: string; reason: string }[] = [];

  /**
   * How to expand the chunks of the document at `absolute`: a function of a chunk's text giving
   * its `api` field, or undefined when the document is in no jsii package. `chunks` are the
   * texts of all the document's chunks: a name their code spells in more than
   * {@link MAX_CHUNKS_WITH_NAME} of them adds nothing.
   */
  forDocument(absolute: string, chunks: readonly string[]): ((text: string) => string) | undefined {
    const root = this.rootOf(absolute);
    if (root === undefined) return undefined;
    const glossary = this.load(root);
    if (glossary === undefined) return undefined;
    const module = moduleOf(root, absolute);
    const common = commonNames(chunks);
    return (text) => glossary.expansion(text, module, common);
  }

  /**
   * The glossary entries of the names the code of the document at `absolute` spells
   * ({@link ApiGlossary.entries}; `chunks` as for {@link forDocument}), or undefined when the
   * document gets no glossary.
   */
  entriesOf(absolute: string, chunks: readonly string[]): BridgeEntries | undefined {
    const root = this.rootOf(absolute);
    if (root === undefined) return undefined;
    const glossary = this.load(root);
    if (glossary === undefined) return undefined;
    return glossary.entries(chunks, moduleOf(root, absolute), commonNames(chunks));
  }

  /**
   * True when the document at `absolute` belongs to a jsii package whose folder is ingested, so
   * that its chunks get a glossary (without reading the assembly: it may still fail to load).
   */
  covers(absolute: string): boolean {
    return this.rootOf(absolute) !== undefined;
  }

  /** The root of the ingested jsii package the document at `absolute` belongs to, if any. */
  private rootOf(absolute: string): string | undefined {
    const root = packageRoot(dirname(absolute));
    return root !== undefined && this.ingested.some((path) => isWithin(root, path)) ? root : undefined;
  }

  private load(root: string): ApiGlossary | undefined {
    if (this.byRoot.has(root)) return this.byRoot.get(root);
    let glossary: ApiGlossary | undefined;
    try {
      glossary = ApiGlossary.fromAssembly(readFileSync(join(root, ASSEMBLY_FILE)), (file) =>
        readFileSync(join(root, file)),
      );
    } catch (error) {
      this.problems.push({ root, reason: (error as Error).message });
    }
    this.byRoot.set(root, glossary);
    return glossary;
  }
}

/** The module (shard) of the document at `absolute` in the package at `root`: `aws-s3/README.md` → `aws_s3`; at the root → `core`. */
function moduleOf(root: string, absolute: string): string {
  const below = relative(root, dirname(absolute));
  return below === '' ? 'core' : (below.split(sep)[0] as string).replace(/-/g, '_');
}

/** True when `path` is `folder` or below it. */
function isWithin(path: string, folder: string): boolean {
  const below = relative(folder, path);
  return below === '' || (!below.startsWith(`..${sep}`) && below !== '..' && !isAbsolute(below));
}

/** Names of code that more than {@link MAX_CHUNKS_WITH_NAME} of `chunks` spell. */
function commonNames(chunks: readonly string[]): Set<string> {
  const count = new Map<string, number>();
  for (const text of chunks) for (const name of codeNames(text)) count.set(name, (count.get(name) ?? 0) + 1);
  return new Set([...count].filter(([, n]) => n > MAX_CHUNKS_WITH_NAME).map(([name]) => name));
}

/** The nearest folder from `dir` up that holds a `.jsii` file (see {@link ApiGlossaries}). */
function packageRoot(dir: string): string | undefined {
  let current = dir;
  for (let depth = 0; depth <= MAX_DEPTH; depth += 1) {
    if (existsSync(join(current, ASSEMBLY_FILE))) return current;
    const parent = dirname(current);
    if (parent === current || basename(parent) === 'node_modules') return undefined;
    current = parent;
  }
  return undefined;
}
