import type { Message, SourceRef, UnansweredPart } from '../resources/schemas.js';
import { combineOutputs } from './common.js';

/**
 * How a task output or a final answer ended (issue 21, "Nothing done is thrown away"):
 * - `failed`: the Message carries an `error` (nothing usable, or a failure of the whole);
 * - `partial`: no `error`, and `unanswered` names at least one part that was not answered, with
 *   why; the content carries every part that was;
 * - `done`: neither.
 * Derived from the stored Message alone, so every view (HTTP, console, Slack, Teams, CLI) agrees.
 */
export type Outcome = 'done' | 'partial' | 'failed';

/** The outcome of a task output or final answer ({@link Outcome}). */
export function outcomeOf(message: Pick<Message, 'error' | 'unanswered'>): Outcome {
  if (message.error) return 'failed';
  return message.unanswered?.length ? 'partial' : 'done';
}

/** One answered part: its title and the output that answered it. */
export interface AnsweredPart {
  title: string;
  output: Message;
}

/** The heading of the section that names the parts not answered. */
export const NOT_ANSWERED_HEADING = 'Not answered:';

/**
 * The "Not answered:" section: one line `- <title> — <reason>` per part, in order.
 * @param parts the parts not answered (at least one)
 */
export function notAnsweredSection(parts: readonly UnansweredPart[]): string {
  return [NOT_ANSWERED_HEADING, ...parts.map((p) => `- ${p.title} — ${p.reason}`)].join('\n');
}

/**
 * Content, citations (and their labelled `sources`) and `unanswered` of an output that keeps what was done: the answered parts
 * combined as {@link combineOutputs} does (one section per part, one merged "Sources:" list), each
 * under its title even when only one was answered, then the {@link notAnsweredSection} of `missed`
 * before the sources. `unanswered` is `missed` followed by what the answered parts themselves left
 * unanswered (a partial child stays partial in its parent); empty when everything was answered, and
 * then the content is exactly {@link combineOutputs}'.
 * @param answered the parts that passed, in the order they were asked
 * @param missed the parts that did not, with why (their section is written here)
 */
export function keepAnswered(
  answered: readonly AnsweredPart[],
  missed: readonly UnansweredPart[],
): { content: string; citations: string[]; sources: SourceRef[]; unanswered: UnansweredPart[] } {
  const combined = combineOutputs(answered);
  const unanswered = [...missed, ...answered.flatMap((p) => p.output.unanswered ?? [])];
  if (missed.length === 0) return { ...combined, unanswered };
  const at = combined.content.search(SOURCES);
  let body = (at === -1 ? combined.content : combined.content.slice(0, at)).trim();
  const sources = at === -1 ? '' : combined.content.slice(at).trim();
  const only = answered[0];
  if (answered.length === 1 && only) body = `### ${only.title}\n${body}`;
  const content = [body, notAnsweredSection(missed), sources].filter(Boolean).join('\n\n');
  return { content, citations: combined.citations, sources: combined.sources, unanswered };
}

/** Where a Message's trailing "Sources:" block starts (as `withoutSources` in common.ts finds it). */
const SOURCES = /\n\s*Sources:\s*\n/;
