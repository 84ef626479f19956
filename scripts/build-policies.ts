import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readTarGzEntry } from '../shared/policy/bundle.js';
import { parseRulesDocument } from '../shared/policy/rules.js';

/**
 * `npm run build:policies [-- --require] [-- --out <dir>]`: compiles each function's policy
 * (policies/<function>.rego + policies/lib/cld.rego, one per entry of policies/rules.json
 * "functions") with `opa build -t wasm -e cld/<function>/decision` and writes the bundle's
 * `/policy.wasm` to `<out>/<function>.wasm` (default policies/dist, not committed). First it runs
 * `opa test policies/` (the Rego tests, the decision table included) and stops if they fail.
 * The compile is limited to the builtins `@open-policy-agent/opa-wasm` provides (its
 * capabilities.json intersected with `opa capabilities --current`).
 *
 * Needs OPA ≥ 0.61 on PATH. Without it: one line saying so, exit 0 (the functions then use the
 * built-in evaluator), or exit 1 with `--require` (what `npm run deploy` passes). Any failure
 * of opa itself exits 1.
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
  const opa = findOpa();
  if (!opa.ok) {
    const install = `install OPA >= ${MIN_VERSION.join('.')}`;
    if (values.require) {
      process.stderr.write(
        `build-policies: ${opa.why}; cannot build the policy bundles --require asks for (${install})\n`,
      );
      return 1;
    }
    const line = `build-policies: ${opa.why}; skipped (functions use the built-in evaluator; ${install} to build the wasm bundles)`;
    process.stdout.write(`${line}\n`);
    return 0;
  }

  const rules = parseRulesDocument(JSON.parse(await readFile(join(POLICIES, 'rules.json'), 'utf8')));
  const functions = Object.keys(rules.functions);
  for (const fn of functions) {
    if (!existsSync(join(POLICIES, `${fn}.rego`))) throw new BuildError(`policies/${fn}.rego is missing`);
  }

  run(['test', POLICIES], 'opa test policies/');
  const work = await mkdtemp(join(tmpdir(), 'cld-policies-'));
  try {
    const capabilities = await writeCapabilities(work);
    await mkdir(out, { recursive: true });
    for (const fn of functions) {
      const bundle = join(work, `${fn}.tar.gz`);
      run(
        [
          'build',
          '-t',
          'wasm',
          '-e',
          `cld/${fn}/decision`,
          ...(capabilities ? ['--capabilities', capabilities] : []),
          '-o',
          bundle,
          join(POLICIES, 'lib', 'cld.rego'),
          join(POLICIES, `${fn}.rego`),
        ],
        `opa build ${fn}`,
      );
      const wasm = readTarGzEntry(await readFile(bundle), '/policy.wasm');
      if (!wasm) throw new BuildError(`the bundle of ${fn} has no /policy.wasm`);
      const target = join(out, `${fn}.wasm`);
      await writeFile(target, wasm);
      process.stdout.write(
        `build-policies: ${relative(ROOT, target) || target} (${(wasm.length / 1024).toFixed(0)} KiB)\n`,
      );
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  process.stdout.write(`build-policies: ${functions.length} bundles built with ${opa.version}\n`);
  return 0;
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
  return { ok: true, version: `opa ${version.join('.')}` };
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

/** Runs opa; its output is shown on failure. @throws BuildError when it exits non-zero */
function run(args: string[], what: string): void {
  const result = spawnSync('opa', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.error) throw new BuildError(`${what}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new BuildError(
      `${what} failed (exit ${result.status}):\n${result.stdout}${result.stderr}`.trimEnd(),
    );
  }
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
