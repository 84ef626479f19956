import { build } from 'esbuild';

/**
 * `tsx scripts/build-cli.ts` (`npm run build:cli`, run by `prepare`, so `npm ci` builds it): bundles
 * the CLI (cli/main.ts) into `dist/cld.mjs`, the `cld` bin of package.json, with each command's
 * modules in chunks of their own under `dist/chunks/` (esbuild `splitting`: main.ts imports them with
 * `import()`), so `cld --help` loads only main.ts and `cld show` only what showing needs. Packages
 * stay external: they are resolved from `node_modules` at run time, as under tsx (the bin runs from
 * the clone it was built in). `dist/` is git-ignored.
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
    packages: 'external',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    sourcemap: true,
    logLevel: 'warning',
  });
}

await buildCli(process.argv[2]);
