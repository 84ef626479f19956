import { sourcesOf, withSourceLines } from '../shared/domain/sources.js';
import type { Message } from '../shared/resources/schemas.js';

/**
 * An answer as the CLI prints it: its content, the "Sources:" block listing each source as
 * `- <label> (<urn>)` (`- aws-ssm README › Lookups (cld:doc.Document.…/doc.Chunk.…)`): the label
 * to read, the URN to open with `cld show`; a source known only by its URN is listed as `- <urn>`.
 */
export function answerForTerminal(answer: Pick<Message, 'content' | 'citations' | 'sources'>): string {
  return withSourceLines(answer.content, sourcesOf(answer), (s) =>
    s.label === s.urn ? s.urn : `${s.label} (${s.urn})`,
  );
}
