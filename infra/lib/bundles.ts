import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { BUNDLE_FILE, copyPolicyBundle, EXTERNAL_MODULES, esbuildOptions, PROJECT_ROOT } from './bundling.js';
import type { FunctionSpec } from './functions.js';

/**
 * Building and measuring function bundles outside CDK, with the stack's esbuild options
 * (infra/lib/bundling.ts): used by `npm run bundle:report` and the bundle tests.
 *
 * Bundles are written under `node_modules/.cache/` of the project so that the modules left
 * external (`@aws-sdk/*`, `@smithy/*`, which the Lambda runtime provides) resolve from the
 * project's `node_modules` when a plain `node` process imports them, as they resolve from the
 * runtime in Lambda.
 */

/** Default directory of report bundles. */
export const BUNDLE_CACHE_DIR = join(PROJECT_ROOT, 'node_modules', '.cache', 'cld-bundles');

/** One built bundle. */
export interface BuiltBundle {
  name: string;
  /** Directory holding `index.mjs`, its map and `policies/` (the asset as deployed). */
  dir: string;
  /** Absolute path of `index.mjs`. */
  file: string;
  /** Size of `index.mjs` in bytes (minified JS, without map and policy bundle). */
  bytes: number;
  /** Size of `index.mjs.map` in bytes. */
  mapBytes: number;
  /** Size of `policies/` in bytes. */
  policyBytes: number;
  metafile: Metafile;
}

/**
 * Bundles one function as the stack does and copies its policy bundle next to it.
 * @param outRoot parent directory; the bundle goes to `<outRoot>/<name>/` (replaced)
 * @throws esbuild's build failure (with its messages) when the entry does not bundle
 */
export async function buildBundle(
  name: string,
  spec: Pick<FunctionSpec, 'entry'>,
  outRoot: string = BUNDLE_CACHE_DIR,
): Promise<BuiltBundle> {
  const dir = join(outRoot, name);
  rmSync(dir, { recursive: true, force: true });
  const result = await build({ ...esbuildOptions(spec.entry, dir), metafile: true });
  copyPolicyBundle(name, dir);
  const file = join(dir, BUNDLE_FILE);
  return {
    name,
    dir,
    file,
    bytes: statSync(file).size,
    mapBytes: statSync(`${file}.map`).size,
    policyBytes: directoryBytes(join(dir, 'policies')),
    metafile: result.metafile,
  };
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).size;
  }
  return total;
}

/** Inputs that must never be in a function bundle: the CDK app and its libraries, the AWS SDK. */
const FORBIDDEN_INPUTS = [
  /^infra\//,
  /(^|\/)node_modules\/(aws-cdk-lib|aws-cdk|constructs|cdk-nag|esbuild|@aws-sdk|@smithy)\//,
];

/** Metafile inputs of the bundle that come from the CDK app, CDK, cdk-nag, esbuild or the AWS SDK. */
export function forbiddenInputs(metafile: Metafile): string[] {
  return Object.keys(metafile.inputs).filter((input) =>
    FORBIDDEN_INPUTS.some((pattern) => pattern.test(input)),
  );
}

/** Module specifiers the bundle imports at run time (external), deduplicated and sorted. */
export function externalImports(metafile: Metafile): string[] {
  const imports = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) if (imported.external) imports.add(imported.path);
  }
  return [...imports].sort();
}

/** True for a run-time import the Lambda runtime satisfies: a Node.js built-in or an external module. */
export function isProvidedAtRuntime(specifier: string): boolean {
  if (isBuiltin(specifier)) return true;
  return EXTERNAL_MODULES.some((pattern) => specifier.startsWith(pattern.replace('*', '')));
}

/** Bytes in the output by source package (`node_modules/<pkg>`, or the project directory), largest first. */
export function contributors(metafile: Metafile): { source: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const source = sourceOf(input);
      totals.set(source, (totals.get(source) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].map(([source, bytes]) => ({ source, bytes })).sort((a, b) => b.bytes - a.bytes);
}

function sourceOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return input.split('/').slice(0, 2).join('/');
  const parts = input.slice(at + 'node_modules/'.length).split('/');
  const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? input);
  // Name the file for a package's big single files (js-tiktoken's ranks) so the report says what it is.
  return pkg === 'js-tiktoken' ? `js-tiktoken/${parts.slice(1).join('/')}` : pkg;
}

/**
 * Code a child `node` runs: `await import()` of the run-time external modules given in argv[1]
 * (JSON array; may be empty), then of the bundle at argv[2], each timed with performance.now()
 * inside the child.
 */
const IMPORT_PROBE = `
const externals = JSON.parse(process.argv[1]);
const started = performance.now();
for (const specifier of externals) await import(specifier);
const loaded = performance.now();
const module = await import(process.argv[2]);
const done = performance.now();
if (typeof module.handler !== 'function') throw new Error('the bundle exports no handler function');
process.stdout.write(JSON.stringify({ externalsMs: loaded - started, bundleMs: done - loaded }));
`;

/** Timings of one child process, in ms. */
export interface ImportTiming {
  /** Importing the external modules first (0 when none were asked for). */
  externalsMs: number;
  /** Importing the bundle after them: everything when `externals` is empty, else the bundle's own code. */
  bundleMs: number;
}

/**
 * Imports `file` once in a new plain `node` process (no tsx, no NODE_OPTIONS; working directory
 * the bundle's, so externals resolve as the bundle resolves them). With `externals`, those
 * modules are imported first and timed apart, which splits the bundle's import time into the
 * AWS SDK's share and its own.
 * @throws Error with the child's stderr when an import fails or the bundle exports no `handler`
 */
export function importOnce(file: string, externals: readonly string[] = []): Promise<ImportTiming> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const args = [
    '--input-type=module',
    '-e',
    IMPORT_PROBE,
    JSON.stringify(externals),
    pathToFileURL(file).href,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env,
      cwd: dirname(file),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`importing ${file} failed (exit ${code}): ${stderr.trim().slice(0, 2000)}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as ImportTiming);
      } catch (error) {
        reject(new Error(`unexpected probe output: ${stdout.slice(0, 200)}`, { cause: error }));
      }
    });
  });
}

/** Median of a non-empty list. @throws RangeError for an empty list */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}
