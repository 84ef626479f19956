import type { AsPlainObject } from 'minisearch';
import SearchableMap from 'minisearch/SearchableMap';
import { ValidationError } from '../errors.js';
import type { StorageInterface } from '../storage/port.js';
import { ownHeading } from './headings.js';
import type { ResolvedOwners } from './owners.js';

/**
 * The *shard pack* of a chunk index generation (issue 25 item 5): the same minisearch index as
 * `<stem>.<n>.json`, cut so that a cold `search` reads only what its query needs.
 *
 * - `<stem>-shards/<n>/v<version>/core.json`: what every query needs and nothing more — BM25 statistics
 *   (document count, field lengths, average field lengths), the document ids, each chunk's type,
 *   source path and own heading (filters and the document, module and section priors, v5), the
 *   term dictionary (terms
 *   only, in the serialisation's order so the reader's radix tree iterates as minisearch's own),
 *   the resolved module prior ({@link ResolvedOwners}) and where everything else lives. The
 *   per-chunk data are flat number arrays and the URNs a table of prefixes plus one string of
 *   suffixes (v3), and the dictionary one string (v4), so parsing the core allocates a few large
 *   values, not an array per chunk or per dictionary node.
 * - `<stem>-shards/<n>/v<version>/postings.<i>.bin`: the posting lists of a contiguous range of sorted
 *   terms, about {@link POSTING_SHARD_BYTES} each, in the binary layout of {@link PostingShard}
 *   (v3; JSON before): a reader decodes the lists of the terms its query asks for and nothing
 *   else. `bounds[i]` is the first term of shard i.
 * - `<stem>-shards/<n>/v<version>/texts.<i>.json`: heading trail and text of consecutive chunks, read for
 *   the hits a query returns only.
 * - `<stem>-shards/<n>/v<version>/vectors.json`: the stored embeddings, read only by hybrid search.
 *
 * The core is written last: its presence says the pack is complete. The stem is `<stem>-shards`
 * rather than `<stem>.…` so that listing the generations (`<stem>.`) does not list the pack. The
 * layout version is part of the key prefix, so a generation's pack of an older layout (written
 * create-only under the old prefix) is neither read nor in the way of writing the new one: a
 * reader finds no core of its version and reads the whole generation until ingest writes the next.
 * Whole generations stay the source of truth (ingest opens and extends them); a pack is derived
 * data, and a generation without one is read whole (shared/search/sharded-index.ts).
 */

/** Version of the pack layout; a reader treats a pack of another version as absent. */
export const SHARD_PACK_VERSION = 5;

/** Target size of a posting shard, in bytes (a shard holds whole terms, so it may exceed it). */
export const POSTING_SHARD_BYTES = 48 * 1024;

/** Target size of a text shard's JSON, in bytes. */
export const TEXT_SHARD_BYTES = 64 * 1024;

/** Storage key prefix of the pack of generation `generation` of the index stored under `stem`. */
export function packPrefix(stem: string, generation: number): string {
  return `${stem}-shards/${generation}/v${SHARD_PACK_VERSION}/`;
}

/** Storage key of the core of a pack. */
export function coreKey(stem: string, generation: number): string {
  return `${packPrefix(stem, generation)}core.json`;
}

/** Storage key of posting shard `shard` ({@link PostingShard}'s binary layout). */
export function postingsKey(stem: string, generation: number, shard: number): string {
  return `${packPrefix(stem, generation)}postings.${shard}.bin`;
}

/** Storage key of text shard `shard`. */
export function textsKey(stem: string, generation: number, shard: number): string {
  return `${packPrefix(stem, generation)}texts.${shard}.json`;
}

/** Storage key of the vectors of a pack. */
export function vectorsKey(stem: string, generation: number): string {
  return `${packPrefix(stem, generation)}vectors.json`;
}

/**
 * Numbers per chunk in a core's `docs`: shortId, URN prefix index, type index, source index or -1,
 * text shard, own heading index (`headings`) or -1 (v5: the section prior ranks by it).
 */
export const DOC_WIDTH = 6;

/** A core's `fieldLengths` entry for a field minisearch stored as null (JSON's NaN). */
export const FIELD_LENGTH_NULL = -1;

/** A core's `fieldLengths` entry past the end of a chunk's minisearch array (a field it lacks). */
export const FIELD_LENGTH_ABSENT = -2;

/** The core of a pack (see the module comment), as {@link parseCore} checks it. */
export interface PackCore {
  pack: typeof SHARD_PACK_VERSION;
  /** The term processing version of the generation (minisearch-index.ts `TERMS_VERSION`). */
  cldTerms?: number | undefined;
  documentCount: number;
  nextId: number;
  fieldIds: Record<string, number>;
  /** Per field id; null for a field no chunk has (minisearch's NaN, as JSON writes it). */
  averageFieldLength: (number | null)[];
  dirtCount: number;
  /** URN prefixes (up to and including the last `/`; `''` for a URN without one). */
  prefixes: string[];
  /** Each chunk's URN after its prefix, in the serialisation's order, joined by `\n`. */
  suffixes: string;
  /** {@link DOC_WIDTH} integers per chunk, in the serialisation's order (see DOC_WIDTH). */
  docs: number[];
  /**
   * Per chunk (as `docs`), one integer per field id: minisearch's `fieldLength`, with
   * {@link FIELD_LENGTH_NULL} and {@link FIELD_LENGTH_ABSENT} for its null and missing entries.
   */
  fieldLengths: number[];
  types: string[];
  sources: string[];
  /** The chunks' own headings (the last of their heading trails; headings.ts `ownHeading`), each once. */
  headings: string[];
  /**
   * The term dictionary: minisearch's radix tree (`SearchableMap`) built by inserting every term in
   * the order of minisearch's serialisation, as `MiniSearch.loadJS` builds it, written node by node
   * in the tree's own order as one string ({@link treeToString}; v3 wrote nested `[edge, child]`
   * arrays, ≈ 60,000 JSON arrays on the aws-cdk-lib corpus, whose parse cost a cold search ≈ 60 ms
   * of CPU and its garbage collections more), so the reader rebuilds the same tree without
   * inserting 17,000 terms one by one, and makes objects only of the nodes a query walks.
   */
  tree: string;
  /** First term (in code unit order) of each posting shard. */
  bounds: string[];
  /** The resolved module prior ({@link ResolvedOwners}). */
  owners: ResolvedOwners;
  textShards: number;
  /** Model of the stored vectors (`vectors.json`), when the generation has some. */
  vectors?: string | undefined;
}

/**
 * Parses a stored core, every field checked by hand (stored index data the reader must not trust
 * blindly, as zod would check it; a zod schema here cost a cold search its schema's construction
 * and first compiled parse, and zod's walk over the large arrays — chunks, field lengths, owned
 * names — takes hundreds of milliseconds: the time this format exists to save). Also checks that
 * the arrays agree in length and that every index points into its table.
 * @returns the core, or undefined when `raw` is not a core of this version
 */
export function parseCore(raw: unknown): PackCore | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const {
    pack,
    cldTerms,
    documentCount,
    nextId,
    fieldIds,
    averageFieldLength,
    dirtCount,
    prefixes,
    suffixes,
    docs,
    fieldLengths,
    types,
    sources,
    headings,
    tree,
    bounds,
    owners,
    textShards,
    vectors,
  } = raw as Record<string, unknown>;
  if (
    pack !== SHARD_PACK_VERSION ||
    !(cldTerms === undefined || Number.isInteger(cldTerms)) ||
    !isCount(documentCount) ||
    !isCount(nextId) ||
    !isCount(dirtCount) ||
    !isCount(textShards) ||
    typeof fieldIds !== 'object' ||
    fieldIds === null ||
    Array.isArray(fieldIds) ||
    !Object.values(fieldIds).every((id) => Number.isInteger(id)) ||
    !Array.isArray(averageFieldLength) ||
    !averageFieldLength.every((length) => length === null || typeof length === 'number') ||
    !isStrings(prefixes) ||
    !isStrings(types) ||
    !isStrings(sources) ||
    !isStrings(headings) ||
    !isStrings(bounds) ||
    typeof suffixes !== 'string' ||
    typeof tree !== 'string' ||
    !(vectors === undefined || typeof vectors === 'string')
  )
    return undefined;
  if (!Array.isArray(docs) || docs.length % DOC_WIDTH !== 0) return undefined;
  const chunks = docs.length / DOC_WIDTH;
  for (let at = 0; at < docs.length; at += DOC_WIDTH) {
    if (
      !isIndex(docs[at], Number.MAX_SAFE_INTEGER) ||
      !isIndex(docs[at + 1], prefixes.length) ||
      !isIndex(docs[at + 2], types.length) ||
      !(docs[at + 3] === -1 || isIndex(docs[at + 3], sources.length)) ||
      !isIndex(docs[at + 4], textShards) ||
      !(docs[at + 5] === -1 || isIndex(docs[at + 5], headings.length))
    )
      return undefined;
  }
  const fields = Object.keys(fieldIds).length;
  if (
    !Array.isArray(fieldLengths) ||
    fieldLengths.length !== chunks * fields ||
    !fieldLengths.every((length) => Number.isInteger(length) && length >= FIELD_LENGTH_ABSENT)
  )
    return undefined;
  let lines = 1;
  for (let at = suffixes.indexOf('\n'); at >= 0; at = suffixes.indexOf('\n', at + 1)) lines += 1;
  if (chunks > 0 && lines !== chunks) return undefined;
  if (
    !Array.isArray(owners) ||
    !owners.every(
      (owned) =>
        Array.isArray(owned) &&
        owned.length === 2 &&
        isStrings(owned[0]) &&
        Array.isArray(owned[1]) &&
        owned[1].every(
          (share: unknown) =>
            Array.isArray(share) &&
            share.length === 2 &&
            typeof share[0] === 'string' &&
            typeof share[1] === 'number',
        ),
    )
  )
    return undefined;
  const core: PackCore = {
    pack,
    documentCount,
    nextId,
    fieldIds: fieldIds as Record<string, number>,
    averageFieldLength: averageFieldLength as (number | null)[],
    dirtCount,
    prefixes,
    suffixes,
    docs: docs as number[],
    fieldLengths: fieldLengths as number[],
    types,
    sources,
    headings,
    tree,
    bounds,
    owners: owners as ResolvedOwners,
    textShards,
  };
  if (cldTerms !== undefined) core.cldTerms = cldTerms as number;
  if (vectors !== undefined) core.vectors = vectors;
  return core;
}

function isCount(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0;
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isIndex(value: unknown, size: number): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) < size;
}

/**
 * One field's posting list of a term, read in place from a posting shard's words: `size` pairs of
 * shortId and term frequency from word `start` on, in minisearch's serialisation order (what the
 * ranking, shared/search/scoring.ts, reads). Nothing is copied: a cold search's prefix and fuzzy
 * expansions ask for lists of thousands of chunks. Read-only.
 */
export class PostingList {
  constructor(
    /** The shard's words (shared by its lists). */
    readonly words: Uint32Array,
    /** Word index of the first pair. */
    readonly start: number,
    /** Number of chunks in the list. */
    readonly size: number,
  ) {}

  /** `[shortId, term frequency]` pairs, in stored order. */
  *entries(): Generator<[number, number], undefined, undefined> {
    const words = this.words;
    for (let at = this.start, end = this.start + 2 * this.size; at < end; at += 2)
      yield [words[at] as number, words[at + 1] as number];
  }

  [Symbol.iterator](): Generator<[number, number], undefined, undefined> {
    return this.entries();
  }
}

/** The posting lists of one term: fieldId → its {@link PostingList} (shortId → term frequency). */
export type Postings = Map<number, PostingList>;

/**
 * A posting shard as stored (v3), decoded term by term. Layout, all integers unsigned 32-bit
 * little-endian:
 *
 * - the byte length `n` of the shard's terms as a UTF-8 JSON array of strings (sorted), then
 *   those `n` bytes, then zero bytes up to a multiple of 4;
 * - `terms + 1` word offsets into the posting words that follow, one per term and one past the end;
 * - the posting words: per term, its field count, then per field its id, its chunk count `m` and
 *   `m` pairs of shortId and term frequency, in minisearch's serialisation's order (so the reader's
 *   Maps iterate, and its scores add up, as `MiniSearch.loadJS`'s do).
 *
 * Nothing of a shard is turned into JavaScript objects but its term list and the posting lists
 * asked for ({@link postings}), so a cold search's garbage is what its query needs.
 */
export class PostingShard {
  private constructor(
    /** The shard's terms, sorted (in code unit order, as the writer sorts them). */
    private readonly terms: readonly string[],
    /** The offsets (terms + 1), then the posting words. */
    private readonly words: Uint32Array,
    private readonly postingWords: number,
  ) {}

  /**
   * Reads a stored shard's header.
   * @returns the shard, or undefined when `data` does not have the layout
   */
  static parse(data: Uint8Array): PostingShard | undefined {
    if (data.byteLength < 4) return undefined;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const termBytes = view.getUint32(0, true);
    if (4 + termBytes > data.byteLength) return undefined;
    let list: unknown;
    try {
      list = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data.subarray(4, 4 + termBytes)));
    } catch {
      return undefined;
    }
    if (!Array.isArray(list)) return undefined;
    // Strings in strictly ascending order: what the lookup's binary search needs.
    for (let i = 0; i < list.length; i += 1) {
      const term: unknown = list[i];
      if (typeof term !== 'string' || (i > 0 && !((list[i - 1] as string) < term))) return undefined;
    }
    const offsetsAt = align4(4 + termBytes);
    const postingsAt = offsetsAt + 4 * (list.length + 1);
    if (postingsAt > data.byteLength || (data.byteLength - postingsAt) % 4 !== 0) return undefined;
    const postingWords = (data.byteLength - postingsAt) / 4;
    let previous = 0;
    for (let i = 0; i <= list.length; i += 1) {
      const offset = view.getUint32(offsetsAt + 4 * i, true);
      if (offset < previous || offset > postingWords) return undefined;
      previous = offset;
    }
    if (previous !== postingWords) return undefined;
    const count = (data.byteLength - offsetsAt) / 4;
    let words: Uint32Array;
    if (!LITTLE_ENDIAN) {
      words = new Uint32Array(count);
      for (let i = 0; i < count; i += 1) words[i] = view.getUint32(offsetsAt + 4 * i, true);
    } else if ((data.byteOffset + offsetsAt) % 4 === 0) {
      words = new Uint32Array(data.buffer, data.byteOffset + offsetsAt, count);
    } else {
      // A Buffer from a pool may start anywhere: copy to an aligned one.
      words = new Uint32Array(Uint8Array.prototype.slice.call(data, offsetsAt).buffer);
    }
    return new PostingShard(list as string[], words, postingWords);
  }

  /** Whether the shard holds `term`. */
  has(term: string): boolean {
    return this.indexOf(term) >= 0;
  }

  /** Index of `term` in the sorted term list (binary search), -1 when absent. */
  private indexOf(term: string): number {
    const terms = this.terms;
    let low = 0;
    let high = terms.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const at = terms[middle] as string;
      if (at < term) low = middle + 1;
      else if (at > term) high = middle - 1;
      else return middle;
    }
    return -1;
  }

  /**
   * The posting list of `term`, as minisearch holds it in memory; undefined when the shard does not
   * hold the term.
   * @throws ValidationError when the term's words do not decode (a corrupt shard)
   */
  postings(term: string): Postings | undefined {
    const index = this.indexOf(term);
    if (index < 0) return undefined;
    const words = this.words;
    const base = this.terms.length + 1;
    let at = base + (words[index] as number);
    const end = base + (words[index + 1] as number);
    const word = (i: number) => words[i] as number;
    const postings: Postings = new Map();
    const fields = at < end ? word(at++) : 0;
    for (let f = 0; f < fields; f += 1) {
      if (at + 2 > end) throw new ValidationError(`posting list of ${term} is truncated`);
      const fieldId = word(at);
      const count = word(at + 1);
      at += 2;
      if (at + 2 * count > end) throw new ValidationError(`posting list of ${term} is truncated`);
      postings.set(fieldId, new PostingList(words, at, count));
      at += 2 * count;
    }
    if (at !== end) throw new ValidationError(`posting list of ${term} has ${end - at} words left over`);
    return postings;
  }

  /** Number of terms (for tests). */
  get size(): number {
    return this.terms.length;
  }

  /** Number of posting words (for tests). */
  get words32(): number {
    return this.postingWords;
  }
}

/** Whether this machine stores a Uint32Array's words little-endian, as the layout does. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function align4(bytes: number): number {
  return (bytes + 3) & ~3;
}

/**
 * Encodes posting lists in {@link PostingShard}'s layout.
 * @param entries `[term, fieldId → shortId → term frequency]` (minisearch's serialisation), terms sorted
 * @throws ValidationError when an id or a frequency is not an unsigned 32-bit integer
 */
export function encodePostingShard(
  entries: readonly (readonly [string, Record<string, Record<string, number>>])[],
): Buffer {
  const termBytes = Buffer.from(JSON.stringify(entries.map(([term]) => term)), 'utf8');
  const words: number[] = [];
  const offsets: number[] = [];
  const u32 = (value: number, what: string) => {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff)
      throw new ValidationError(`${what} ${value} does not fit the posting shard layout`);
    words.push(value);
  };
  for (const [term, fields] of entries) {
    offsets.push(words.length);
    const fieldEntries = Object.entries(fields);
    u32(fieldEntries.length, `field count of ${term}`);
    for (const [fieldId, docs] of fieldEntries) {
      const docEntries = Object.entries(docs);
      u32(Number(fieldId), `field id of ${term}`);
      u32(docEntries.length, `chunk count of ${term}`);
      for (const [shortId, frequency] of docEntries) {
        u32(Number(shortId), `shortId of ${term}`);
        u32(frequency, `term frequency of ${term}`);
      }
    }
  }
  offsets.push(words.length);
  const offsetsAt = align4(4 + termBytes.length);
  const out = Buffer.alloc(offsetsAt + 4 * (offsets.length + words.length));
  out.writeUInt32LE(termBytes.length, 0);
  termBytes.copy(out, 4);
  let at = offsetsAt;
  for (const value of offsets) {
    out.writeUInt32LE(value, at);
    at += 4;
  }
  for (const value of words) {
    out.writeUInt32LE(value, at);
    at += 4;
  }
  return out;
}

/** A text shard: shortId → heading trail and text. */
export type TextShard = Record<string, { title?: string; text: string }>;

/**
 * Parses a stored text shard ({@link TextShard}, checked by hand: a schema's walk over thousands
 * of records costs more than reading the shard).
 * @returns the shard, or undefined when `raw` is not one
 */
export function parseTextShard(raw: unknown): TextShard | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  for (const entry of Object.values(raw)) {
    if (typeof entry !== 'object' || entry === null) return undefined;
    const { title, text } = entry as { title?: unknown; text?: unknown };
    if (typeof text !== 'string' || (title !== undefined && typeof title !== 'string')) return undefined;
  }
  return raw as TextShard;
}

/** Stored fields of a chunk as minisearch-index.ts stores them. */
interface Stored {
  urn?: unknown;
  type?: unknown;
  title?: unknown;
  text?: unknown;
  source?: unknown;
}

/**
 * Writes the pack of generation `generation` of the index stored under `stem`: text and posting
 * shards first, then vectors, then the core (create-only puts; a shard that already exists is
 * left as it is: a pack is a pure function of its generation, so an earlier writer wrote the same).
 * @param plain minisearch's serialisation of the generation (`MiniSearch#toJSON`)
 * @param owners the resolved module prior of the generation
 * @param vectors the generation's stored embeddings (`cldVectors`), if any
 * @returns the number of objects written
 */
export async function writeShardPack(
  storage: StorageInterface,
  stem: string,
  generation: number,
  plain: AsPlainObject & { cldTerms?: number },
  owners: ResolvedOwners,
  vectors?: { model: string; vectors: Record<string, string> },
): Promise<number> {
  const types: string[] = [];
  const sources: string[] = [];
  const intern = (table: string[], seen: Map<string, number>, value: string) => {
    let at = seen.get(value);
    if (at === undefined) {
      at = table.length;
      table.push(value);
      seen.set(value, at);
    }
    return at;
  };
  const typeAt = new Map<string, number>();
  const sourceAt = new Map<string, number>();
  const headings: string[] = [];
  const headingAt = new Map<string, number>();
  const prefixes: string[] = [];
  const prefixAt = new Map<string, number>();
  const suffixes: string[] = [];
  const docs: number[] = [];
  const fieldLengths: number[] = [];
  const fieldCount = Object.keys(plain.fieldIds).length;
  const fieldLength = plain.fieldLength as Record<string, (number | null)[]>;
  const textShards: Record<string, { title?: string; text: string }>[] = [];
  let current: Record<string, { title?: string; text: string }> = {};
  let currentBytes = 0;
  const storedFields = plain.storedFields as Record<string, Stored>;
  for (const [shortId, id] of Object.entries(plain.documentIds)) {
    const urn = String(id);
    if (urn.includes('\n')) throw new ValidationError(`chunk id ${JSON.stringify(urn)} holds a line break`);
    const stored = storedFields[shortId] ?? {};
    const entry: { title?: string; text: string } = {
      text: typeof stored.text === 'string' ? stored.text : '',
    };
    if (typeof stored.title === 'string') entry.title = stored.title;
    const heading = ownHeading(entry.title);
    const bytes = entry.text.length + (entry.title?.length ?? 0) + 32;
    if (currentBytes > 0 && currentBytes + bytes > TEXT_SHARD_BYTES) {
      textShards.push(current);
      current = {};
      currentBytes = 0;
    }
    current[shortId] = entry;
    currentBytes += bytes;
    const cut = urn.lastIndexOf('/') + 1;
    suffixes.push(urn.slice(cut));
    docs.push(
      Number(shortId),
      intern(prefixes, prefixAt, urn.slice(0, cut)),
      intern(types, typeAt, typeof stored.type === 'string' ? stored.type : ''),
      typeof stored.source === 'string' ? intern(sources, sourceAt, stored.source) : -1,
      textShards.length,
      heading === undefined ? -1 : intern(headings, headingAt, heading),
    );
    const lengths = fieldLength[shortId] ?? [];
    for (let field = 0; field < fieldCount; field += 1) {
      const length = lengths[field];
      fieldLengths.push(
        field >= lengths.length
          ? FIELD_LENGTH_ABSENT
          : typeof length === 'number'
            ? length
            : FIELD_LENGTH_NULL,
      );
    }
  }
  if (currentBytes > 0) textShards.push(current);

  const dictionary = new SearchableMap<true>();
  for (const [term] of plain.index) dictionary.set(term, true);
  const tree = treeToString((dictionary as unknown as { _tree: RadixNode })._tree);
  const sorted = [...plain.index].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const postingShards: [string, Record<string, Record<string, number>>][][] = [];
  const bounds: string[] = [];
  let shard: [string, Record<string, Record<string, number>>][] = [];
  let shardBytes = 0;
  for (const [term, data] of sorted) {
    // The binary layout's size: the term, and per field 2 words and 2 per chunk.
    let bytes = term.length + 12;
    for (const docs of Object.values(data)) bytes += 8 + 8 * Object.keys(docs).length;
    if (shardBytes > 0 && shardBytes + bytes > POSTING_SHARD_BYTES) {
      postingShards.push(shard);
      shard = [];
      shardBytes = 0;
    }
    if (shardBytes === 0) bounds.push(term);
    shard.push([term, data as Record<string, Record<string, number>>]);
    shardBytes += bytes;
  }
  if (shardBytes > 0) postingShards.push(shard);

  const puts: [string, string | Buffer][] = [
    ...textShards.map((texts, i): [string, string] => [textsKey(stem, generation, i), JSON.stringify(texts)]),
    ...postingShards.map((postings, i): [string, Buffer] => [
      postingsKey(stem, generation, i),
      encodePostingShard(postings),
    ]),
  ];
  if (vectors) puts.push([vectorsKey(stem, generation), JSON.stringify(vectors)]);
  await Promise.all(puts.map(([key, data]) => storage.put(key, data)));
  const core: PackCore = {
    pack: SHARD_PACK_VERSION,
    documentCount: plain.documentCount,
    nextId: plain.nextId,
    fieldIds: plain.fieldIds,
    averageFieldLength: plain.averageFieldLength,
    dirtCount: plain.dirtCount ?? 0,
    prefixes,
    suffixes: suffixes.join('\n'),
    docs,
    fieldLengths,
    types,
    sources,
    headings,
    tree,
    bounds,
    owners,
    textShards: textShards.length,
  };
  if (plain.cldTerms !== undefined) core.cldTerms = plain.cldTerms;
  if (vectors) core.vectors = vectors.model;
  await storage.put(coreKey(stem, generation), JSON.stringify(core));
  return puts.length + 1;
}

/** A node of minisearch's radix tree: edge label → child node, or `''` → the value at a leaf. */
type RadixNode = Map<string, RadixNode | true>;

/**
 * A radix tree as one string (the core's `tree`, v4): a node is its entries in the tree's order,
 * an entry is the edge's length in base 36, `:`, the edge, then — unless the edge is `''` (the
 * leaf marker, whose value is `true`) — the child's encoded length in base 36, `:`, and the child.
 * Lengths are in UTF-16 code units. The lengths let a reader find a node's children without
 * reading their subtrees, so it decodes only the nodes a lookup walks.
 * @throws ValidationError when a node holds a value other than the leaf marker's `true`
 */
export function treeToString(node: RadixNode): string {
  let out = '';
  for (const [edge, child] of node) {
    out += `${edge.length.toString(36)}:${edge}`;
    if (edge === '') {
      if (child !== true) throw new ValidationError('a radix tree leaf holds a node');
      continue;
    }
    if (child === true) throw new ValidationError(`the radix tree edge ${edge} holds a value`);
    const inner = treeToString(child);
    out += `${inner.length.toString(36)}:${inner}`;
  }
  return out;
}

/**
 * The radix tree of a pack's `tree` ({@link treeToString}), for `new SearchableMap(tree)`:
 * a node's children become Map entries only when the search first looks at that node (its
 * `get`, `has`, `keys`, iteration), so a query builds the few thousand nodes its exact, prefix
 * and fuzzy lookups walk, not the whole dictionary's. Read-only use: minisearch's search reads
 * the tree and never changes it.
 * @throws ValidationError from a lookup that reaches a node that does not decode
 */
export function treeFromString(encoded: string): RadixNode {
  return new LazyRadixNode(encoded, 0, encoded.length);
}

/**
 * A radix tree node whose entries are decoded from its span of the encoded tree at the first read
 * (see {@link treeFromString}). Until minisearch asks for a child (`get` — a lookup, a fuzzy
 * match or a prefix walk descending into it — or an iteration over values), its entry holds the
 * index of the child's span instead of the child: a fuzzy lookup reads the edges of every node it
 * walks but descends into few of them, so most children are never made.
 */
class LazyRadixNode extends Map<string, RadixNode | true> {
  private encoded: string | undefined;
  /** Start and end of each child's span, by the index its entry holds until the child is made. */
  private spans: number[] | undefined;
  /** The encoded tree, kept while children remain to be made. */
  private source: string | undefined;

  constructor(
    encoded: string,
    private readonly start: number,
    private readonly end: number,
  ) {
    super();
    this.encoded = encoded;
  }

  private fill(): void {
    const encoded = this.encoded;
    if (encoded === undefined) return;
    this.encoded = undefined;
    let at = this.start;
    const length = (): number => {
      const colon = encoded.indexOf(':', at);
      if (colon < 0 || colon >= this.end || colon === at || colon - at > 8)
        throw new ValidationError('the term dictionary of the chunk index does not parse');
      const value = Number.parseInt(encoded.slice(at, colon), 36);
      at = colon + 1;
      if (!(value >= 0 && at + value <= this.end))
        throw new ValidationError('the term dictionary of the chunk index does not parse');
      return value;
    };
    const spans: number[] = [];
    while (at < this.end) {
      const edgeLength = length();
      const edge = encoded.slice(at, at + edgeLength);
      at += edgeLength;
      if (edge === '') {
        super.set(edge, true);
        continue;
      }
      const childLength = length();
      super.set(edge, (spans.length >> 1) as unknown as RadixNode);
      spans.push(at, at + childLength);
      at += childLength;
    }
    if (spans.length > 0) {
      this.spans = spans;
      this.source = encoded;
    }
  }

  /** The child of an entry, made from its span at the first ask. */
  private child(key: string, value: RadixNode | true | number | undefined): RadixNode | true | undefined {
    if (typeof value !== 'number') return value;
    const spans = this.spans as number[];
    const node = new LazyRadixNode(
      this.source as string,
      spans[2 * value] as number,
      spans[2 * value + 1] as number,
    );
    super.set(key, node);
    return node;
  }

  /** Makes every child (before an iteration that hands out values). */
  private materialize(): void {
    this.fill();
    if (this.spans === undefined) return;
    for (const [key, value] of super.entries()) this.child(key, value);
    this.spans = undefined;
    this.source = undefined;
  }

  override get(key: string): RadixNode | true | undefined {
    this.fill();
    return this.child(key, super.get(key));
  }

  override has(key: string): boolean {
    this.fill();
    return super.has(key);
  }

  override get size(): number {
    this.fill();
    return super.size;
  }

  override keys(): MapIterator<string> {
    this.fill();
    return super.keys();
  }

  override values(): MapIterator<RadixNode | true> {
    this.materialize();
    return super.values();
  }

  override entries(): MapIterator<[string, RadixNode | true]> {
    this.materialize();
    return super.entries();
  }

  override [Symbol.iterator](): MapIterator<[string, RadixNode | true]> {
    this.materialize();
    return super[Symbol.iterator]();
  }

  override forEach(
    callback: (value: RadixNode | true, key: string, map: Map<string, RadixNode | true>) => void,
    thisArg?: unknown,
  ): void {
    this.materialize();
    super.forEach(callback, thisArg);
  }

  override set(key: string, value: RadixNode | true): this {
    this.materialize();
    return super.set(key, value);
  }

  override delete(key: string): boolean {
    this.materialize();
    return super.delete(key);
  }

  override clear(): void {
    this.encoded = undefined;
    this.spans = undefined;
    this.source = undefined;
    super.clear();
  }
}
