import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';

/**
 * `tsx scripts/build-construct.ts [outdir]` (`npm run build:construct`, run by `prepack`, so
 * `npm pack` ships it): the `Cld` construct (infra/lib/cld.ts) as the package's `./construct`
 * export, for a CDK app of one's own that runs on plain Node.js (no tsx, no ts-node):
 * - `<outdir>/index.mjs`: infra/lib/cld.ts and what it imports from infra/ and shared/, bundled
 *   by esbuild into one ES module; packages (`aws-cdk-lib`, `constructs`, `zod`, ...) stay
 *   external, resolved from the app's `node_modules`, so the app and the construct share one
 *   `aws-cdk-lib` (two copies would not mix constructs).
 * - `<outdir>/client.mjs`: the typed HTTP API client (shared/client/index.ts, on `openapi-fetch`),
 *   the package's `./client` export, for a plain Node.js or browser consumer.
 * - `<outdir>/types/`: the declarations tsc emits for both (tsconfig.construct.json); the entries
 *   are `types/infra/lib/cld.d.ts` and `types/shared/client/index.d.ts`.
 * The Lambda code is not in the bundle: the construct bundles each function from the package's
 * own `functions/`, `shared/` and `policies/` at synth (infra/lib/bundling.ts `PROJECT_ROOT`
 * is the package root, found from the module's location). `dist/` is git-ignored.
 * @throws Error (exit 1) when the build or the declarations fail
 */
export async function buildConstruct(outdir = join('dist', 'construct')): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: { index: 'infra/lib/cld.ts', client: 'shared/client/index.ts' },
    outdir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outExtension: { '.js': '.mjs' },
    sourcemap: true,
    logLevel: 'warning',
  });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.construct.json', '--outDir', join(outdir, 'types')], {
    stdio: 'inherit',
  });
  // An entry at the top of the types, for editors that open the folder.
  writeFileSync(join(outdir, 'types', 'index.d.ts'), "export * from './infra/lib/cld.js';\n");
}

await buildConstruct(process.argv[2]);
