import { parseArgs } from 'node:util';
import { NotFoundError } from '../shared/errors.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import type { Chunk, Document, Message } from '../shared/resources/schemas.js';
import { parentOf, parseUrn } from '../shared/urn.js';
import { answerForTerminal } from './answer.js';
import { UsageError } from './errors.js';
import type { CliSettings } from './settings.js';
import { readOnlyResources, subtreeOf } from './subtree.js';
import { causalOrder, renderTree, statusLines } from './tree.js';

/**
 * `cld show <urn>`: a chunk (`doc.Chunk`) as its source file, position and heading, then its
 * text; anything else as the tree of what is stored under it (a document lists its chunks), then,
 * for a conversation or message, the answers in it, oldest first.
 * @throws UsageError without exactly one URN; InvalidUrnError (exit code 2); NotFoundError when
 *   nothing is stored there (exit code 3, cli/errors.ts)
 */
export async function showCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new UsageError('show needs exactly one URN');
  const urn = positionals[0] as string;
  const type = parseUrn(urn).elements.at(-1)?.type;
  // Read only: the stored resources, not the runtime (no bus, handlers or search index).
  const resources = readOnlyResources(dataDir);
  if (type === 'doc.Chunk') {
    const chunk = await resources.find(SYSTEM_ACTOR, 'doc.Chunk', urn);
    if (!chunk) throw new NotFoundError(`nothing stored at ${urn}`);
    const document = await resources.find(SYSTEM_ACTOR, 'doc.Document', parentOf(urn) as string);
    console.log(chunkView(chunk, document));
    return 0;
  }
  const stored = await subtreeOf(resources, urn);
  if (stored.length === 0) throw new NotFoundError(`nothing stored at ${urn}`);
  console.log(renderTree(stored, urn).join('\n'));
  if (parseUrn(urn).elements.length === 1 && stored[0]?.meta.type === 'common.Conversation')
    console.log(statusLines(stored, urn, settings.limits.stallAfterMs).join('\n'));
  const answers = causalOrder(stored).filter(
    (r): r is Message => r.meta.type === 'common.Message' && (r as Message).inReplyTo !== undefined,
  );
  for (const answer of answers) console.log(`\n${answerForTerminal(answer)}`);
  return 0;
}

/** A chunk as a reader wants it: where it comes from, then its text. */
export function chunkView(chunk: Chunk, document: Document | undefined): string {
  const source = document
    ? `${document.path} (chunk ${chunk.index + 1} of ${document.chunks})`
    : `chunk ${chunk.index + 1} of a document that is not stored`;
  return [
    `source: ${source}`,
    ...(chunk.heading ? [`heading: ${chunk.heading}`] : []),
    `urn: ${chunk.meta.id}`,
    '',
    chunk.text.trimEnd(),
  ].join('\n');
}
