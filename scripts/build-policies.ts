import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readTarGzEntry } from '../shared/policy/bundle.js';
import {
  checkBundles,
  MANIFEST_FILE,
  type PolicyManifest,
  PROBE_BUNDLE,
  policySources,
  sha256,
} from '../shared/policy/manifest.js';
import { compileRules, parseRulesDocument } from '../shared/policy/rules.js';

/**
 * `npm run build:policies [-- --require] [-- --out <dir>]`: compiles each function's policy
 * (policies/<function>.rego + policies/lib/cld.rego, one per entry of policies/rules.json
 * "functions") with `opa build -t wasm -e cld/<function>/decision` and writes the bundle's
 * `/policy.wasm` to `<out>/<function>.wasm` (default policies/dist, committed), plus the test-only
 * `probe.wasm` (policies/lib/probe.rego) and `manifest.json` (shared/policy/manifest.ts: sha256 of
 * every source, the OPA version, sha256 of every bundle). First it runs `opa test policies/` (the
 * Rego tests, the decision table included) and checks that `lib.index_rules` compiles
 * policies/rules.json exactly as `compileRules()` does (the data the bundles get); it stops if
 * either fails. The compile is limited to the builtins `@open-policy-agent/opa-wasm` provides (its
 * capabilities.json intersected with `opa capabilities --current`).
 *
 * Needs OPA >= 0.61 on PATH to build. The build is reproducible: the same sources and OPA version
 * give the same bytes in any checkout path (opa is given repository-relative file names).
 * Without opa, the committed bundles are checked by their manifest instead:
 * - plain: one line saying whether they are fresh (built from the current sources), exit 0;
 * - `--require` (what `npm run deploy` passes): exit 0 when they are fresh, else exit 1 naming
 *   what changed.
 * With opa, `--require` rebuilds into a temporary directory and compares it with the committed
 * bundles byte for byte, writing nothing: exit 0 when equal, else exit 1 naming each file that
 * differs. (When the manifest names another OPA version, it says that a byte comparison is
 * impossible and falls back to the manifest check.) Any failure of opa itself exits 1.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const POLICIES = join(ROOT, 'policies');
const MIN_VERSION = [0, 61, 0] as const;
const SDK_CAPABILITIES = join(ROOT, 'node_modules', '@open-policy-agent', 'opa-wasm', 'capabilities.json');

class BuildError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { require: { type: 'boolean', default: false }, out: { type: 'string' } },
  });
  const out = resolve(values.out ?? join(POLICIES, 'dist'));
  const rules = parseRulesDocument(JSON.parse(await readFile(join(POLICIES, 'rules.json'), 'utf8')));
  const functions = Object.keys(rules.functions);
  const shown = relative(ROOT, out) || out;
  const opa = findOpa();
  const check = checkBundles(POLICIES, out, functions);
  if (!opa.ok) {
    if (check.fresh) {
      process.stdout.write(
        `build-policies: ${opa.why}; the bundles in ${shown} are fresh (built with opa ${check.manifest.opa} from the current sources); nothing to build\n`,
      );
      return 0;
    }
    const install = `install OPA >= ${MIN_VERSION.join('.')} and run npm run build:policies`;
    const problems = check.problems.map((p) => `  - ${p}\n`).join('');
    if (values.require) {
      process.stderr.write(
        `build-policies: ${opa.why}, and the bundles in ${shown} are stale; not deploying policies they were not built from (${install}, then commit ${shown}):\n${problems}`,
      );
      return 1;
    }
    process.stderr.write(
      `build-policies: ${opa.why}, and the bundles in ${shown} are stale (${install}):\n${problems}`,
    );
    return 0;
  }
  if (values.require) return verify(opa.version, out, shown, functions, rules, check);
  await build(opa.version, out, functions, rules);
  process.stdout.write(`build-policies: ${functions.length} bundles built with opa ${opa.version}\n`);
  return 0;
}

/**
 * `--require` with opa on PATH: rebuilds into a temporary directory and compares every file
 * (bundles and manifest) with `out` byte for byte, writing nothing to `out`. 0 when they are equal;
 * 1 naming what differs. When the manifest records another OPA version than the one on PATH, a
 * rebuild cannot be equal: it says so and falls back to the manifest check (fresh: 0, else 1).
 */
async function verify(
  version: string,
  out: string,
  shown: string,
  functions: string[],
  rules: ReturnType<typeof parseRulesDocument>,
  check: ReturnType<typeof checkBundles>,
): Promise<number> {
  const problems = check.fresh ? [] : check.problems;
  if (check.manifest && check.manifest.opa !== version) {
    if (problems.length === 0) {
      process.stderr.write(
        `build-policies: the bundles in ${shown} were built with opa ${check.manifest.opa}, this is opa ${version}: a rebuild cannot be compared byte for byte; they are fresh by the manifest (sources unchanged)\n`,
      );
      return 0;
    }
    process.stderr.write(
      `build-policies: the bundles in ${shown} are stale; not deploying policies they were not built from (run npm run build:policies and commit ${shown}):\n${problems.map((p) => `  - ${p}\n`).join('')}`,
    );
    return 1;
  }
  const rebuilt = await mkdtemp(join(tmpdir(), 'cld-policies-verify-'));
  try {
    await build(version, rebuilt, functions, rules);
    const differences: string[] = [];
    const names = [...new Set([...(await readdir(rebuilt)), ...(existsSync(out) ? await readdir(out) : [])])]
      .filter((name) => name.endsWith('.wasm') || name === MANIFEST_FILE)
      .sort();
    for (const name of names) {
      const committed = existsSync(join(out, name)) ? await readFile(join(out, name)) : undefined;
      const fresh = existsSync(join(rebuilt, name)) ? await readFile(join(rebuilt, name)) : undefined;
      if (!committed) differences.push(`${name} is missing (a rebuild writes it)`);
      else if (!fresh) differences.push(`${name} is not written by a rebuild`);
      else if (!committed.equals(fresh))
        differences.push(`${name} differs from a rebuild with opa ${version}`);
    }
    if (differences.length > 0) {
      process.stderr.write(
        `build-policies: the bundles in ${shown} are not what the current sources build; not deploying them (run npm run build:policies and commit ${shown}):\n${differences.map((d) => `  - ${d}\n`).join('')}`,
      );
      return 1;
    }
    process.stdout.write(
      `build-policies: the bundles in ${shown} equal a rebuild with opa ${version}, byte for byte (${names.length} files)\n`,
    );
    return 0;
  } finally {
    await rm(rebuilt, { recursive: true, force: true });
  }
}

/**
 * Runs the Rego tests and the index check, then builds every bundle and the manifest into `out`.
 * opa runs in the repository root and is given the sources by their paths relative to it
 * (`policies/lib/cld.rego`): OPA writes the file names it was given into the wasm (for error
 * locations), so absolute paths would make every bundle depend on where the checkout is.
 * @throws BuildError when opa fails or a bundle has no /policy.wasm
 */
async function build(
  version: string,
  out: string,
  functions: string[],
  rules: ReturnType<typeof parseRulesDocument>,
): Promise<void> {
  for (const fn of functions) {
    if (!existsSync(join(POLICIES, `${fn}.rego`))) throw new BuildError(`policies/${fn}.rego is missing`);
  }
  run(['test', 'policies'], 'opa test policies/');
  checkIndexCompilers(rules);
  const work = await mkdtemp(join(tmpdir(), 'cld-policies-'));
  try {
    const capabilities = await writeCapabilities(work);
    await mkdir(out, { recursive: true });
    const lib = 'policies/lib/cld.rego';
    const targets = [
      ...functions.map((fn) => ({
        name: fn,
        entrypoints: [`cld/${fn}/decision`],
        files: [lib, `policies/${fn}.rego`],
      })),
      {
        name: PROBE_BUNDLE,
        entrypoints: ['cld/probe/glob_row', 'cld/probe/urn_row'],
        files: [lib, 'policies/lib/probe.rego'],
      },
    ];
    const bundles: PolicyManifest['bundles'] = {};
    const shown = relative(ROOT, out) || out;
    for (const target of targets) {
      const bundle = join(work, `${target.name}.tar.gz`);
      run(
        [
          'build',
          '-t',
          'wasm',
          ...target.entrypoints.flatMap((e) => ['-e', e]),
          ...(capabilities ? ['--capabilities', capabilities] : []),
          '-o',
          bundle,
          ...target.files,
        ],
        `opa build ${target.name}`,
      );
      const wasm = readTarGzEntry(await readFile(bundle), '/policy.wasm');
      if (!wasm) throw new BuildError(`the bundle of ${target.name} has no /policy.wasm`);
      const file = `${target.name}.wasm`;
      await writeFile(join(out, file), wasm);
      bundles[target.name] = { file, sha256: sha256(wasm), entrypoints: target.entrypoints };
      process.stdout.write(`build-policies: ${join(shown, file)} (${(wasm.length / 1024).toFixed(0)} KiB)\n`);
    }
    const manifest: PolicyManifest = { opa: version, sources: policySources(POLICIES), bundles };
    await writeFile(join(out, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Checks that the Rego tests' index (`lib.index_rules`, what `opa test` decides with) is the data
 * the bundles get at run time (`compileRules()`, shared/policy/rules.ts), glob matchers included.
 * @throws BuildError naming the first function whose index differs
 */
function checkIndexCompilers(rules: ReturnType<typeof parseRulesDocument>): void {
  const query = 'x := {fn: index | index := data.cld.lib.index_rules(data.rules, data.functions[fn])}';
  const output = run(
    ['eval', '--format', 'json', '-d', 'policies/lib/cld.rego', '-d', 'policies/rules.json', query],
    'opa eval lib.index_rules',
  );
  const rego = (JSON.parse(output) as { result?: { bindings?: { x?: Record<string, unknown> } }[] })
    .result?.[0]?.bindings?.x;
  const typescript = compileRules(rules).cld.index;
  for (const fn of Object.keys(typescript)) {
    if (canonical(rego?.[fn]) !== canonical(typescript[fn])) {
      throw new BuildError(
        `lib.index_rules (policies/lib/cld.rego) and compileRules (shared/policy/rules.ts) compile the rules of ${fn} differently:\n` +
          `rego: ${canonical(rego?.[fn])}\nts:   ${canonical(typescript[fn])}`,
      );
    }
  }
}

/** JSON with object keys sorted (Rego objects have no key order). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)),
        )
      : v,
  );
}

/** Whether `opa` is on PATH and new enough. */
function findOpa(): { ok: true; version: string } | { ok: false; why: string } {
  const result = spawnSync('opa', ['version'], { encoding: 'utf8' });
  if (result.error) {
    const code = (result.error as NodeJS.ErrnoException).code;
    return { ok: false, why: code === 'ENOENT' ? 'opa not found on PATH' : `opa did not run (${code})` };
  }
  if (result.status !== 0) return { ok: false, why: `opa version exited ${result.status}` };
  const match = /Version:\s*v?(\d+)\.(\d+)\.(\d+)/.exec(result.stdout);
  if (!match) return { ok: false, why: 'opa version printed no version' };
  const version = [Number(match[1]), Number(match[2]), Number(match[3])];
  const tooOld = compare(version, MIN_VERSION) < 0;
  if (tooOld) return { ok: false, why: `opa ${version.join('.')} is older than ${MIN_VERSION.join('.')}` };
  return { ok: true, version: version.join('.') };
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * `opa capabilities --current` with its builtins cut to those the wasm SDK can run, so a policy
 * using another builtin fails to build instead of failing at evaluation. Undefined when opa
 * cannot print its capabilities (the build then runs without the restriction).
 */
async function writeCapabilities(work: string): Promise<string | undefined> {
  const current = spawnSync('opa', ['capabilities', '--current'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (current.status !== 0 || !existsSync(SDK_CAPABILITIES)) {
    process.stdout.write(
      'build-policies: opa capabilities unavailable; building without the SDK builtin list\n',
    );
    return undefined;
  }
  const sdk = JSON.parse(await readFile(SDK_CAPABILITIES, 'utf8')) as { builtins: { name: string }[] };
  const supported = new Set(sdk.builtins.map((b) => b.name));
  const capabilities = JSON.parse(current.stdout) as { builtins?: { name: string }[] };
  capabilities.builtins = (capabilities.builtins ?? []).filter((b) => supported.has(b.name));
  const path = join(work, 'capabilities.json');
  await writeFile(path, JSON.stringify(capabilities));
  return path;
}

/** Runs opa and returns its stdout; its output is shown on failure. @throws BuildError when it exits non-zero */
function run(args: string[], what: string): string {
  const result = spawnSync('opa', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.error) throw new BuildError(`${what}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new BuildError(
      `${what} failed (exit ${result.status}):\n${result.stdout}${result.stderr}`.trimEnd(),
    );
  }
  return result.stdout;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`build-policies: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
