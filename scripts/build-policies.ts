import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
 * Needs OPA >= 0.61 on PATH to build. Without it, the committed bundles are checked instead:
 * - plain: one line saying whether they are fresh (built from the current sources), exit 0;
 * - `--require` (what `npm run deploy` passes): exit 0 when they are fresh, else exit 1 naming
 *   what changed.
 * With `--require` and fresh bundles nothing is rebuilt, even with opa on PATH (deploy ships what
 * was committed and tested). Any failure of opa itself exits 1.
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
  if (!opa.ok || values.require) {
    const check = checkBundles(POLICIES, out, functions);
    if (check.fresh) {
      const line = `build-policies: ${opa.ok ? '' : `${opa.why}; `}the bundles in ${shown} are fresh (built with opa ${check.manifest.opa} from the current sources); nothing to build`;
      process.stdout.write(`${line}\n`);
      return 0;
    }
    if (!opa.ok) {
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
  }
  if (!opa.ok) throw new BuildError('unreachable: opa missing');
  for (const fn of functions) {
    if (!existsSync(join(POLICIES, `${fn}.rego`))) throw new BuildError(`policies/${fn}.rego is missing`);
  }

  run(['test', POLICIES], 'opa test policies/');
  checkIndexCompilers(rules);
  const work = await mkdtemp(join(tmpdir(), 'cld-policies-'));
  try {
    const capabilities = await writeCapabilities(work);
    await mkdir(out, { recursive: true });
    const lib = join(POLICIES, 'lib', 'cld.rego');
    const targets = [
      ...functions.map((fn) => ({
        name: fn,
        entrypoints: [`cld/${fn}/decision`],
        files: [lib, join(POLICIES, `${fn}.rego`)],
      })),
      {
        name: PROBE_BUNDLE,
        entrypoints: ['cld/probe/glob_row', 'cld/probe/urn_row'],
        files: [lib, join(POLICIES, 'lib', 'probe.rego')],
      },
    ];
    const bundles: PolicyManifest['bundles'] = {};
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
    const manifest: PolicyManifest = { opa: opa.version, sources: policySources(POLICIES), bundles };
    await writeFile(join(out, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  process.stdout.write(`build-policies: ${functions.length} bundles built with opa ${opa.version}\n`);
  return 0;
}

/**
 * Checks that the Rego tests' index (`lib.index_rules`, what `opa test` decides with) is the data
 * the bundles get at run time (`compileRules()`, shared/policy/rules.ts), glob matchers included.
 * @throws BuildError naming the first function whose index differs
 */
function checkIndexCompilers(rules: ReturnType<typeof parseRulesDocument>): void {
  const query = 'x := {fn: index | index := data.cld.lib.index_rules(data.rules, data.functions[fn])}';
  const output = run(
    [
      'eval',
      '--format',
      'json',
      '-d',
      join(POLICIES, 'lib', 'cld.rego'),
      '-d',
      join(POLICIES, 'rules.json'),
      query,
    ],
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
