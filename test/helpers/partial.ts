/**
 * The question of issue 21's "Done when": three parts over the aws-s3 README, the third of which
 * the corpus cannot answer (nothing in it is about bread). With the offline model, parts 1 and 2
 * pass the supervisor; part 3 cites nothing on every corrective round, so the rounds run out and
 * the answer must keep parts 1–2 and name part 3 (`partial`). Used by the channel, console and CLI
 * tests, which check the answer each shows with {@link partialAnswerProblems}.
 */
export const PARTIAL_QUESTION =
  '1. How do I send S3 object events to EventBridge? 2. How do I grant read access to a bucket? 3. How do I knead sourdough bread dough?';

/** The parts the corpus answers, as their section headings must name them. */
export const ANSWERED_PARTS = [/S3 object events to EventBridge/, /grant read access to a bucket/] as const;

/** The part it cannot answer. */
export const UNANSWERED_PART = /knead sourdough bread dough/;

/**
 * What is wrong with `text` as the partial answer to {@link PARTIAL_QUESTION}: each answered part a
 * `### <part>` section with text under it, in order; then `Not answered:` naming the third part
 * with a reason; the third part never a section of its own. Empty when it is right.
 */
export function partialAnswerProblems(text: string): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  const heading = (pattern: RegExp) => lines.findIndex((l) => l.startsWith('### ') && pattern.test(l));
  const notAnswered = lines.indexOf('Not answered:');
  if (notAnswered === -1) problems.push('no "Not answered:" section');
  let previous = -1;
  for (const part of ANSWERED_PARTS) {
    const at = heading(part);
    if (at === -1) {
      problems.push(`no section for ${part}`);
      continue;
    }
    if (at < previous) problems.push(`the section for ${part} is out of order`);
    previous = at;
    const next = lines.findIndex((l, i) => i > at && (l.startsWith('### ') || l === 'Not answered:'));
    const body = lines.slice(at + 1, next === -1 ? undefined : next).join('\n');
    if (body.trim().length < 20) problems.push(`the section for ${part} has no answer under it`);
    if (notAnswered !== -1 && at > notAnswered)
      problems.push(`the section for ${part} follows "Not answered:"`);
  }
  if (heading(UNANSWERED_PART) !== -1) problems.push('the unanswered part has a section');
  const named = lines[notAnswered + 1] ?? '';
  if (notAnswered !== -1 && !(UNANSWERED_PART.test(named) && / — \S/.test(named)))
    problems.push(`"Not answered:" does not name the third part with a reason: ${named}`);
  return problems;
}
