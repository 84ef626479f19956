import { readFileSync } from 'node:fs';
import { CitationIds, parseRenderedHits, renderToolResult } from '../../shared/context/render-results.js';
import { extractiveAnswer } from '../../shared/llm/extract.js';
import { readPlan } from '../../shared/llm/offline-read.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';

const index = MiniSearchIndex.load(
  readFileSync('/work/main/.cld-eval/corpus-a6a749bf8a54/indexes/chunks.1.json', 'utf8'),
);
const q = process.argv[2] as string;
const raw = await index.search(q, { limit: 8 });
const ids = new CitationIds();
const rendered = renderToolResult(JSON.stringify({ results: raw }), ids, q);
if (process.env.SHOW) console.log(rendered);
const hits = parseRenderedHits(rendered);
const plan = readPlan(q, hits);
console.log('plan', plan);
const byId = new Map(raw.map((h) => [`[${String(ids.idOf(h.urn)).replace(/[[\]]/g, '')}]`, h]));
const composed = hits.map((h) =>
  plan.ids.includes(h.urn) ? { ...h, text: byId.get(h.urn)?.text ?? '', rank: plan.rank } : h,
);
console.log(extractiveAnswer(q, composed));
if (process.env.READS)
  for (const id of plan.ids) console.log('=== READ', id, byId.get(id)?.title, '\n', byId.get(id)?.text);
