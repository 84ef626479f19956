import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { buildConsole, MAX_CONSOLE_JS_GZIP_BYTES } from '../console/build.js';
import { PROJECT_ROOT } from '../infra/lib/bundling.js';
import { FUNCTIONS, type FunctionSpec } from '../infra/lib/functions.js';
import { latestGeneration, MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { FilesystemStorage } from '../shared/storage/filesystem.js';
import {
  BUNDLE_CACHE_DIR,
  type BuiltBundle,
  buildBundle,
  buildSearchProbe,
  contributors,
  externalImports,
  forbiddenInputs,
  type ImportTiming,
  importOnce,
  isProvidedAtRuntime,
  median,
  probeEnvironment,
  probeEvent,
  sdkLoadOnce,
  staticExternalImports,
} from './bundles.js';

/**
 * `npm run bundle:report [-- --runs N] [--top N] [--json] [--only a,b] [--corpus DIR] [--index sharded|whole]`: bundles every function of the
 * function table exactly as the stack does (infra/lib/bundling.ts), then prints per function
 * the bundle size (minified `index.mjs`, without source map, policy bundle or tokenizer ranks),
 * the policy bundle size, and the median time of `await import()` measured inside N separate
 * plain `node` processes (default 20; CPU time too, which depends less on the machine's load, and the load average before and after), against the goals of issue 3 (≤ 500 KB, ≤ 150 ms). In the
 * same processes, after the import, the handler is called twice with an event it composes its
 * Deps for and then returns on (scripts/bundles.ts `probeEvent`), against the embedded default
 * adapters (filesystem, offline model): the first call carries the init the cold start does at
 * the first invocation (composition), the second is the warm call. With the embedded adapters
 * the first call loads no AWS SDK client (shared/aws/sdk.ts: each loads where it is used), so in
 * Lambda the first invocation costs more by the clients it builds. N more processes first import
 * the AWS SDK modules the bundle imports statically (loaded before its code runs; the clients the
 * adapters `require` at their first use are not among them), then the bundle, to split the
 * import time into the SDK's share and the bundle's own. Then the largest sources of each bundle
 * (esbuild metafile). For the tool function, with an ingested corpus (`--corpus`, default the newest
 * `.cld-eval/corpus-*` of `npm run eval`: the aws-cdk-lib docs), N more processes import the bundle
 * and then open the chunk index's shard pack and run a first search (scripts/search-probe.ts),
 * against issue 25's goal (import + first search p50 ≤ 300 ms). Exit 1 when a bundle contains code from `infra/`, aws-cdk-lib,
 * cdk-nag or the AWS SDK, or imports at run time anything but Node.js built-ins and the modules
 * the Lambda runtime provides; exit 2 for bad arguments. 1 KB = 1,024 bytes.
 */

const SIZE_GOAL_KB = 500;
const IMPORT_GOAL_MS = 150;

const ArgsSchema = z.strictObject({
  runs: z.coerce.number().int().min(1).max(50).default(20),
  top: z.coerce.number().int().min(0).max(50).default(5),
  json: z.boolean().default(false),
  /** Only these functions (comma-separated names of the function table). */
  only: z.string().optional(),
  /** A data directory whose `indexes/` holds an ingested chunk index, for the tool's cold search. */
  corpus: z.string().optional(),
  /** How the cold search opens the index: the shard pack (default) or the whole generation (the old way, for comparison). */
  index: z.enum(['sharded', 'whole']).default('sharded'),
});

/** Goal of issue 25: the tool bundle's cold import plus its first search, p50, in ms. */
const COLD_SEARCH_GOAL_MS = 300;

/** Questions of the first search, one per cold process in turn (from test/eval/questions.json's kind). */
const PROBE_QUERIES = [
  'How do I grant a Lambda function read access to an S3 bucket?',
  'How do I create a custom event bus and a rule that targets a Lambda function?',
  'How do I add a dead-letter queue to an SQS queue?',
  'How do I encrypt a DynamoDB table with a customer managed KMS key?',
  'How do I put a Lambda function in private subnets of a VPC?',
];

/** The tool bundle's cold import followed by its first search over a real corpus, per process. */
interface ColdSearch {
  corpus: string;
  mode: 'sharded' | 'whole';
  importMs: number;
  searchMs: number;
  /** Median over processes of import + first search (each process's sum). */
  totalMs: number;
  totalRunsMs: number[];
  importCpuMs: number;
  searchCpuMs: number;
  totalCpuMs: number;
  hits: number[];
}

/** One row of the report. */
interface Row {
  function: string;
  bundleKb: number;
  policyKb: number;
  tokenizerKb: number;
  importMs: number;
  importRunsMs: number[];
  /** Median, in runs that first import the external AWS SDK modules, of those modules' import. */
  sdkMs: number;
  /** Median, in those runs, of the bundle's own import after them. */
  ownMs: number;
  /** Median first handler call after the import (composition + the call); undefined without a probe event. */
  firstCallMs: number | undefined;
  /** Median second call (warm). */
  warmCallMs: number | undefined;
  /** How the first probe call ended (`status 401`, `ok`, an error name). */
  outcome: string | undefined;
  /** Median CPU time (user + system) of the import. */
  importCpuMs: number;
  /** Median CPU time of the first call. */
  firstCallCpuMs: number | undefined;
  /** Size of the asset's `aws-sdk.cjs` (infra/lib/sdk-module.ts). */
  sdkModuleKb: number;
  /** The SDK packages the asset's stubs serve. */
  sdkPackages: string[];
  /** Median `require` of those packages from the asset (its `aws-sdk.cjs`), in a fresh process. */
  sdkLoadMs: number | undefined;
  /** Median `require` of the same packages from node_modules (the SDK's CommonJS build, as the runtime's copy), interleaved. */
  sdkRuntimeLoadMs: number | undefined;
  /** CPU time of the two above. */
  sdkLoadCpuMs: number | undefined;
  sdkRuntimeLoadCpuMs: number | undefined;
  withinSize: boolean;
  withinImport: boolean;
  top: { source: string; kb: number }[];
  problems: string[];
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function kb(bytes: number): number {
  return Math.round((bytes / 1024) * 10) / 10;
}

function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

function parseCli(): z.infer<typeof ArgsSchema> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      top: { type: 'string' },
      json: { type: 'boolean' },
      only: { type: 'string' },
      corpus: { type: 'string' },
      index: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const parsed = ArgsSchema.safeParse(values);
  if (!parsed.success) {
    process.stderr.write(`bundle:report: ${z.prettifyError(parsed.error)}\n`);
    process.exit(2);
  }
  return parsed.data;
}

function medianOf(values: readonly (number | undefined)[]): number | undefined {
  const present = values.filter((value): value is number => value !== undefined);
  return present.length === values.length && present.length > 0 ? round(median(present)) : undefined;
}

async function report(
  bundle: BuiltBundle,
  spec: Pick<FunctionSpec, 'trigger'>,
  runs: number,
  top: number,
): Promise<Row> {
  const externals = staticExternalImports(bundle.metafile).filter((specifier) => !isBuiltin(specifier));
  const event = probeEvent(bundle.name, spec.trigger);
  const eventFile = join(bundle.dir, 'probe-event.json');
  if (event !== undefined) writeFileSync(eventFile, JSON.stringify(event));
  const probes: ImportTiming[] = [];
  const split: ImportTiming[] = [];
  const { sdkPackages } = bundle;
  const sdkLoads: { ms: number; cpuMs: number }[] = [];
  const runtimeLoads: { ms: number; cpuMs: number }[] = [];
  for (let i = 0; i < runs; i += 1) {
    const dataDir = mkdtempSync(join(bundle.dir, 'probe-data-'));
    try {
      probes.push(
        await importOnce(
          bundle.file,
          [],
          event === undefined ? undefined : { eventFile, env: probeEnvironment(bundle, dataDir) },
        ),
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    split.push(await importOnce(bundle.file, externals));
    if (sdkPackages.length > 0) {
      sdkLoads.push(await sdkLoadOnce(bundle.file, sdkPackages));
      runtimeLoads.push(await sdkLoadOnce(join(PROJECT_ROOT, 'package.json'), sdkPackages));
    }
  }
  const loadMedian = (loads: { ms: number; cpuMs: number }[], pick: 'ms' | 'cpuMs') =>
    loads.length === 0 ? undefined : round(median(loads.map((load) => load[pick])));
  rmSync(eventFile, { force: true });
  const importRunsMs = probes.map((probe) => probe.bundleMs);
  const importMs = round(median(importRunsMs));
  const problems = [
    ...forbiddenInputs(bundle.metafile).map((input) => `bundles ${input}`),
    ...externalImports(bundle.metafile)
      .filter((specifier) => !isProvidedAtRuntime(specifier))
      .map((specifier) => `imports ${specifier} at run time, which Lambda does not provide`),
  ];
  return {
    function: bundle.name,
    bundleKb: kb(bundle.bytes),
    policyKb: kb(bundle.policyBytes),
    tokenizerKb: kb(bundle.tokenizerBytes),
    importMs,
    importRunsMs: importRunsMs.map(round),
    sdkMs: round(median(split.map((timing) => timing.externalsMs))),
    ownMs: round(median(split.map((timing) => timing.bundleMs))),
    importCpuMs: round(median(probes.map((probe) => probe.importCpuMs))),
    firstCallCpuMs: event === undefined ? undefined : medianOf(probes.map((probe) => probe.firstCallCpuMs)),
    firstCallMs: event === undefined ? undefined : medianOf(probes.map((probe) => probe.firstCallMs)),
    warmCallMs: event === undefined ? undefined : medianOf(probes.map((probe) => probe.warmCallMs)),
    outcome: probes[0]?.outcome,
    sdkModuleKb: kb(bundle.sdkBytes),
    sdkPackages,
    sdkLoadMs: loadMedian(sdkLoads, 'ms'),
    sdkRuntimeLoadMs: loadMedian(runtimeLoads, 'ms'),
    sdkLoadCpuMs: loadMedian(sdkLoads, 'cpuMs'),
    sdkRuntimeLoadCpuMs: loadMedian(runtimeLoads, 'cpuMs'),
    withinSize: bundle.bytes <= SIZE_GOAL_KB * 1024,
    withinImport: importMs <= IMPORT_GOAL_MS,
    top: contributors(bundle.metafile)
      .slice(0, top)
      .map(({ source, bytes }) => ({ source, kb: kb(bytes) })),
    problems,
  };
}

/**
 * The corpus of the cold search: `--corpus`, else the newest ingest cache of `npm run eval`
 * (`.cld-eval/corpus-*`, the aws-cdk-lib documentation); undefined when there is none.
 */
function corpusDir(given: string | undefined): string | undefined {
  if (given !== undefined) return given;
  const root = '.cld-eval';
  if (!existsSync(root)) return undefined;
  const dirs = readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name.startsWith('corpus-'))
    .map((entry) => join(root, entry.name));
  return dirs.find((dir) => existsSync(join(dir, 'indexes')));
}

/**
 * Cold processes that import the tool bundle and then run its first search over `corpus`'s chunk
 * index: the bundle is scripts/search-probe.ts (the tool handler's module graph plus
 * `firstSearch`, built with the tool's options and its SDK module), imported once; the newest
 * generation is copied to a scratch data directory and saved once more there, which writes its
 * shard pack (as ingest does now), so the probe reads what a function would.
 */
async function coldSearch(
  tool: BuiltBundle,
  corpus: string,
  runs: number,
  mode: 'sharded' | 'whole',
): Promise<ColdSearch> {
  const source = new FilesystemStorage(corpus);
  const generation = await latestGeneration(source, 'indexes/chunks');
  if (generation === undefined) throw new Error(`${corpus} holds no chunk index (indexes/chunks.<n>.json)`);
  const dataDir = mkdtempSync(join(tool.dir, 'corpus-'));
  try {
    mkdirSync(join(dataDir, 'indexes'));
    copyFileSync(
      join(corpus, 'indexes', `chunks.${generation}.json`),
      join(dataDir, 'indexes', 'chunks.1.json'),
    );
    await (await MiniSearchIndex.open(new FilesystemStorage(dataDir))).save();
    const entry = await buildSearchProbe(tool.dir);
    const timings: ImportTiming[] = [];
    for (let i = 0; i < runs; i += 1) {
      const query = PROBE_QUERIES[i % PROBE_QUERIES.length] as string;
      // One module graph, as in the function: the import is the tool handler's (with the probe's
      // `firstSearch` beside it), and the search runs on the code that import compiled.
      timings.push(await importOnce(entry, [], undefined, { entry, dataDir, query, mode }));
    }
    const of = (pick: (timing: ImportTiming) => number) => round(median(timings.map(pick)));
    return {
      corpus,
      mode,
      importMs: of((t) => t.bundleMs),
      searchMs: of((t) => t.firstSearchMs ?? Number.NaN),
      totalMs: of((t) => t.bundleMs + (t.firstSearchMs ?? Number.NaN)),
      totalRunsMs: timings.map((t) => round(t.bundleMs + (t.firstSearchMs ?? Number.NaN))),
      importCpuMs: of((t) => t.importCpuMs),
      searchCpuMs: of((t) => t.firstSearchCpuMs ?? Number.NaN),
      totalCpuMs: of((t) => t.importCpuMs + (t.firstSearchCpuMs ?? Number.NaN)),
      hits: timings.map((t) => t.hits ?? 0),
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function loadNow(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}

async function main(): Promise<void> {
  const args = parseCli();
  const loadBefore = loadNow();
  const only = args.only?.split(',');
  const rows: Row[] = [];
  let cold: ColdSearch | undefined;
  const corpus = corpusDir(args.corpus);
  for (const [name, spec] of Object.entries(FUNCTIONS)) {
    if (only && !only.includes(name)) continue;
    if (!args.json) process.stderr.write(`bundling and importing ${name} (${args.runs} runs)...\n`);
    const bundle = await buildBundle(name, spec);
    rows.push(await report(bundle, spec, args.runs, args.top));
    if (name === 'tool' && corpus !== undefined) {
      if (!args.json)
        process.stderr.write(`cold import + first search of tool over ${corpus} (${args.runs} runs)...\n`);
      cold = await coldSearch(bundle, corpus, args.runs, args.index);
    }
  }
  const loadAfter = loadNow();
  // The web console the http function's asset carries (console/build.ts; limit 150 KB gzipped).
  const web = await buildConsole(join(BUNDLE_CACHE_DIR, 'console'));
  const consoleRow = {
    script: web.js.name,
    kb: web.js.bytes / 1024,
    gzipKb: web.js.gzipBytes / 1024,
    cssGzipKb: web.css.gzipBytes / 1024,
    limitGzipKb: MAX_CONSOLE_JS_GZIP_BYTES / 1024,
  };
  if (args.json) {
    out(
      JSON.stringify(
        {
          goals: { bundleKb: SIZE_GOAL_KB, importMs: IMPORT_GOAL_MS, coldSearchMs: COLD_SEARCH_GOAL_MS },
          runs: args.runs,
          load: { before: loadBefore, after: loadAfter },
          rows,
          coldSearch: cold,
          console: consoleRow,
        },
        null,
        2,
      ),
    );
  } else {
    out(
      `Bundles (${BUNDLE_CACHE_DIR}), node ${process.version}, ${args.runs} cold processes each (p50), load average ${loadBefore} before, ${loadAfter} after (1, 5, 15 min; ${cpus().length} CPUs)`,
    );
    out();
    out(
      '| function | bundle KB (goal ≤ 500) | policy bundle KB | median import ms (goal ≤ 150) | import CPU ms | of which AWS SDK ms | own code ms | first invocation ms | first invocation CPU ms | warm invocation ms |',
    );
    out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const ms = (value: number | undefined) => (value === undefined ? 'n/a' : value.toFixed(1));
    for (const row of rows) {
      const size = `${row.bundleKb.toFixed(1)}${row.withinSize ? '' : ' ✗'}`;
      const time = `${row.importMs.toFixed(1)}${row.withinImport ? '' : ' ✗'}`;
      out(
        `| ${row.function} | ${size} | ${row.policyKb.toFixed(1)} | ${time} | ${row.importCpuMs.toFixed(1)} | ${row.sdkMs.toFixed(1)} | ${row.ownMs.toFixed(1)} | ${ms(row.firstCallMs)} | ${ms(row.firstCallCpuMs)} | ${ms(row.warmCallMs)} |`,
      );
    }
    out(
      '\nAWS SDK at the first invocation: `require` of the packages the asset serves, from its `aws-sdk.cjs` against the same packages from node_modules (the CommonJS build the Lambda runtime carries), interleaved fresh processes, p50:\n',
    );
    out(
      '| function | aws-sdk.cjs KB | packages | asset ms | asset CPU ms | node_modules ms | node_modules CPU ms |',
    );
    out('|---|---:|---|---:|---:|---:|---:|');
    for (const row of rows) {
      const names = row.sdkPackages.map((name) => name.replace(/^@aws-sdk\//, '')).join(', ');
      out(
        `| ${row.function} | ${row.sdkModuleKb.toFixed(1)} | ${names} | ${ms(row.sdkLoadMs)} | ${ms(row.sdkLoadCpuMs)} | ${ms(row.sdkRuntimeLoadMs)} | ${ms(row.sdkRuntimeLoadCpuMs)} |`,
      );
    }
    if (cold) {
      const within = cold.totalMs <= COLD_SEARCH_GOAL_MS ? '' : ' ✗';
      out(
        `\nTool cold search over ${cold.corpus} (${cold.mode === 'sharded' ? 'shard pack' : 'whole generation'}; p50 of ${args.runs} processes): import ${cold.importMs.toFixed(1)} ms + first search ${cold.searchMs.toFixed(1)} ms = ${cold.totalMs.toFixed(1)} ms${within} (goal ≤ ${COLD_SEARCH_GOAL_MS}); CPU ${cold.importCpuMs.toFixed(1)} + ${cold.searchCpuMs.toFixed(1)} = ${cold.totalCpuMs.toFixed(1)} ms; runs ${cold.totalRunsMs.join(', ')} ms; hits ${cold.hits.join(', ')}.`,
      );
    }
    out(
      `\nWeb console (http asset, console/): ${consoleRow.script} ${consoleRow.kb.toFixed(1)} KB, ${consoleRow.gzipKb.toFixed(1)} KB gzipped (limit ${consoleRow.limitGzipKb} KB); stylesheet ${consoleRow.cssGzipKb.toFixed(1)} KB gzipped.`,
    );
    const ranksKb = rows[0]?.tokenizerKb;
    if (ranksKb !== undefined)
      out(
        `\nEvery asset also holds the tokenizer ranks (tokenizer/cl100k_base.json, ${ranksKb.toFixed(1)} KB).`,
      );
    for (const row of rows) {
      out();
      out(
        `${row.function}: import runs ${row.importRunsMs.join(', ')} ms; first invocation ${row.outcome ?? 'not probed'}; largest sources:`,
      );
      for (const { source, kb: size } of row.top) out(`  ${size.toFixed(1).padStart(8)} KB  ${source}`);
      for (const problem of row.problems) out(`  PROBLEM: ${problem}`);
    }
  }
  if (rows.some((row) => row.problems.length > 0)) process.exitCode = 1;
}

await main();
