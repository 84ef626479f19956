import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/**
 * Builds the web console (issue 15) with esbuild: `console/src/main.tsx` (Preact, JSX) and its CSS
 * into one minified ES module script and one stylesheet, both content-hashed, and `index.html`
 * naming them. `serve` runs it at start (into its data folder); the stack's bundling runs it into
 * the HTTP function's asset (`CLD_CONSOLE_DIR`), so what is deployed is built from the same
 * sources the browser tests drive. Nothing is fetched from a CDN: every byte is in these files.
 */

/**
 * Finds the console's source folder: this module's own folder when it runs from source, else the
 * nearest `console/` (with `src/main.tsx`) in a folder above the running file — a bundled CLI
 * (e.g. the kill harness's `test/.kill-bundle/cld.mjs`) runs from elsewhere in the project.
 * @param start the folder of the running module
 * @returns the folder holding `index.html` and `src/main.tsx`; `start` when none is found (the
 *   build then fails naming the missing entry point)
 */
export function findConsoleSource(start: string): string {
  const hasSources = (dir: string) =>
    existsSync(join(dir, 'src', 'main.tsx')) && existsSync(join(dir, 'index.html'));
  if (hasSources(start)) return start;
  for (let dir = start; ; dir = dirname(dir)) {
    if (hasSources(join(dir, 'console'))) return join(dir, 'console');
    if (dirname(dir) === dir) return start;
  }
}

/** The console's source folder ({@link findConsoleSource} from this module's folder). */
export const CONSOLE_SOURCE = findConsoleSource(dirname(fileURLToPath(import.meta.url)));

/** Largest JavaScript the console may ship, gzipped, in bytes (issue 15: ≤ 150 KB). */
export const MAX_CONSOLE_JS_GZIP_BYTES = 150 * 1024;

/** What a build wrote. */
export interface ConsoleBuild {
  dir: string;
  /** File names written (index.html, the script, the stylesheet). */
  files: string[];
  /** The script's size, raw and gzipped (level 9), in bytes. */
  js: { name: string; bytes: number; gzipBytes: number };
  css: { name: string; bytes: number; gzipBytes: number };
}

/**
 * Builds the console into `outDir` (emptied first).
 * @throws Error when esbuild fails, or when the script exceeds {@link MAX_CONSOLE_JS_GZIP_BYTES} gzipped
 */
export async function buildConsole(outDir: string): Promise<ConsoleBuild> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const result = await build({
    entryPoints: [join(CONSOLE_SOURCE, 'src', 'main.tsx')],
    outdir: outDir,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    metafile: true,
    write: true,
    logLevel: 'silent',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path));
  const js = outputs.find((name) => name.endsWith('.js'));
  const css = outputs.find((name) => name.endsWith('.css'));
  if (!js || !css) throw new Error(`console build wrote no script or stylesheet: ${outputs.join(', ')}`);
  const template = await readFile(join(CONSOLE_SOURCE, 'index.html'), 'utf8');
  await writeFile(join(outDir, 'index.html'), template.replace('%JS%', js).replace('%CSS%', css));
  const size = async (name: string) => {
    const bytes = await readFile(join(outDir, name));
    return { name, bytes: bytes.length, gzipBytes: gzipSync(bytes, { level: 9 }).length };
  };
  const built = { dir: outDir, files: ['index.html', js, css], js: await size(js), css: await size(css) };
  if (built.js.gzipBytes > MAX_CONSOLE_JS_GZIP_BYTES)
    throw new Error(
      `the console script is ${built.js.gzipBytes} bytes gzipped, over the ${MAX_CONSOLE_JS_GZIP_BYTES}-byte limit`,
    );
  return built;
}
