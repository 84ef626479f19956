import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Tiktoken, type TiktokenBPE } from 'js-tiktoken/lite';
import * as z from 'zod';
import { LruCache } from '../cache/lru.js';
import { GenerationalMemo } from '../cache/memo.js';
import { ConfigError } from '../errors.js';

/**
 * Token counting with a maintained BPE tokenizer (js-tiktoken's `Tiktoken` over the
 * `cl100k_base` ranks). Bedrock models use their own tokenizers; cl100k is a close,
 * model-neutral estimate used for budgets, not for billing.
 *
 * The ranks (≈1 MB) are data, not code, and are loaded once, at the first {@link countTokens},
 * from {@link tokenizerRanksFile}:
 * - the JSON file named by `CLD_TOKENIZER_RANKS`, when set;
 * - else, in a function bundle, the asset's `tokenizer/cl100k_base.json` next to `index.mjs`
 *   (written by the bundling hook, infra/lib/bundling.ts), so the ranks are neither in the bundle
 *   nor parsed at import;
 * - else (dev, tests, the CLI) js-tiktoken's own `js-tiktoken/ranks/cl100k_base` module, required
 *   at run time. That module is left out of every bundle (an opaque `createRequire` call, and
 *   external in the bundle options), and a bundle never takes this branch.
 */

/** Environment variable naming the ranks file (JSON of js-tiktoken's `TiktokenBPE`). */
export const TOKENIZER_RANKS_ENV = 'CLD_TOKENIZER_RANKS';

/** The module the ranks come from outside a bundle when {@link TOKENIZER_RANKS_ENV} is not set. */
export const RANKS_MODULE = 'js-tiktoken/ranks/cl100k_base';

/** Where a function's asset holds the ranks, relative to its `index.mjs`. */
export const BUNDLED_RANKS_FILE = 'tokenizer/cl100k_base.json';

/**
 * The ranks file to read: `env.CLD_TOKENIZER_RANKS` when set; in a function bundle (where
 * esbuild's `define` sets `process.env.CLD_BUNDLE_FUNCTION`, shared/runtime/function-uses.ts) the
 * asset's {@link BUNDLED_RANKS_FILE} beside the bundle; otherwise undefined (use the module).
 */
export function tokenizerRanksFile(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const configured = env[TOKENIZER_RANKS_ENV];
  if (configured !== undefined && configured !== '') return configured;
  if (process.env.CLD_BUNDLE_FUNCTION !== undefined)
    return fileURLToPath(new URL(`./${BUNDLED_RANKS_FILE}`, import.meta.url));
  return undefined;
}

/**
 * Shape of a ranks file: js-tiktoken's `TiktokenBPE` (the regex of pre-tokenisation, special
 * tokens by id, and the ranks as js-tiktoken's compact base64 text).
 */
export const TiktokenRanksSchema = z.object({
  pat_str: z.string().min(1),
  special_tokens: z.record(z.string(), z.number().int().nonnegative()),
  bpe_ranks: z.string().min(1),
});

/**
 * The `cl100k_base` ranks: from {@link tokenizerRanksFile} when there is one (read synchronously
 * and validated), else from {@link RANKS_MODULE}.
 * @param env environment to read `CLD_TOKENIZER_RANKS` from (default `process.env`)
 * @throws ConfigError naming `CLD_TOKENIZER_RANKS` when the file cannot be read, is not JSON or
 *   is not a ranks object; ConfigError when there is no file and the module cannot be loaded
 */
export function loadTokenizerRanks(
  env: Readonly<Record<string, string | undefined>> = process.env,
): TiktokenBPE {
  const file = tokenizerRanksFile(env);
  if (file === undefined) return ranksFromModule();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${TOKENIZER_RANKS_ENV}: cannot read ${file}`, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${TOKENIZER_RANKS_ENV}: ${file} is not JSON`, { cause: error });
  }
  const parsed = TiktokenRanksSchema.safeParse(json);
  if (!parsed.success)
    throw new ConfigError(
      `${TOKENIZER_RANKS_ENV}: ${file} is not a tokenizer ranks file: ${z.prettifyError(parsed.error)}`,
    );
  return parsed.data;
}

function ranksFromModule(): TiktokenBPE {
  // `requireRanks`, not `require`: esbuild leaves the call alone, so the ranks never enter a bundle.
  const requireRanks = createRequire(import.meta.url);
  let loaded: unknown;
  try {
    loaded = requireRanks(RANKS_MODULE);
  } catch (error) {
    throw new ConfigError(`${TOKENIZER_RANKS_ENV} is not set and ${RANKS_MODULE} cannot be loaded`, {
      cause: error,
    });
  }
  const parsed = TiktokenRanksSchema.safeParse(loaded);
  if (!parsed.success) throw new ConfigError(`${RANKS_MODULE} does not export tokenizer ranks`);
  return parsed.data;
}

let encoder: Tiktoken | undefined;

/** Texts shorter than this are tokenized directly (hashing them would cost about as much). */
const MEMO_MIN_CHARS = 64;

/**
 * Token counts of the longer texts counted recently, by SHA-1 of the text (per process: a Lambda
 * container keeps it across invocations). Bounded: 20,000 counts of about 100 bytes each.
 */
let counted: LruCache<string, number> | undefined;

/** {@link counted}, made at its first use: its arrays are allocated up front, not at import. */
function countedMemo(): LruCache<string, number> {
  counted ??= new LruCache<string, number>(20_000);
  return counted;
}

/** Texts up to this long are remembered by the text itself (no hashing); longer ones by SHA-1. */
const MEMO_BY_TEXT_CHARS = 2_048;

/**
 * Token counts of recent texts of {@link MEMO_MIN_CHARS} to {@link MEMO_BY_TEXT_CHARS}
 * characters, keyed by the text (a `Map` lookup: cheaper than hashing it with SHA-1). At most
 * 2 × 4,000 texts, i.e. 32 MB in the worst case.
 */
const countedTexts = new GenerationalMemo<string, number>(4_000);

/** Hits and misses of the token-count memo, both kinds (benchmarks, tests). */
export const tokenCountStats: Readonly<{ hits: number; misses: number; evictions: number }> = {
  get hits() {
    return (counted?.stats.hits ?? 0) + countedTexts.stats.hits;
  },
  get misses() {
    return (counted?.stats.misses ?? 0) + countedTexts.stats.misses;
  },
  get evictions() {
    return (counted?.stats.evictions ?? 0) + countedTexts.stats.evictions;
  },
};

/**
 * Longest run of non-space (or of space) characters counted exactly. js-tiktoken's byte-pair merge
 * is worse than quadratic in the length of a pre-tokenizer piece (a 16,000-letter word took
 * 100 s; 1 MB of CJK text without spaces a minute even in 16-character slices), and its
 * pre-tokenizer backtracks over long whitespace runs. A longer run — a base64 blob, a minified
 * line, a long URL, unspaced CJK text — is estimated instead, at one token per
 * {@link LONG_RUN_BYTES_PER_TOKEN} UTF-8 bytes (cl100k gives about one token per CJK character,
 * i.e. per 3 bytes, and 3 to 4 characters of ASCII code or base64 per token; repeated letters are
 * overestimated). Words in prose are far shorter and are counted exactly.
 */
export const MAX_TOKEN_RUN = 64;
/** UTF-8 bytes per token assumed for a run longer than {@link MAX_TOKEN_RUN} characters. */
export const LONG_RUN_BYTES_PER_TOKEN = 3;

const LONG_RUN = new RegExp(`\\S{${MAX_TOKEN_RUN + 1},}|\\s{${MAX_TOKEN_RUN + 1},}`, 'g');

/**
 * Number of `cl100k_base` tokens in `text` (0 for the empty string), in time linear in its
 * length: exact for text whose runs of non-space (and of space) characters are at most
 * {@link MAX_TOKEN_RUN} long, an estimate for longer runs (see there). Special-token text such as
 * `<|endoftext|>` is counted as ordinary text. The first non-empty call loads the ranks
 * ({@link loadTokenizerRanks} over `process.env`) and builds the encoder. A text of 64
 * characters or more is counted once per process while it stays among the most recently counted
 * (memoised by the text itself up to 2,048 characters, by its SHA-1 beyond): a window counts the same system prompt, tool specs and
 * ancestors on every turn of every task.
 * @throws ConfigError when the ranks cannot be loaded (see {@link loadTokenizerRanks})
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  encoder ??= new Tiktoken(loadTokenizerRanks());
  if (text.length < MEMO_MIN_CHARS) return countLinear(encoder, text);
  if (text.length <= MEMO_BY_TEXT_CHARS) {
    const known = countedTexts.get(text);
    if (known !== undefined) return known;
    const tokens = countLinear(encoder, text);
    countedTexts.set(text, tokens);
    return tokens;
  }
  const key = createHash('sha1').update(text).digest('base64');
  const known = countedMemo().get(key);
  if (known !== undefined) return known;
  const tokens = countLinear(encoder, text);
  countedMemo().set(key, tokens);
  return tokens;
}

/** {@link countTokens} without the memo: exact pieces between the long runs, long runs estimated. */
function countLinear(encoder: Tiktoken, text: string): number {
  const encode = (piece: string) => (piece.length === 0 ? 0 : encoder.encode(piece, [], []).length);
  let total = 0;
  let last = 0;
  for (const match of text.matchAll(LONG_RUN)) {
    total += encode(text.slice(last, match.index));
    total += Math.ceil(Buffer.byteLength(match[0], 'utf8') / LONG_RUN_BYTES_PER_TOKEN);
    last = match.index + match[0].length;
  }
  return total + encode(text.slice(last));
}
