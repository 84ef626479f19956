import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLE_SETTINGS, PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { readTarGzEntry } from '../../shared/policy/bundle.js';

/**
 * The function bundles replace the `yaml` package (opa-wasm's only use of it is the `yaml.*` Rego
 * builtins) with shared/policy/yaml-unavailable.ts. That is sound only while no compiled policy
 * calls those builtins: checked here on every bundle in policies/dist, with the reader proven on
 * a fixture policy that does call them (test/policy/fixtures/yaml-probe, built with
 * `opa build -t wasm -e yaml_probe/decision yaml_probe.rego`). The fixture also shows what a
 * bundle does if one ever did: its evaluation fails with the stand-in's error, not a wrong decision.
 */

const DIST = join(PROJECT_ROOT, 'policies', 'dist');
const PROBE = readTarGzEntry(
  readFileSync(join(PROJECT_ROOT, 'test', 'policy', 'fixtures', 'yaml-probe', 'bundle.tar.gz')),
  '/policy.wasm',
) as Buffer;
const run = promisify(execFile);
// Under node_modules so the entry below resolves packages as a function's code does. A fresh clone
// (`npm ci`) has no node_modules/.cache yet: create it, or this file cannot even load.
const CACHE = join(PROJECT_ROOT, 'node_modules', '.cache');
mkdirSync(CACHE, { recursive: true });
const work = mkdtempSync(join(CACHE, 'cld-yaml-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** What opa-wasm's `LoadedPolicy` holds (not in its typings): the instance and its memory. */
interface PolicyInternals {
  wasmInstance: { exports: { builtins(): number; opa_json_dump(address: number): number } };
  mem: { buffer: ArrayBuffer };
}

/** The builtins a compiled policy calls (name → id), as its `builtins` export lists them (OPA Wasm ABI). */
async function builtinsOf(wasm: Uint8Array): Promise<Record<string, number>> {
  const policy = (await loadPolicy(wasm)) as unknown as PolicyInternals;
  const exports = policy.wasmInstance.exports;
  const start = exports.opa_json_dump(exports.builtins());
  const memory = new Uint8Array(policy.mem.buffer);
  const end = memory.indexOf(0, start);
  return JSON.parse(Buffer.from(memory.subarray(start, end)).toString('utf8'));
}

describe('the yaml.* Rego builtins', () => {
  it('are listed by the builtins reader for a policy that calls them (the fixture)', async () => {
    expect(Object.keys(await builtinsOf(PROBE)).sort()).toEqual(['yaml.is_valid', 'yaml.unmarshal']);
  });

  it('are called by no compiled policy in policies/dist', async () => {
    const wasms = readdirSync(DIST).filter((file) => file.endsWith('.wasm'));
    expect(wasms.length).toBeGreaterThan(5);
    for (const file of wasms) {
      const names = Object.keys(await builtinsOf(readFileSync(join(DIST, file))));
      expect({ file, yaml: names.filter((name) => name.startsWith('yaml.')) }).toEqual({ file, yaml: [] });
    }
  });

  it('work outside a bundle (opa-wasm with the real yaml package)', async () => {
    const policy = await loadPolicy(PROBE);
    expect(policy.evaluate({ text: 'a: 1' })).toEqual([{ result: { valid: true, value: { a: 1 } } }]);
  });

  it('fail with the stand-in error inside a bundle built with the functions settings', async () => {
    const entry = join(work, 'entry.mjs');
    writeFileSync(
      entry,
      `import { readFileSync } from 'node:fs';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
const policy = await loadPolicy(readFileSync(process.argv[2]));
try {
  console.log(JSON.stringify({ ok: policy.evaluate({ text: 'a: 1' }) }));
} catch (error) {
  console.log(JSON.stringify({ error: { name: error.name, message: error.message } }));
}
`,
    );
    mkdirSync(join(work, 'out'), { recursive: true });
    const outfile = join(work, 'out', 'probe.mjs');
    const result = await build({
      absWorkingDir: PROJECT_ROOT,
      entryPoints: [entry],
      bundle: true,
      outfile,
      format: BUNDLE_SETTINGS.format,
      platform: BUNDLE_SETTINGS.platform,
      target: BUNDLE_SETTINGS.target,
      mainFields: [...BUNDLE_SETTINGS.mainFields],
      alias: { ...BUNDLE_SETTINGS.alias },
      banner: { js: BUNDLE_SETTINGS.banner },
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs).toContain('shared/policy/yaml-unavailable.ts');
    expect(inputs.filter((input) => input.includes('node_modules/yaml/'))).toEqual([]);
    const wasm = join(work, 'probe.wasm');
    writeFileSync(wasm, PROBE);

    const { stdout } = await run(process.execPath, [outfile, wasm]);

    expect(JSON.parse(stdout)).toEqual({
      error: {
        name: 'YamlBuiltinsUnavailableError',
        message: expect.stringContaining('the yaml.* Rego builtins are not in the function bundles'),
      },
    });
  });
});
