import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors.js';
import { readTarGzEntry } from '../../shared/policy/bundle.js';
import { checkBundles, parseManifest, policySources } from '../../shared/policy/manifest.js';
import { compileRules } from '../../shared/policy/rules.js';
import { opaOnPath } from './fuzz.js';
import { FUNCTIONS, REPO, RULES } from './table.js';

const exec = promisify(execFile);

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'cld-build-policies-'));
}

/** Runs `npm run build:policies` as npm does (`tsx scripts/build-policies.ts`) with the given PATH. */
async function buildPolicies(args: string[], path: string) {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ['--import', 'tsx', 'scripts/build-policies.ts', ...args],
      { cwd: REPO, env: { HOME: process.env.HOME ?? '/tmp', PATH: path }, timeout: 60_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout: string; stderr: string };
    return { code: e.code ?? -1, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * A stand-in `opa` executable (the tests run without OPA), used only to drive the script's
 * success and failure paths: `version` prints the given version, `test` exits with the given
 * code, `eval` prints the given rule index, `capabilities --current` prints a small capabilities
 * document, and `build` writes a real gzipped tar bundle (GNU tar) whose `/policy.wasm` names the
 * entrypoints it was asked for. Every call is logged with its arguments.
 */
async function fakeOpa(options: {
  version: string;
  testExit?: number;
  /** What `opa eval` of lib.index_rules answers (default: compileRules of policies/rules.json, as the real one does). */
  index?: unknown;
}): Promise<{ dir: string; log: string }> {
  const dir = await tempDir();
  const log = join(dir, 'calls.log');
  const index = options.index ?? compileRules(RULES).cld.index;
  await writeFile(join(dir, 'eval.json'), JSON.stringify({ result: [{ bindings: { x: index } }] }));
  const script = `#!/bin/sh
echo "$*" >> '${log}'
case "$1" in
  version) echo "Version: ${options.version}"; echo "Build Commit: fake";;
  test) echo "FAIL: data.cld.cases_test.test_plan_cases"; exit ${options.testExit ?? 0};;
  eval) cat '${join(dir, 'eval.json')}';;
  capabilities) echo '{"builtins":[{"name":"glob.match"},{"name":"http.send"},{"name":"regex.match"}],"features":["rego_v1_import"],"future_keywords":["if","in"]}';;
  build)
    shift
    while [ $# -gt 0 ]; do
      case "$1" in
        -e) entry="$entry$2 "; shift 2;;
        -o) out="$2"; shift 2;;
        --capabilities) cp "$2" '${log}.capabilities.json'; shift 2;;
        *) shift;;
      esac
    done
    work=$(mktemp -d)
    printf 'wasm:%s' "$entry" > "$work/policy.wasm"; entry=
    echo '{}' > "$work/data.json"
    tar -czPf "$out" -C "$work" --transform 's,^,/,' data.json policy.wasm;;
  *) echo "unexpected: $*" >&2; exit 2;;
esac
`;
  await writeFile(join(dir, 'opa'), script);
  await chmod(join(dir, 'opa'), 0o755);
  return { dir, log };
}

describe('npm run build:policies', () => {
  it('without opa on PATH checks the committed bundles: fresh, one line and exit 0, building nothing', async () => {
    const result = await buildPolicies([], await tempDir());

    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      'build-policies: opa not found on PATH; the bundles in policies/dist are fresh (built with opa 0.61.0 from the current sources); nothing to build',
    ]);
    expect(result.stderr).toBe('');
  });

  it('without opa, stale bundles: a warning naming what is stale and exit 0, or exit 1 with --require (npm run deploy)', async () => {
    const out = await tempDir();

    const lenient = await buildPolicies(['--out', out], await tempDir());
    const strict = await buildPolicies(['--require', '--out', out], await tempDir());

    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain('opa not found on PATH, and the bundles in');
    expect(lenient.stderr).toContain('are stale (install OPA >= 0.61.0 and run npm run build:policies)');
    expect(lenient.stderr).toContain('  - manifest.json is missing');
    expect(strict.code).toBe(1);
    expect(strict.stdout).toBe('');
    expect(strict.stderr).toContain('not deploying policies they were not built from');
    expect(strict.stderr).toContain('  - manifest.json is missing');
    expect(await readdir(out)).toEqual([]);
  });

  it('treats an opa older than 0.61 as missing', async () => {
    const opa = await fakeOpa({ version: '0.60.0' });
    const path = `${opa.dir}:/usr/bin:/bin`;

    const lenient = await buildPolicies(['--out', await tempDir()], path);
    const strict = await buildPolicies(['--require', '--out', await tempDir()], path);

    expect(lenient.code).toBe(0);
    expect(lenient.stderr).toContain('opa 0.60.0 is older than 0.61.0, and the bundles');
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('opa 0.60.0 is older than 0.61.0, and the bundles');
    expect((await readFile(opa.log, 'utf8')).trim().split('\n')).toEqual(['version', 'version']);
  });

  it('with --require and opa on PATH rebuilds elsewhere and compares byte for byte, writing nothing: differences exit 1', async () => {
    const opa = await fakeOpa({ version: '0.61.0' });
    const out = join(await tempDir(), 'dist');
    await cp(join(REPO, 'policies', 'dist'), out, { recursive: true });

    const result = await buildPolicies(['--require', '--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('are not what the current sources build; not deploying them');
    expect(result.stderr).toContain('  - plan.wasm differs from a rebuild with opa 0.61.0\n');
    expect(result.stderr).toContain('  - manifest.json differs from a rebuild with opa 0.61.0\n');
    for (const file of await readdir(join(REPO, 'policies', 'dist'))) {
      expect(
        (await readFile(join(out, file))).equals(await readFile(join(REPO, 'policies', 'dist', file))),
        file,
      ).toBe(true);
    }
    const calls = (await readFile(opa.log, 'utf8')).trim().split('\n');
    expect(calls.filter((c) => c.startsWith('build ')).every((c) => !c.includes(` -o ${out}`))).toBe(true);
  });

  it('with --require, bundles equal to a rebuild exit 0', async () => {
    const opa = await fakeOpa({ version: '0.61.0' });
    const out = join(await tempDir(), 'dist');
    expect((await buildPolicies(['--out', out], `${opa.dir}:/usr/bin:/bin`)).code).toBe(0);

    const result = await buildPolicies(['--require', '--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      `equal a rebuild with opa 0.61.0, byte for byte (${FUNCTIONS.length + 2} files)`,
    );
  });

  it('with --require and another opa version than the manifest names: no byte comparison, the manifest decides', async () => {
    const opa = await fakeOpa({ version: '1.4.2' });
    const out = join(await tempDir(), 'dist');
    await cp(join(REPO, 'policies', 'dist'), out, { recursive: true });

    const fresh = await buildPolicies(['--require', '--out', out], `${opa.dir}:/usr/bin:/bin`);
    await writeFile(join(out, 'plan.wasm'), 'changed');
    const stale = await buildPolicies(['--require', '--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(fresh.code).toBe(0);
    expect(fresh.stderr).toContain(
      'were built with opa 0.61.0, this is opa 1.4.2: a rebuild cannot be compared',
    );
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain('  - plan.wasm is not the file the build wrote');
    expect((await readFile(opa.log, 'utf8')).trim().split('\n')).toEqual(['version', 'version']);
  });

  it('stops with exit 1 when lib.index_rules and compileRules compile the rules differently', async () => {
    const index = compileRules(RULES).cld.index;
    const opa = await fakeOpa({ version: '0.61.0', index: { ...index, plan: {} } });
    const out = join(await tempDir(), 'dist');

    const result = await buildPolicies(['--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'lib.index_rules (policies/lib/cld.rego) and compileRules (shared/policy/rules.ts) compile the rules of plan differently',
    );
    expect(await readdir(join(out, '..'))).toEqual([]);
  });

  it('runs opa test, checks the index compilers, builds per function and the probe, and writes the manifest', async () => {
    const opa = await fakeOpa({ version: '1.4.2' });
    const out = join(await tempDir(), 'dist');

    const result = await buildPolicies(['--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect((await readdir(out)).sort()).toEqual(
      [...FUNCTIONS.map((fn) => `${fn}.wasm`), 'manifest.json', 'probe.wasm'].sort(),
    );
    for (const fn of FUNCTIONS) {
      expect(await readFile(join(out, `${fn}.wasm`), 'utf8')).toBe(`wasm:cld/${fn}/decision `);
    }
    expect(await readFile(join(out, 'probe.wasm'), 'utf8')).toBe(
      'wasm:cld/probe/glob_row cld/probe/urn_row ',
    );
    const calls = (await readFile(opa.log, 'utf8')).trim().split('\n');
    expect(calls[0]).toBe('version');
    // Paths relative to the repository (opa runs there): the bundles do not depend on the checkout path.
    expect(calls[1]).toBe('test policies');
    expect(calls[2]).toMatch(/^eval --format json -d \S+cld\.rego -d \S+rules\.json x := /);
    const builds = calls.filter((c) => c.startsWith('build '));
    expect(builds).toHaveLength(FUNCTIONS.length + 1);
    expect(builds[0]).toMatch(
      new RegExp(
        `^build -t wasm -e cld/${FUNCTIONS[0]}/decision --capabilities \\S+ -o \\S+ policies/lib/cld.rego policies/${FUNCTIONS[0]}.rego$`,
      ),
    );
    // The capabilities passed are opa's own, cut to the builtins @open-policy-agent/opa-wasm runs.
    const capabilities = JSON.parse(await readFile(`${opa.log}.capabilities.json`, 'utf8'));
    expect(capabilities.builtins.map((b: { name: string }) => b.name)).toEqual(['glob.match', 'regex.match']);
    expect(capabilities.features).toEqual(['rego_v1_import']);
    expect(result.stdout).toContain(`build-policies: ${FUNCTIONS.length} bundles built with opa 1.4.2`);
    // The manifest makes the new bundles fresh.
    const manifest = parseManifest(await readFile(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.opa).toBe('1.4.2');
    expect(manifest.sources).toEqual(policySources(join(REPO, 'policies')));
    expect(checkBundles(join(REPO, 'policies'), out, FUNCTIONS).fresh).toBe(true);
  });

  it('stops with exit 1 and opa test output when the Rego tests fail', async () => {
    const opa = await fakeOpa({ version: '0.61.0', testExit: 2 });
    const out = join(await tempDir(), 'dist');

    const result = await buildPolicies(['--out', out], `${opa.dir}:/usr/bin:/bin`);

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('opa test policies/ failed (exit 2)');
    expect(result.stderr).toContain('FAIL: data.cld.cases_test.test_plan_cases');
    expect(await readdir(join(out, '..'))).toEqual([]);
  });
});

// The real opa: CI has none (README, "Building the policies"), so this runs where one is installed.
describe.runIf(opaOnPath())('npm run build:policies with the real opa', () => {
  it('reproduces the committed bundles byte for byte from two checkout paths (--require in each)', async () => {
    const roots = [join(await tempDir(), 'a'), join(await tempDir(), 'a-checkout-at-a-longer-path', 'b')];
    for (const root of roots) {
      await mkdir(root, { recursive: true });
      for (const dir of ['policies', 'scripts', 'shared']) {
        await cp(join(REPO, dir), join(root, dir), { recursive: true });
      }
      for (const file of ['package.json', 'tsconfig.json']) await cp(join(REPO, file), join(root, file));
      await symlink(join(REPO, 'node_modules'), join(root, 'node_modules'));

      const { stdout } = await exec(
        process.execPath,
        ['--import', 'tsx', 'scripts/build-policies.ts', '--require'],
        {
          cwd: root,
          env: { HOME: process.env.HOME ?? '/tmp', PATH: process.env.PATH ?? '' },
          timeout: 400_000,
        },
      );

      expect(stdout).toContain(`equal a rebuild with opa `);
      expect(stdout).toContain(`byte for byte (${FUNCTIONS.length + 2} files)`);
    }
  }, 900_000); // Two full builds (opa test, 11 wasm bundles each): about 10 s of CPU, minutes of wall time at load 10+.
});

describe('readTarGzEntry (bundles made by GNU tar)', () => {
  async function archive(
    files: Record<string, Buffer | string>,
    tarArgs: string[] = [],
  ): Promise<{ bytes: Buffer; names: string[] }> {
    const dir = await tempDir();
    const src = join(dir, 'src');
    for (const [name, content] of Object.entries(files)) {
      await mkdir(join(src, name, '..'), { recursive: true });
      await writeFile(join(src, name), content);
    }
    const target = join(dir, 'bundle.tar.gz');
    await exec('tar', ['-czPf', target, '-C', src, ...tarArgs, ...Object.keys(files)]);
    return { bytes: await readFile(target), names: Object.keys(files) };
  }

  it('reads /policy.wasm byte for byte, with or without the leading slash', async () => {
    const wasm = randomBytes(70_000);
    const { bytes } = await archive({ 'data.json': '{}', 'policy.wasm': wasm }, ['--transform', 's,^,/,']);

    expect(readTarGzEntry(bytes, '/policy.wasm')?.equals(wasm)).toBe(true);
    expect(readTarGzEntry(bytes, 'policy.wasm')?.equals(wasm)).toBe(true);
    expect(readTarGzEntry(bytes, '/data.json')?.toString()).toBe('{}');
    expect(readTarGzEntry(bytes, '/missing.wasm')).toBeUndefined();
  });

  const longDir = `${'a'.repeat(60)}/${'b'.repeat(60)}/${'c'.repeat(60)}`;
  it.each([
    ['ustar (name prefix)', ['--format=ustar']],
    ['gnu (L long-name entry)', ['--format=gnu']],
    ['pax (x extended header)', ['--format=pax']],
  ])('reads a long path in %s format', async (_label, args) => {
    const { bytes } = await archive({ [`${longDir}/policy.wasm`]: 'deep', 'policy.wasm': 'top' }, args);

    expect(readTarGzEntry(bytes, `${longDir}/policy.wasm`)?.toString()).toBe('deep');
    expect(readTarGzEntry(bytes, 'policy.wasm')?.toString()).toBe('top');
  });

  it('rejects what is not gzip, a corrupt header and a truncated archive with ValidationError', async () => {
    const { bytes } = await archive({ 'policy.wasm': 'x'.repeat(2000) });
    const { gunzipSync } = await import('node:zlib');
    const tar = gunzipSync(bytes);
    const corrupt = Buffer.from(tar);
    corrupt[10] = (corrupt[10] as number) ^ 0xff;
    const truncated = tar.subarray(0, 1024);

    expect(() => readTarGzEntry(Buffer.from('plain text'), 'policy.wasm')).toThrow(ValidationError);
    expect(() => readTarGzEntry(gzipSync(corrupt), 'policy.wasm')).toThrow(/bad checksum/);
    expect(() => readTarGzEntry(gzipSync(truncated), 'policy.wasm')).toThrow(/runs past the archive/);
  });
});
