import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/**
 * `tsx scripts/build-cli.ts` (`npm run build:cli`, run by `prepare`, so `npm ci` builds it): bundles
 * the CLI (cli/main.ts) into `dist/cld.mjs`, the `cld` bin of package.json, with each command's
 * modules in chunks of their own under `dist/chunks/` (esbuild `splitting`: main.ts imports them with
 * `import()`), so `cld --help` loads only main.ts and `cld show` only what showing needs. Packages
 * stay external ({@link externalPackages}): they are resolved from `node_modules` at run time, as
 * under tsx (the bin runs from the clone it was built in). `dist/` is git-ignored.
 * @throws Error (exit 1) when the build fails
 */
export async function buildCli(outdir = 'dist'): Promise<void> {
  await build({
    entryPoints: { cld: 'cli/main.ts' },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [externalPackages(BUNDLED_PACKAGES)],
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: true,
    logLevel: 'warning',
  });
}

/**
 * Packages bundled into the CLI all the same: zod, which every command loads to parse its settings.
 * As an external package its ESM entry loads every module of zod, locales included (about 0.25 s
 * of CPU per start, as much as the rest of `cld show`); bundled, esbuild keeps what the schemas
 * use, as in the function bundles (infra/lib/bundling.ts).
 */
const BUNDLED_PACKAGES = ['zod'];

/**
 * An esbuild plugin that leaves every package import (a bare specifier, `node:` built-ins
 * included) external, as esbuild's `packages: 'external'` does, except the packages in `bundled`
 * and their subpaths.
 */
function externalPackages(bundled: readonly string[]): Plugin {
  return {
    name: 'external-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, ({ path }) => {
        if (bundled.some((name) => path === name || path.startsWith(`${name}/`))) return undefined;
        return { path, external: true };
      });
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildCli(process.argv[2]);
