import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { termsOf } from '../../shared/search/terms.js';

/**
 * The evaluation set of issue 11 (test/eval/questions.json): questions over the aws-cdk-lib
 * documentation, each part with the module(s) an answer must find and cite and the term it must
 * contain. Written from the module READMEs before any tuning; `heldOut` questions were kept out
 * of all tuning and are reported apart.
 */

/** One part of a question: a single question with what its answer must find. */
export const EvalPartSchema = z.strictObject({
  /** The question as a user types it. */
  text: z.string().min(1),
  /** aws-cdk-lib module folders (`aws-s3`); a chunk of any of them counts. */
  modules: z.array(z.string().regex(/^[a-z0-9-]+$/)).min(1),
  /** What a found chunk and the answer text must contain (case-insensitive). */
  term: z.string().min(1),
});
export type EvalPart = z.infer<typeof EvalPartSchema>;

/** A question: one part, or several asked in one message (numbered, with back-references). */
export const EvalQuestionSchema = z.strictObject({
  id: z.string().regex(/^[a-z][0-9]{2}$/),
  heldOut: z.boolean().optional(),
  parts: z.array(EvalPartSchema).min(1),
});
export type EvalQuestion = z.infer<typeof EvalQuestionSchema>;

export const EvalSetSchema = z.strictObject({
  about: z.string(),
  questions: z.array(EvalQuestionSchema).min(1),
});

/** The path of the evaluation set. */
export const EVAL_SET_PATH = new URL('./questions.json', import.meta.url);

/**
 * Loads and validates the evaluation set.
 * @throws ZodError when the file does not match {@link EvalSetSchema}; Error for duplicate ids
 */
export function loadEvalSet(path: URL | string = EVAL_SET_PATH): EvalQuestion[] {
  const set = EvalSetSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
  const ids = new Set<string>();
  for (const question of set.questions) {
    if (ids.has(question.id)) throw new Error(`duplicate question id ${question.id}`);
    ids.add(question.id);
  }
  return set.questions;
}

/** The message a user sends for a question: the text, or its parts numbered `1. … 2. …`. */
export function messageOf(question: EvalQuestion): string {
  if (question.parts.length === 1) return (question.parts[0] as EvalPart).text;
  return question.parts.map((part, i) => `${i + 1}. ${part.text}`).join(' ');
}

/** The aws-cdk-lib module of a document path (`node_modules/aws-cdk-lib/aws-s3/README.md` → `aws-s3`). */
export function moduleOfPath(path: string): string | undefined {
  const match = /(?:^|\/)aws-cdk-lib\/([^/]+)\//.exec(path);
  return match?.[1];
}

/** True when `text` contains `term`, case-insensitively. */
export function containsTerm(text: string, term: string): boolean {
  return text.toLowerCase().includes(term.toLowerCase());
}

/**
 * Rank (1-based) of the first hit that is a chunk of one of `part.modules` containing
 * `part.term`, or undefined when none of `hits` is.
 */
export function firstRelevantRank(
  hits: readonly { module: string | undefined; text: string }[],
  part: EvalPart,
): number | undefined {
  const index = hits.findIndex(
    (hit) =>
      hit.module !== undefined && part.modules.includes(hit.module) && containsTerm(hit.text, part.term),
  );
  return index === -1 ? undefined : index + 1;
}

/** True when the term occurs in the module READMEs only inside fenced code blocks. */
export function isCodeOnly(readmes: readonly string[], term: string): boolean {
  const anywhere = readmes.some((text) => containsTerm(text, term));
  const prose = readmes.some((text) => containsTerm(text.replace(/```[\s\S]*?```/g, ''), term));
  return anywhere && !prose;
}

/**
 * The sections of a final answer, one per part: a multi-part answer is split at its `### `
 * headings outside code fences (shared/domain/common.ts combineOutputs writes one per part, in
 * order); a single question's section is the whole answer.
 */
export function sectionsOf(answer: string, parts: number): string[] {
  if (parts === 1) return [answer.trim()];
  const sections: string[][] = [];
  let fence: string | undefined;
  for (const line of answer.split('\n')) {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || (marker[0] === fence[0] && marker.length >= fence.length)))
      fence = fence ? undefined : marker;
    if (!fence && !marker && /^###\s/.test(line)) sections.push([]);
    else sections.at(-1)?.push(line);
  }
  return sections.map((lines) => lines.join('\n').trim());
}

/** The first paragraph or fenced code block of a section (blank lines part paragraphs). */
export function firstBlock(section: string): string {
  const text = section.trim();
  const fence = /^(`{3,}|~{3,})/.exec(text)?.[1];
  if (fence) {
    const end = text.indexOf(`\n${fence}`, fence.length);
    return end === -1 ? text : text.slice(0, end + fence.length + 1);
  }
  const blank = text.search(/\n\s*\n|\n(?=`{3,}|~{3,})/);
  return blank === -1 ? text : text.slice(0, blank);
}

/** Generic words of a question that say how it is asked, not what it is about. */
const ASKING = new Set(termsOf('how do I can create add give define set configure enable turn'));

/**
 * True when `block` holds a content term of `question`: a term of shared/search/terms.ts (stems
 * and identifier parts, stopwords dropped) other than the asking verbs of {@link ASKING}.
 */
export function holdsQuestionTerm(block: string, question: string): boolean {
  const words = new Set(termsOf(block));
  return termsOf(question).some((term) => !ASKING.has(term) && words.has(term));
}
