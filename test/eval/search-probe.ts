/**
 * The first search alone, in seconds: re-runs the search queries a previous `npm run eval` recorded
 * (its `--json` output: each part's `query`, what the offline model sent, back-reference included)
 * against a stored chunk index, and reports where the part's fact chunk ranks — the same hit@k as
 * the eval's (test/eval/eval-set.ts `firstRelevantRank`: a chunk of an expected module holding the
 * term), without asking, composing or judging. For tuning shared/search/: a ranking change is seen
 * in ≈ 2 s instead of a whole eval run; the eval still decides (answers depend on more than rank).
 *
 * Held-out parts are never searched or printed (the rule of issue 11: they are not used for
 * tuning); the queries are those of the run that wrote the json, so a change to how the offline
 * model forms queries needs a new eval run first.
 *
 * Usage: `npx tsx test/eval/search-probe.ts --json /tmp/run.json --index <data dir>/corpus-…/indexes/chunks.1.json
 * [--only m01.2,p10.3] [--all] [--show 6]`: by default only the parts whose fact is not in the top 3
 * are listed, with the rank of the fact chunk in the top 200; `--all` lists every part; `--show n`
 * prints each listed part's first n hits (score, document, heading trail; `*` marks a fact chunk).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { SearchHit } from '../../shared/search/port.js';
import { containsTerm, type EvalPart, firstRelevantRank, loadEvalSet, moduleOfPath } from './eval-set.js';

/** What this reads of a part of the eval's `--json` output (test/eval/run.ts `PartResult`). */
const RecordedPartSchema = z.object({
  id: z.string(),
  heldOut: z.boolean(),
  query: z.string().optional(),
});

/** How deep the fact chunk is looked for when it is not in the top 8. */
const DEPTH = 200;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'string' },
      index: { type: 'string' },
      only: { type: 'string' },
      all: { type: 'boolean', default: false },
      show: { type: 'string', default: '0' },
    },
  });
  if (!values.json || !values.index)
    throw new Error('usage: search-probe.ts --json <eval json> --index <chunks.N.json>');
  const recorded = z.array(RecordedPartSchema).parse(JSON.parse(readFileSync(values.json, 'utf8')));
  const index = MiniSearchIndex.load(readFileSync(values.index, 'utf8'));
  const only = values.only ? new Set(values.only.split(',')) : undefined;
  const show = Number(values.show);
  const parts = new Map<string, EvalPart>();
  for (const question of loadEvalSet()) {
    for (const [i, part] of question.parts.entries())
      parts.set(question.parts.length === 1 ? question.id : `${question.id}.${i + 1}`, part);
  }
  const isFact = (hit: SearchHit, part: EvalPart) => firstRelevantRank([asCandidate(hit)], part) === 1;
  const hits = { 1: 0, 3: 0, 8: 0 };
  let count = 0;
  for (const run of recorded) {
    const part = parts.get(run.id);
    if (run.heldOut || run.query === undefined || !part || (only && !only.has(run.id))) continue;
    const found = await index.search(run.query, { limit: DEPTH });
    const rank = firstRelevantRank(found.map(asCandidate), part);
    count += 1;
    for (const k of [1, 3, 8] as const) if (rank !== undefined && rank <= k) hits[k] += 1;
    if (!values.all && rank !== undefined && rank <= 3) continue;
    console.log(`${run.id}  fact at ${rank ?? `> ${DEPTH}`}  term ${part.term}  | ${run.query}`);
    for (const [i, hit] of found.slice(0, show).entries()) {
      const trail = hit.title?.split(' > ').slice(1).join(' > ') ?? '';
      const mark = isFact(hit, part) ? '*' : containsTerm(hit.text, part.term) ? '~' : ' ';
      console.log(
        `  ${i + 1}${mark} ${hit.score.toFixed(1)}  ${hit.source ?? hit.urn} › ${trail.slice(0, 80)}`,
      );
    }
  }
  const share = (n: number) => `${n} (${count === 0 ? '–' : Math.round((100 * n) / count)} %)`;
  console.log(
    `\n${count} tuning parts: hit@1 ${share(hits[1])}, hit@3 ${share(hits[3])}, hit@8 ${share(hits[8])}`,
  );
}

/** A hit as `firstRelevantRank` reads it: its module (from the document path) and text. */
function asCandidate(hit: SearchHit): { module: string | undefined; text: string } {
  return { module: hit.source ? moduleOfPath(hit.source) : undefined, text: hit.text };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
