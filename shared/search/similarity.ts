import { LruCache } from '../cache/lru.js';
import type { Embedder } from '../llm/port.js';
import { toDescription } from '../resources/meta.js';
import type { Assistant, Election, ResourceMeta } from '../resources/schemas.js';

/**
 * Similarity for assistant election (seed roadmap-v2 "Assistant Assignment"): cosine
 * similarity between the embedding of a task's `toDescription()` and each assistant's.
 */

const STOPWORDS = new Set(
  `a an and are as at be by can do does for from how i if in into is it its of on or that the this to was what
  when where which who why will with you your should must each one all any not no use used using only`.split(
    /\s+/,
  ),
);

/** Content words of a text: lowercase alphanumeric runs, stopwords removed, plural `s` dropped. */
export function contentWords(text: string): string[] {
  const words = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  return words
    .filter((word) => word.length > 1 && !STOPWORDS.has(word))
    .map((word) =>
      word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word,
    );
}

/**
 * Offline embedder: feature-hashed, log-scaled term frequencies of content words, L2-normalised
 * (`dimensions` floats). Deterministic, no network; lexical, not semantic: it is the offline
 * stand-in for a Bedrock embedding model behind the same port.
 */
export class HashingEmbedder implements Embedder {
  readonly name = 'offline-hashing';

  /** Vectors of recently embedded texts (the catalog's assistants recur on every election). */
  private readonly memo = new LruCache<string, number[]>(1_000);

  constructor(private readonly dimensions = 1024) {}

  /** Embeds each text; a text embedded recently gets its (frozen, shared) vector again. */
  async embed(texts: readonly string[]): Promise<number[][]> {
    return texts.map((text) => {
      let vector = this.memo.get(text);
      if (!vector) {
        vector = Object.freeze(this.embedOne(text)) as number[];
        this.memo.set(text, vector);
      }
      return vector;
    });
  }

  private embedOne(text: string): number[] {
    const counts = new Map<number, number>();
    for (const word of contentWords(text)) {
      const bucket = fnv1a(word) % this.dimensions;
      counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
    }
    const vector = new Array<number>(this.dimensions).fill(0);
    for (const [bucket, count] of counts) vector[bucket] = 1 + Math.log(count);
    const norm = Math.hypot(...vector);
    return norm === 0 ? vector : vector.map((value) => value / norm);
  }
}

/** Cosine similarity of two equal-length vectors, in [-1, 1] (0 when either is zero). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/**
 * Elects the assistant whose description best matches the task's, with the runner-up.
 * Scores are cosine similarities rounded to 4 decimals; ties go to the assistant first by name.
 * @throws Error when there is no assistant to elect
 */
export async function electAssistant(
  embedder: Embedder,
  task: Pick<ResourceMeta, 'purpose' | 'instructions' | 'applicability' | 'evaluation'>,
  assistants: readonly Assistant[],
): Promise<Election> {
  if (assistants.length === 0) throw new Error('no assistants to elect from: the catalog is empty');
  const sorted = [...assistants].sort((a, b) => a.meta.name.localeCompare(b.meta.name));
  const vectors = await embedder.embed([toDescription(task), ...sorted.map((a) => toDescription(a.meta))]);
  const [taskVector, ...assistantVectors] = vectors as [number[], ...number[][]];
  const scores = cosines(taskVector, assistantVectors);
  const ranked = sorted
    .map((assistant, i) => ({
      assistant: assistant.meta.id,
      name: assistant.meta.name,
      score: Math.round((scores[i] as number) * 10_000) / 10_000,
    }))
    .sort((a, b) => b.score - a.score);
  const [best, runnerUp] = ranked as [(typeof ranked)[number], ...(typeof ranked)[number][]];
  return { ...best, ...(runnerUp ? { runnerUp } : {}) };
}

/** Squared norms of recent vectors (the catalog's, which the embedder hands out again, frozen). */
const squaredNorms = new WeakMap<readonly number[], number>();

function squaredNorm(vector: readonly number[]): number {
  let norm = squaredNorms.get(vector);
  if (norm === undefined) {
    norm = 0;
    for (let i = 0; i < vector.length; i++) norm += (vector[i] as number) * (vector[i] as number);
    if (Object.isFrozen(vector)) squaredNorms.set(vector, norm);
  }
  return norm;
}

/**
 * {@link cosine} of `query` with each candidate, equal to it bit for bit for finite vectors: the sums skip only the
 * query's zero entries (adding a zero product leaves a float sum as it is), so a sparse query (a
 * task's few words) costs its non-zero entries per candidate, and a frozen candidate's norm is
 * computed once.
 */
function cosines(query: readonly number[], candidates: readonly (readonly number[])[]): number[] {
  const nonZero: number[] = [];
  let nq = 0;
  for (let i = 0; i < query.length; i++) {
    const x = query[i] as number;
    if (x === 0) continue;
    nonZero.push(i);
    nq += x * x;
  }
  return candidates.map((candidate) => {
    if (candidate.length !== query.length) return cosine(query, candidate);
    let dot = 0;
    for (const i of nonZero) dot += (query[i] as number) * (candidate[i] as number);
    const nc = squaredNorm(candidate);
    return nq === 0 || nc === 0 ? 0 : dot / Math.sqrt(nq * nc);
  });
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
