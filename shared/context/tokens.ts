import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';

/**
 * Token counting with a maintained BPE tokenizer (js-tiktoken, `cl100k_base` ranks shipped in
 * the package: no download at run time). Bedrock models use their own tokenizers; cl100k is a
 * close, model-neutral estimate used for budgets, not for billing.
 */
let encoder: Tiktoken | undefined;

/** Number of tokens in `text` (0 for the empty string). */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  encoder ??= new Tiktoken(cl100k);
  return encoder.encode(text).length;
}
