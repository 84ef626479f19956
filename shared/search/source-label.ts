/**
 * How a citation reads to a person (issue 21 item 4): the document and heading of a chunk,
 * `aws-ssm README › Lookups` — the module folder and file name of the document's path (without a
 * Markdown or text extension) and the last element of the chunk's heading trail (ingest joins a
 * trail with ` > `; ` › ` and ` / ` are read as separators too, only between spaces, so a heading
 * such as `Read/Write access` or `Map<K, V>` stays whole). Undefined when there is neither a
 * path nor a heading.
 * @param hit `source`: the document's path as ingested (`node_modules/aws-cdk-lib/aws-ssm/README.md`,
 *   a search hit's `source`, a Document's `path`); `title`: the chunk's heading trail
 *   (`AWS Systems Manager Construct Library > Lookups`, a search hit's `title`, a Chunk's `heading`)
 */
export function sourceLabel(hit: { source?: string; title?: string } | undefined): string | undefined {
  if (!hit) return undefined;
  const path = hit.source?.split('/').filter(Boolean) ?? [];
  const file = path.at(-1)?.replace(/\.(md|markdown|txt)$/i, '');
  const document = path.length ? [path.at(-2), file].filter(Boolean).join(' ') : undefined;
  const heading = hit.title
    ?.split(/\s+[›>/]\s+/)
    .filter(Boolean)
    .at(-1)
    ?.replace(/^#+\s*/, '');
  const label = [document, heading].filter(Boolean).join(' › ');
  return label || undefined;
}
