import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tiktoken } from 'js-tiktoken/lite';
import { afterAll, describe, expect, it } from 'vitest';
import { TOKENIZER_RANKS_FILE, tokenizerRanksJson, writeTokenizerRanks } from '../../infra/lib/bundling.js';
import {
  countTokens,
  loadTokenizerRanks,
  RANKS_MODULE,
  TOKENIZER_RANKS_ENV,
  tokenizerRanksFile,
} from '../../shared/context/tokens.js';
import { ConfigError } from '../../shared/errors.js';

/**
 * Token counting with the ranks as a data file (what a function bundle reads) or as js-tiktoken's
 * module (dev and tests): same ranks, same counts, and a clear ConfigError for a bad file.
 */

const dir = mkdtempSync(join(tmpdir(), 'cld-tokens-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const moduleRanks = createRequire(import.meta.url)(RANKS_MODULE) as unknown;
const SAMPLES = [
  'What does an S3 bucket policy control?',
  'Ünïcödé, emoji 🚀 and code: `const x = await import("./y.js");`\n\n\tindented',
  'bucket '.repeat(300),
];

describe('tokenizer ranks', () => {
  it('writes the asset file as JSON of the module the package ships (what the bundling hook writes)', () => {
    const file = writeTokenizerRanks(dir);

    expect(file).toBe(join(dir, TOKENIZER_RANKS_FILE));
    expect(readFileSync(file, 'utf8')).toBe(tokenizerRanksJson());
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(moduleRanks);
  });

  it('loads the file named by CLD_TOKENIZER_RANKS, and counts as the module does', () => {
    const file = writeTokenizerRanks(join(dir, 'asset'));

    const fromFile = new Tiktoken(loadTokenizerRanks({ [TOKENIZER_RANKS_ENV]: file }));
    const fromModule = new Tiktoken(loadTokenizerRanks({}));

    for (const text of SAMPLES) {
      const tokens = fromFile.encode(text);
      expect(tokens.length).toBeGreaterThan(0);
      expect(tokens).toEqual(fromModule.encode(text));
    }
    expect(fromFile.encode(SAMPLES[0] as string).length).toBe(countTokens(SAMPLES[0] as string));
  });

  it('uses the module outside a bundle when the variable is unset or empty', () => {
    expect(tokenizerRanksFile({})).toBeUndefined();
    expect(tokenizerRanksFile({ [TOKENIZER_RANKS_ENV]: '' })).toBeUndefined();
    expect(loadTokenizerRanks({})).toEqual(moduleRanks);
  });

  it.each([
    ['a missing file', () => join(dir, 'missing.json'), /cannot read/],
    [
      'a file that is not JSON',
      () => {
        const file = join(dir, 'broken.json');
        writeFileSync(file, '{"pat_str": ');
        return file;
      },
      /is not JSON/,
    ],
    [
      'JSON that is not ranks',
      () => {
        const file = join(dir, 'shape.json');
        writeFileSync(file, JSON.stringify({ pat_str: 'x', special_tokens: { a: -1 } }));
        return file;
      },
      /is not a tokenizer ranks file/,
    ],
  ])('rejects %s with a ConfigError naming CLD_TOKENIZER_RANKS', (_case, makeFile, message) => {
    const file = makeFile();

    const load = () => loadTokenizerRanks({ [TOKENIZER_RANKS_ENV]: file });

    expect(load).toThrow(ConfigError);
    expect(load).toThrow(message);
    expect(load).toThrow(TOKENIZER_RANKS_ENV);
  });

  it('counts no tokens in the empty string', () => {
    expect(countTokens('')).toBe(0);
  });
});
