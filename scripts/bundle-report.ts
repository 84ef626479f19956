import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { buildConsole, MAX_CONSOLE_JS_GZIP_BYTES } from '../console/build.js';
import {
  BUNDLE_CACHE_DIR,
  type BuiltBundle,
  buildBundle,
  contributors,
  externalImports,
  forbiddenInputs,
  type ImportTiming,
  importOnce,
  isProvidedAtRuntime,
  median,
  probeEnvironment,
  probeEvent,
} from '../infra/lib/bundles.js';
import { FUNCTIONS, type FunctionSpec } from '../infra/lib/functions.js';

/**
 * `npm run bundle:report [-- --runs N] [--top N] [--json]`: bundles every function of the
 * function table exactly as the stack does (infra/lib/bundling.ts), then prints per function
 * the bundle size (minified `index.mjs`, without source map, policy bundle or tokenizer ranks),
 * the policy bundle size, and the median time of `await import()` measured inside N separate
 * plain `node` processes (default 7), against the goals of issue 3 (≤ 500 KB, ≤ 150 ms). In the
 * same processes, after the import, the handler is called twice with an event it composes its
 * Deps for and then returns on (infra/lib/bundles.ts `probeEvent`), against the embedded default
 * adapters (filesystem, offline model): the first call carries the init the cold start does at
 * the first invocation (composition), the second is the warm call. N more processes first import
 * the AWS SDK modules the bundle leaves to the Lambda runtime, then the bundle, to split the
 * import time into the SDK's share and the bundle's own. Then the largest sources of each bundle
 * (esbuild metafile). Exit 1 when a bundle contains code from `infra/`, aws-cdk-lib,
 * cdk-nag or the AWS SDK, or imports at run time anything but Node.js built-ins and the modules
 * the Lambda runtime provides; exit 2 for bad arguments. 1 KB = 1,024 bytes.
 */

const SIZE_GOAL_KB = 500;
const IMPORT_GOAL_MS = 150;

const ArgsSchema = z.strictObject({
  runs: z.coerce.number().int().min(1).max(50).default(7),
  top: z.coerce.number().int().min(0).max(50).default(5),
  json: z.boolean().default(false),
});

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
    options: { runs: { type: 'string' }, top: { type: 'string' }, json: { type: 'boolean' } },
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
  const externals = externalImports(bundle.metafile).filter((specifier) => !isBuiltin(specifier));
  const event = probeEvent(bundle.name, spec.trigger);
  const eventFile = join(bundle.dir, 'probe-event.json');
  if (event !== undefined) writeFileSync(eventFile, JSON.stringify(event));
  const probes: ImportTiming[] = [];
  const split: ImportTiming[] = [];
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
  }
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
    firstCallMs: event === undefined ? undefined : medianOf(probes.map((probe) => probe.firstCallMs)),
    warmCallMs: event === undefined ? undefined : medianOf(probes.map((probe) => probe.warmCallMs)),
    outcome: probes[0]?.outcome,
    withinSize: bundle.bytes <= SIZE_GOAL_KB * 1024,
    withinImport: importMs <= IMPORT_GOAL_MS,
    top: contributors(bundle.metafile)
      .slice(0, top)
      .map(({ source, bytes }) => ({ source, kb: kb(bytes) })),
    problems,
  };
}

async function main(): Promise<void> {
  const args = parseCli();
  const rows: Row[] = [];
  for (const [name, spec] of Object.entries(FUNCTIONS)) {
    if (!args.json) process.stderr.write(`bundling and importing ${name} (${args.runs} runs)...\n`);
    rows.push(await report(await buildBundle(name, spec), spec, args.runs, args.top));
  }
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
          goals: { bundleKb: SIZE_GOAL_KB, importMs: IMPORT_GOAL_MS },
          runs: args.runs,
          rows,
          console: consoleRow,
        },
        null,
        2,
      ),
    );
  } else {
    const load = loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
    out(
      `Bundles (${BUNDLE_CACHE_DIR}), node ${process.version}, ${args.runs} import runs each, load average ${load}`,
    );
    out();
    out(
      '| function | bundle KB (goal ≤ 500) | policy bundle KB | median import ms (goal ≤ 150) | of which AWS SDK ms | own code ms | first invocation ms | warm invocation ms |',
    );
    out('|---|---:|---:|---:|---:|---:|---:|---:|');
    const ms = (value: number | undefined) => (value === undefined ? 'n/a' : value.toFixed(1));
    for (const row of rows) {
      const size = `${row.bundleKb.toFixed(1)}${row.withinSize ? '' : ' ✗'}`;
      const time = `${row.importMs.toFixed(1)}${row.withinImport ? '' : ' ✗'}`;
      out(
        `| ${row.function} | ${size} | ${row.policyKb.toFixed(1)} | ${time} | ${row.sdkMs.toFixed(1)} | ${row.ownMs.toFixed(1)} | ${ms(row.firstCallMs)} | ${ms(row.warmCallMs)} |`,
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
