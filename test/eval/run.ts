/**
 * `npm run eval`: the evaluation of issue 11. Ingests node_modules/aws-cdk-lib (with ingest's
 * default exclusions) into a cached data directory, asks every question of test/eval/questions.json
 * through the real `ask` path (local runtime, offline model unless CLD_MODEL_ID is set), and
 * reports per question part and in total:
 * - search hit@1/@3/@8: the `search` call the part's first attempt answered from (after a
 *   back-reference's lookup, if any) returned, within its first k
 *   hits, a chunk of an expected module containing the term;
 * - cited: the part's answer cites a chunk of an expected module;
 * - term: the part's answer text contains the term;
 * - corrective rounds asked by the supervisor, and whether the corrected answer has the term;
 * - the same hit@k for a plain BM25 baseline (MiniSearch defaults over the module READMEs split
 *   at headings), side by side;
 * with the held-out questions reported apart. The jsii assembly of the corpus is ingested into the
 * graph too (as `npm start -- ingest` does), and the structural questions of
 * test/eval/structural.json (ids g01…, issue 13) are asked the same way and reported in a table of
 * their own (test/eval/structural.ts), outside the search totals.
 *
 * Per part also (issue 21): the term in the part's own section of the final answer (split at its
 * `### ` headings); "leads": the section's first paragraph or code block holds a content term of the
 * question (and, stricter, the expected term); "lost": the ask got no usable answer. Per question:
 * asks without an answer, and multi-part questions whose every part is right (term in its own
 * section, cites an expected module).
 *
 * With `--tokens` (issue 25 item 1) the questions go through the Bedrock adapter and the real
 * `BedrockRuntimeClient` against a local Converse that bills with prompt caching as Bedrock does
 * (test/helpers/prompt-cache-stub.ts) and answers with the offline model, and a last table gives
 * each question's input, cache-write, cache-read and output tokens and its price at the model
 * (`--model <id>`, default `CLD_MODEL_ID`, else Claude Haiku 4.5's `us.` profile; `--cache
 * auto|off`, default `auto`; per-step models from `CLD_MODELS`, as deployed), by single and
 * multi-part questions; `--json` gives each part the `bill` of its whole question.
 *
 * Options: `--questions <file>` (another set of the same shape instead of test/eval/questions.json,
 * e.g. test/eval/fresh.json; no structural questions then), `--data-dir <dir>` (default `.cld-eval`; the ingested corpus is cached under it, keyed by
 * the search and ingest sources, so a change to them re-ingests), `--only q01,m02`, `--set p,m`
 * (questions whose id starts so; `g` for the structural ones), `--tuning` (leave the held-out
 * questions out, for tuning runs), `--json <file>`, `--verbose` (answers too).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import MiniSearch from 'minisearch';
import { startConversation } from '../../shared/domain/conversation.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import { BedrockChatModel } from '../../shared/llm/bedrock.js';
import { PRICES_AS_OF, priceOf } from '../../shared/llm/pricing.js';
import { stepModelsOf } from '../../shared/llm/steps.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type {
  AnyResource,
  Message,
  Task,
  ToolCallResource,
  Verdict,
} from '../../shared/resources/schemas.js';
import { modelFor } from '../../shared/runtime/adapters/model.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { headingsOf, ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { childUrn, parentOf } from '../../shared/urn.js';
import {
  billOf,
  DEFAULT_BILLED_MODEL,
  startBilledBedrock,
  summarizeBills,
  type TokenBill,
} from '../bench/bill.js';
import {
  containsTerm,
  type EvalPart,
  type EvalQuestion,
  firstBlock,
  firstRelevantRank,
  holdsQuestionTerm,
  isCodeOnly,
  loadEvalSet,
  messageOf,
  moduleOfPath,
  sectionsOf,
} from './eval-set.js';
import { askStructural, loadStructuralSet, scoreStructural, structuralTable } from './structural.js';

const CORPUS = 'node_modules/aws-cdk-lib';
const KS = [1, 3, 8] as const;

/** What was measured for one part of a question. */
interface PartResult {
  id: string;
  heldOut: boolean;
  text: string;
  term: string;
  codeOnly: boolean;
  /** Rank of the first relevant hit of the system's search (1-based), or undefined. */
  rank: number | undefined;
  /** The same for the BM25 baseline. */
  baselineRank: number | undefined;
  cited: boolean;
  termInAnswer: boolean;
  /** Corrective rounds the supervisor asked for on this part's task. */
  corrections: number;
  /** Term in the answer of the first attempt (before any correction). */
  termBeforeCorrection: boolean;
  /** The part's own section of the final answer (the whole answer for a single question). */
  section: string;
  /** The term is in the part's own section of the final answer. */
  termInSection: boolean;
  /** The section's first paragraph or code block holds a content term of the question. */
  leads: boolean;
  /** The section's first paragraph or code block holds the expected term itself. */
  leadsWithTerm: boolean;
  /** The question this part belongs to had no usable answer (missing, failed or empty). */
  lost: boolean;
  /** The question's verdicts (`round n: pass|fail — reason`) and the answer's error, if any. */
  verdicts: string[];
  ms: number;
  answer: string;
  query: string | undefined;
  /** With `--tokens`: what the part's whole question cost (the same on each of its parts). */
  bill?: TokenBill;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'data-dir': { type: 'string', default: '.cld-eval' },
      only: { type: 'string' },
      set: { type: 'string' },
      tuning: { type: 'boolean', default: false },
      json: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      questions: { type: 'string' },
      tokens: { type: 'boolean', default: false },
      model: { type: 'string' },
      cache: { type: 'string' },
    },
  });
  if (!values.tokens && (values.model !== undefined || values.cache !== undefined))
    throw new Error('--model and --cache price the questions: give them with --tokens');
  const cache = values.cache ?? 'auto';
  if (cache !== 'auto' && cache !== 'off')
    throw new Error(`--cache must be auto or off, got ${JSON.stringify(cache)}`);
  const only = values.only ? new Set(values.only.split(',')) : undefined;
  const prefixes = values.set?.split(',');
  const chosen = (q: { id: string; heldOut?: boolean | undefined }) =>
    (!only || only.has(q.id)) &&
    (!prefixes || prefixes.some((prefix) => q.id.startsWith(prefix))) &&
    !(values.tuning && q.heldOut);
  const questions = loadEvalSet(values.questions ? resolve(values.questions) : undefined).filter(chosen);
  // Another question file replaces the search questions only; the structural ones are this set's.
  const structural = values.questions ? [] : loadStructuralSet().filter(chosen);
  const env = parseEnv(process.env);
  const dataDir = resolve(values['data-dir'] as string, cacheKey());
  // --tokens: the real Bedrock client against a local Converse that bills as Bedrock does and
  // answers with the offline model (issue 25 item 1), so every question's tokens are counted.
  const billing = values.tokens
    ? await startBilling(values.model ?? env.CLD_MODEL_ID ?? DEFAULT_BILLED_MODEL, cache)
    : undefined;
  // Stopped however the run ends: its server would keep the process alive after an error
  // (an ingest that throws, a data directory that cannot be made).
  try {
    const runtime = await createLocalRuntime({ dataDir, model: billing?.model ?? modelFor(env) });
    const started = performance.now();
    const report = await ingest([CORPUS], {
      resources: runtime.deps.resources,
      index: runtime.deps.search as MiniSearchIndex,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
    });
    await runtime.bus.idle();
    console.log(
      `model: ${runtime.deps.model.name}   data: ${dataDir}\n` +
        `corpus: ${report.files} files (${report.documents} ingested now, ${report.skipped} cached), ` +
        `${(runtime.deps.search as MiniSearchIndex).size} chunks, ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const indexStorage = (runtime.deps.search as MiniSearchIndex).location?.storage;
    if (!indexStorage) throw new Error('the chunk index has no storage after ingest');
    const graph = await ingestGraph([CORPUS], {
      resources: runtime.deps.resources,
      indexStorage,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
    });
    console.log(
      `graph: ${graph.files} assembly (${graph.files - graph.skipped} ingested now), ${(graph.ms / 1000).toFixed(1)} s`,
    );
    const documents = documentPaths();
    const baseline = buildBaseline();
    const readmes = (module: string) => {
      try {
        return readFileSync(join(CORPUS, module, 'README.md'), 'utf8');
      } catch {
        return '';
      }
    };

    const runId = Date.now().toString(36);
    const results: PartResult[] = [];
    const structuralScores: ReturnType<typeof scoreStructural>[] = [];
    try {
      for (const question of questions) {
        const before = billing?.stub.calls.length ?? 0;
        const parts = await askOne(runtime, question, runId, documents);
        const bill = billing ? billOf(billing.stub.calls.slice(before), billing.modelId) : undefined;
        for (const [i, part] of question.parts.entries()) {
          const measured = parts[i] as Omit<PartResult, 'baselineRank' | 'codeOnly'>;
          results.push({
            ...measured,
            baselineRank: firstRelevantRank(baseline(part.text), part),
            codeOnly: isCodeOnly(part.modules.map(readmes), part.term),
            ...(bill ? { bill } : {}),
          });
        }
      }
      for (const question of structural) {
        const observed = await askStructural(runtime, question, `eval-${runId}-${question.id}`);
        structuralScores.push(scoreStructural(question, observed));
        if (values.verbose)
          console.log(`${question.id}: ${observed.answer.replace(/\s+/g, ' ').slice(0, 300)}`);
      }
    } finally {
      removeConversations(dataDir);
    }
    if (results.length > 0) {
      console.log(`\n${table(results, values.verbose === true)}`);
      console.log(`\n${summary(results)}`);
      if (billing) console.log(`\n${tokenTable(results, billing.modelId, cache)}`);
    }
    if (structuralScores.length > 0)
      console.log(`\nStructural questions (graph):\n${structuralTable(structuralScores)}`);
    if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await billing?.stop();
  }
}

/** Cache key of the ingested corpus: the code that decides chunks and index, and the corpus version. */
function cacheKey(): string {
  const hash = createHash('sha256');
  for (const file of [
    'shared/search/ingest.ts',
    'shared/search/chunking.ts',
    'shared/search/headings.ts',
    'shared/search/minisearch-index.ts',
    'shared/search/terms.ts',
    'shared/graph/jsii.ts',
    'shared/graph/ingest.ts',
  ]) {
    try {
      hash.update(readFileSync(file));
    } catch {
      hash.update(`missing ${file}`);
    }
  }
  hash.update(readFileSync(join(CORPUS, 'package.json')));
  return `corpus-${hash.digest('hex').slice(0, 12)}`;
}

/** Document URN → path, for every Markdown or text file of the corpus (ingest's URN scheme). */
function documentPaths(): Map<string, string> {
  const paths = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (/\.(md|markdown|txt)$/i.test(entry.name))
        paths.set(childUrn(undefined, 'doc.Document', path), path);
    }
  };
  walk(CORPUS);
  return paths;
}

/** Asks one question and measures each of its parts. */
async function askOne(
  runtime: LocalRuntime,
  question: EvalQuestion,
  runId: string,
  documents: ReadonlyMap<string, string>,
): Promise<Omit<PartResult, 'baselineRank' | 'codeOnly'>[]> {
  const { resources } = runtime.deps;
  const started = performance.now();
  const conversation = await startConversation(resources, {
    user: 'cli:eval',
    channel: { kind: 'cli' },
    content: messageOf(question),
    conversationName: `eval-${runId}-${question.id}`,
  });
  await runtime.bus.idle();
  const ms = Math.round(performance.now() - started);
  const below = await resources.list(SYSTEM_ACTOR, conversation.conversation);
  const byUrn = new Map(below.map((r) => [r.meta.id, r]));
  // A part counts only when the whole request was answered (a failed root loses every part); a
  // `partial` answer (issue 21 item 1) still carries the parts that passed.
  const final = byUrn.get(conversation.answer) as Message | undefined;
  const failed = final?.error !== undefined && (final as { status?: unknown }).status !== 'partial';
  const lost = !final || failed || withoutSources(final.content).trim() === '';
  const sections = sectionsOf(withoutSources(final?.content ?? ''), question.parts.length);
  const verdicts = [
    ...below
      .filter((r): r is Verdict => r.meta.type === 'plan.Verdict')
      .sort((a, b) => a.round - b.round)
      .map((v) => `round ${v.round}: ${v.pass ? 'pass' : 'fail'} — ${v.reason}`),
    ...(final?.error ? [`answer error: ${final.error.message ?? final.error.code ?? ''}`] : []),
  ];
  const tasks = below.filter((r): r is Task => r.meta.type === 'plan.Task');
  const roots = tasks.filter((t) => t.depth === 1);
  const partTasks: (Task | undefined)[] =
    roots.length === 1 && (roots[0] as Task).subtasks.length > 0
      ? (roots[0] as Task).subtasks.map((urn) => byUrn.get(urn) as Task | undefined)
      : roots;
  const outputOf = (task: Task) =>
    byUrn.get(childUrn(task.meta.id, 'common.Message', 'output')) as Message | undefined;
  return question.parts.map((part, i) => {
    const planned = question.parts.length === partTasks.length ? partTasks[i] : undefined;
    const empty = {
      id: question.parts.length > 1 ? `${question.id}.${i + 1}` : question.id,
      heldOut: question.heldOut === true,
      text: part.text,
      term: part.term,
      rank: undefined,
      cited: false,
      termInAnswer: false,
      corrections: 0,
      termBeforeCorrection: false,
      section: '',
      termInSection: false,
      leads: false,
      leadsWithTerm: false,
      lost,
      verdicts,
      ms,
      answer: '',
      query: undefined,
    };
    if (!planned || failed) return empty;
    const section = sections[i] ?? '';
    const lead = firstBlock(section);
    const { rank, query } = searchRank(below, planned, part, documents, runtime);
    const final = latestCorrection(tasks, planned);
    const output = outputOf(final);
    const first = outputOf(planned);
    const answer = withoutSources(output?.content ?? '');
    const cited = (output?.citations ?? []).some((urn) => {
      const path = documents.get(parentOf(urn) ?? '');
      const module = path ? moduleOfPath(path) : undefined;
      return module !== undefined && part.modules.includes(module);
    });
    return {
      ...empty,
      rank,
      query,
      cited,
      termInAnswer: containsTerm(answer, part.term),
      corrections: correctionsOf(tasks, planned),
      termBeforeCorrection: containsTerm(withoutSources(first?.content ?? ''), part.term),
      answer,
      section,
      termInSection: containsTerm(section, part.term),
      leads: holdsQuestionTerm(lead, part.text),
      leadsWithTerm: containsTerm(lead, part.term),
    };
  });
}

/** Rank of the first relevant hit of the search call the task's first attempt answered from. */
function searchRank(
  below: readonly AnyResource[],
  task: Task,
  part: EvalPart,
  documents: ReadonlyMap<string, string>,
  runtime: LocalRuntime,
): { rank: number | undefined; query: string | undefined } {
  const calls = below
    .filter((r): r is ToolCallResource => r.meta.type === 'tool.Call' && parentOf(r.meta.id) === task.meta.id)
    .filter((c) => c.call.name === 'search')
    .sort((a, b) => a.meta.name.localeCompare(b.meta.name));
  // The part's own search: the last of the first attempt's calls (a back-reference's lookup of
  // the earlier subject, issue 21 item 3, comes before it).
  const call = calls.at(-1);
  if (!call) return { rank: undefined, query: undefined };
  const result = below.find(
    (r): r is Message =>
      r.meta.type === 'common.Message' &&
      parentOf(r.meta.id) === task.meta.id &&
      (r as Message).role === 'tool' &&
      r.meta.name === `result-${call.meta.name}`,
  );
  const query = (call.call.input as { query?: string } | undefined)?.query;
  if (!result) return { rank: undefined, query };
  let hits: { urn: string; text: string }[] = [];
  try {
    hits = (JSON.parse(result.content) as { results?: { urn: string; text: string }[] }).results ?? [];
  } catch {
    hits = [];
  }
  const index = runtime.deps.search as MiniSearchIndex;
  const rank = firstRelevantRank(
    hits.map((hit) => {
      const path = documents.get(parentOf(hit.urn) ?? '');
      return { module: path ? moduleOfPath(path) : undefined, text: index.textOf(hit.urn) ?? hit.text };
    }),
    part,
  );
  return { rank, query };
}

/** The last corrective task that redoes `task` (following `corrects` chains), or `task`. */
function latestCorrection(tasks: readonly Task[], task: Task): Task {
  let current = task;
  for (;;) {
    const next = tasks.filter((t) => t.corrects === current.meta.id).sort((a, b) => b.round - a.round)[0];
    if (!next) return current;
    current = next;
  }
}

function correctionsOf(tasks: readonly Task[], task: Task): number {
  let count = 0;
  let current = task;
  for (;;) {
    const next = tasks.find((t) => t.corrects === current.meta.id);
    if (!next) return count;
    count += 1;
    current = next;
  }
}

function withoutSources(content: string): string {
  const index = content.search(/\n\s*Sources:\s*\n/);
  return (index === -1 ? content : content.slice(0, index)).trim();
}

/** The baseline: MiniSearch with its defaults over the module READMEs split at headings. */
function buildBaseline(): (query: string) => { module: string; text: string }[] {
  const engine = new MiniSearch<{ id: number; module: string; text: string }>({
    fields: ['text'],
    storeFields: ['module', 'text'],
  });
  let id = 0;
  for (const module of readdirSync(CORPUS)) {
    let text: string;
    try {
      text = readFileSync(join(CORPUS, module, 'README.md'), 'utf8');
    } catch {
      continue;
    }
    const offsets = [0, ...headingsOf(text).map((h) => h.offset), text.length];
    for (let i = 0; i + 1 < offsets.length; i += 1) {
      const section = text.slice(offsets[i], offsets[i + 1]).trim();
      if (section) engine.add({ id: id++, module, text: section });
    }
  }
  return (query) =>
    engine
      .search(query)
      .slice(0, 8)
      .map((hit) => ({ module: hit.module as string, text: hit.text as string }));
}

/** Removes the conversations the run stored (the cached corpus stays). */
function removeConversations(dataDir: string): void {
  const root = join(dataDir, 'resources');
  const walk = (dir: string, depth: number) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.name.includes('common.Conversation.'))
        rmSync(join(dir, entry.name), { recursive: true, force: true });
      else if (entry.isDirectory() && depth < 2) walk(join(dir, entry.name), depth + 1);
    }
  };
  walk(root, 0);
  rmSync(join(dataDir, 'projections'), { recursive: true, force: true });
}

const pct = (n: number, of: number) => (of === 0 ? '–' : `${Math.round((100 * n) / of)} %`);
const hitAt = (rank: number | undefined, k: number) => rank !== undefined && rank <= k;
const mark = (ok: boolean) => (ok ? '✓' : '·');

function table(results: readonly PartResult[], verbose: boolean): string {
  const rows = results.map((r, i) => {
    const last = results[i + 1]?.id.split('.')[0] !== r.id.split('.')[0];
    const trail = verbose && last && r.verdicts.length ? `\n|  | ${r.verdicts.join(' / ')} ||||||||||` : '';
    const line = `| ${r.id}${r.heldOut ? '*' : ''} | ${r.term}${r.codeOnly ? ' (code)' : ''} | ${r.rank ?? '–'} | ${r.baselineRank ?? '–'} | ${mark(r.cited)} | ${mark(r.termInAnswer)} | ${mark(r.termInSection)} | ${mark(r.leads)}${mark(r.leadsWithTerm)} | ${r.lost ? 'lost' : ''} | ${r.corrections} | ${r.ms} |`;
    return verbose
      ? `${line}\n|  | query: ${r.query ?? '–'} — ${r.section.replace(/\s+/g, ' ').slice(0, 300)} ||||||||||${trail}`
      : line;
  });
  return [
    '| part | term | rank | BM25 rank | cited | term in answer | term in section | leads (question term, term) | lost | corrections | ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function totals(results: readonly PartResult[]): Record<string, string> {
  const n = results.length;
  const count = (f: (r: PartResult) => boolean) => results.filter(f).length;
  const row: Record<string, string> = { parts: String(n) };
  for (const k of KS)
    row[`hit@${k}`] = pct(
      count((r) => hitAt(r.rank, k)),
      n,
    );
  for (const k of KS)
    row[`BM25 hit@${k}`] = pct(
      count((r) => hitAt(r.baselineRank, k)),
      n,
    );
  row.cited = pct(
    count((r) => r.cited),
    n,
  );
  row['term in answer'] = pct(
    count((r) => r.termInAnswer),
    n,
  );
  row['term in own section'] = pct(
    count((r) => r.termInSection),
    n,
  );
  row.leads = pct(
    count((r) => r.leads),
    n,
  );
  row['leads with term'] = pct(
    count((r) => r.leadsWithTerm),
    n,
  );
  const asks = questionsOf(results);
  row['asks without answer'] = `${asks.filter((q) => q.every((r) => r.lost)).length} of ${asks.length}`;
  const multi = asks.filter((q) => q.length > 1);
  row['multi-part all right'] =
    multi.length === 0 ? '–' : pct(multi.filter((q) => q.every(partRight)).length, multi.length);
  const corrected = results.filter((r) => r.corrections > 0);
  row['corrective rounds'] = String(results.reduce((s, r) => s + r.corrections, 0));
  row['corrected: term before → after'] =
    `${count((r) => r.corrections > 0 && r.termBeforeCorrection)} → ${count((r) => r.corrections > 0 && r.termInAnswer)} of ${corrected.length}`;
  row['median ms'] = String(median(results.map((r) => r.ms)));
  return row;
}

/** A part is right when its own section holds the term and it cites an expected module. */
const partRight = (r: PartResult) => r.termInSection && r.cited;

/** The results grouped by question (`p01.2` → `p01`), in order. */
function questionsOf(results: readonly PartResult[]): PartResult[][] {
  const groups = new Map<string, PartResult[]>();
  for (const r of results) {
    const id = r.id.split('.')[0] as string;
    groups.set(id, [...(groups.get(id) ?? []), r]);
  }
  return [...groups.values()];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? (sorted[Math.floor(sorted.length / 2)] as number) : 0;
}

function summary(results: readonly PartResult[]): string {
  const groups: [string, PartResult[]][] = [
    ['tuning', results.filter((r) => !r.heldOut)],
    ['held out', results.filter((r) => r.heldOut)],
    ['multi-part', results.filter((r) => r.id.includes('.'))],
    ['3-part (p) tuning', results.filter((r) => r.id.startsWith('p') && !r.heldOut)],
    ['3-part (p) held out', results.filter((r) => r.id.startsWith('p') && r.heldOut)],
    ['code only', results.filter((r) => r.codeOnly)],
    ['all', [...results]],
  ];
  const rows = groups.map(([name, rs]) => ({ name, ...totals(rs) }));
  const keys = Object.keys(rows[0] ?? {}).filter((k) => k !== 'name');
  return [
    `| set | ${keys.join(' | ')} |`,
    `|---|${keys.map(() => '---').join('|')}|`,
    ...rows.map(
      (row) => `| ${row.name} | ${keys.map((k) => (row as Record<string, string>)[k]).join(' | ')} |`,
    ),
  ].join('\n');
}

/**
 * The billing side of `--tokens`: the Bedrock adapter on the real `BedrockRuntimeClient` against a
 * local Converse that bills as Bedrock does (test/bench/bill.ts), with cache points `cache` and the
 * per-step models of `CLD_MODELS` / `CLD_MODEL_ID_<STEP>` (each call priced at its own model).
 * @throws ConfigError for malformed step models (shared/llm/steps.ts)
 */
async function startBilling(modelId: string, cache: 'auto' | 'off') {
  const stepModels = stepModelsOf(process.env);
  const billed = await startBilledBedrock();
  try {
    const model = new BedrockChatModel({ client: billed.client, modelId, promptCache: cache, stepModels });
    return { modelId, ...billed, model };
  } catch (error) {
    await billed.stop();
    throw error;
  }
}

/** The `--tokens` table: per question, by set (each question once), with the price's arithmetic. */
function tokenTable(results: readonly PartResult[], modelId: string, cache: string): string {
  const perQuestion = questionsOf(results).flatMap((parts) => (parts[0]?.bill ? [parts[0]] : []));
  const groups: [string, PartResult[]][] = [
    ['single', perQuestion.filter((r) => !r.id.includes('.'))],
    ['multi-part', perQuestion.filter((r) => r.id.includes('.'))],
    ['all', perQuestion],
  ];
  const price = priceOf(modelId);
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const rows = groups.flatMap(([name, rs]) => {
    if (rs.length === 0) return [];
    const s = summarizeBills(rs.map((r) => r.bill as TokenBill));
    const usd = s.meanUsd === undefined ? '–' : s.meanUsd.toFixed(5);
    const per1000 = s.meanUsd === undefined ? '–' : (s.meanUsd * 1000).toFixed(2);
    return [
      `| ${name} | ${s.questions} | ${s.meanCalls.toFixed(1)} | ${n(s.meanInput)} | ${n(s.meanCacheWrite)} | ${n(s.meanCacheRead)} | ${n(s.meanOutput)} | ${n(s.meanBilledInput)} | ${n(s.medianBilledInput)} | ${n(s.p90BilledInput)} | ${usd} | ${per1000} |`,
    ];
  });
  return [
    `Tokens per question (model ${modelId}, cache points ${cache}; ${price ? `USD at ${price.profile} prices as of ${PRICES_AS_OF}: input ${price.input}, output ${price.output}, cache write ${price.cacheWrite}, cache read ${price.cacheRead} per MTok` : 'no price in shared/llm/pricing.ts'}; means unless said; the cache persists across questions within its TTL, as under steady traffic):`,
    '| set | questions | calls | input | cache write | cache read | output | billed-eq. input | median | p90 | USD / question | USD / 1,000 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

main().catch((error: unknown) => {
  console.error(`eval: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
