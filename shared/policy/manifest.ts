import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import * as z from 'zod';
import { ValidationError } from '../errors.js';

/**
 * The manifest of the compiled policy bundles (`policies/dist/manifest.json`, written by
 * `npm run build:policies`): which sources they were built from (sha256 of every Rego file under
 * policies/ and of the rules data policies/rules.json), with which OPA, and the sha256 of each
 * bundle. The bundles are committed; {@link checkBundles} says whether they still match the
 * sources (test/policy/bundles-fresh.test.ts, and `npm run deploy` before it ships them).
 */

/** File name of the manifest in the bundle directory. */
export const MANIFEST_FILE = 'manifest.json';

/** Name of the test-only bundle (policies/lib/probe.rego) beside the functions' bundles. */
export const PROBE_BUNDLE = 'probe';

const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in hex');

/** The manifest. Paths are relative to policies/ with `/` separators (`lib/cld.rego`, `rules.json`). */
export const PolicyManifestSchema = z.strictObject({
  /** OPA version that built the bundles (`0.61.0`). */
  opa: z.string().regex(/^\d+\.\d+\.\d+$/),
  /** sha256 of each source file. */
  sources: z.record(z.string(), Sha256Schema),
  /** Per bundle (`<function>` and `probe`): its file in the bundle directory, sha256 and entrypoints. */
  bundles: z.record(
    z.string(),
    z.strictObject({ file: z.string(), sha256: Sha256Schema, entrypoints: z.array(z.string()).min(1) }),
  ),
});
export type PolicyManifest = z.infer<typeof PolicyManifestSchema>;

/** Hex sha256 of bytes. */
export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The sources the bundles depend on, with their sha256: every `.rego` file under `policiesDir`
 * (tests included: `opa test` runs as part of the build) but those under `dist/`, and `rules.json`.
 * The decision table (cases.json) is not a source: vitest runs it on the committed bundles.
 * Synchronous (a few small files; the CDK app checks the bundles while it builds the stack).
 * @throws Error when `policiesDir` cannot be read
 */
export function policySources(policiesDir: string): Record<string, string> {
  const entries = readdirSync(policiesDir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(policiesDir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .filter((path) => (path.endsWith('.rego') && !path.startsWith('dist/')) || path === 'rules.json')
    .sort();
  const sources: Record<string, string> = {};
  for (const path of files) sources[path] = sha256(readFileSync(join(policiesDir, path)));
  return sources;
}

/** The result of {@link checkBundles}. */
export type BundleCheck =
  | { fresh: true; manifest: PolicyManifest }
  | { fresh: false; manifest: PolicyManifest | undefined; problems: string[] };

/**
 * Whether the bundles in `distDir` were built from the sources now in `policiesDir`: the manifest
 * exists and parses, lists exactly the current sources with their current sha256, and every bundle
 * it lists (and one per function in `functions`, plus the probe) exists with its recorded sha256.
 * Synchronous: `npm run build:policies` and the CDK app (infra/lib/checks.ts, which fails synth on
 * stale bundles) both call it.
 * @param functions the function names of policies/rules.json
 * @returns fresh, or the problems (one line each, naming files)
 */
export function checkBundles(
  policiesDir: string,
  distDir: string,
  functions: readonly string[],
): BundleCheck {
  let manifest: PolicyManifest;
  try {
    manifest = parseManifest(readFileSync(join(distDir, MANIFEST_FILE), 'utf8'));
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? `${MANIFEST_FILE} is missing`
        : (error as Error).message;
    return { fresh: false, manifest: undefined, problems: [why] };
  }
  const problems: string[] = [];
  const current = policySources(policiesDir);
  for (const [path, digest] of Object.entries(current)) {
    const built = manifest.sources[path];
    if (built === undefined) problems.push(`policies/${path} is new since the bundles were built`);
    else if (built !== digest) problems.push(`policies/${path} changed since the bundles were built`);
  }
  for (const path of Object.keys(manifest.sources)) {
    if (!(path in current)) problems.push(`policies/${path} was removed since the bundles were built`);
  }
  for (const name of [...functions, PROBE_BUNDLE]) {
    if (!manifest.bundles[name]) problems.push(`the manifest lists no bundle for ${name}`);
  }
  for (const [name, bundle] of Object.entries(manifest.bundles)) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(distDir, bundle.file));
    } catch {
      problems.push(`${bundle.file} (bundle ${name}) is missing`);
      continue;
    }
    if (sha256(bytes) !== bundle.sha256) problems.push(`${bundle.file} is not the file the build wrote`);
  }
  return problems.length === 0 ? { fresh: true, manifest } : { fresh: false, manifest, problems };
}

/** Parses manifest JSON. @throws ValidationError naming what is wrong */
export function parseManifest(text: string): PolicyManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`${MANIFEST_FILE} is not JSON`, { cause: error });
  }
  const parsed = PolicyManifestSchema.safeParse(json);
  if (!parsed.success) {
    throw new ValidationError(`${MANIFEST_FILE} is malformed: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
