import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as real from 'node:stream/web';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_FILE, esbuildOptions } from '../../infra/lib/bundling.js';
import { FUNCTIONS } from '../../infra/lib/functions.js';

/**
 * `node:stream/web` in the function bundles is shared/runtime/stream-web-lazy.ts (an alias in
 * infra/lib/bundling.ts): Node's own classes, loaded at their first use rather than at import.
 */

const run = promisify(execFile);
let work: string;

/** Bundles `contents` with function `name`'s esbuild options into `<work>/<dir>/index.mjs`. */
async function bundle(dir: string, contents: string, name = 'assistant'): Promise<string> {
  const out = join(work, dir);
  const { entryPoints: _entry, ...options } = esbuildOptions(name, 'unused.ts', out);
  await build({
    ...options,
    stdin: { contents, resolveDir: options.absWorkingDir as string, loader: 'ts', sourcefile: `${dir}.ts` },
  });
  return join(out, BUNDLE_FILE);
}

/** Imports `file` in a plain `node` process, runs `after` (JS, `m` the module), prints whether `stream/web` was loaded before and after. */
async function loadsStreamWeb(
  file: string,
  after: string,
): Promise<{ atImport: boolean; afterUse: boolean }> {
  const code = [
    `const m = await import(${JSON.stringify(pathToFileURL(file).href)});`,
    "const loaded = () => process.moduleLoadList.includes('NativeModule stream/web');",
    'const atImport = loaded();',
    after,
    'process.stdout.write(JSON.stringify({ atImport, afterUse: loaded() }));',
  ].join('\n');
  const env = { PATH: process.env.PATH ?? '', POWERTOOLS_LOG_LEVEL: 'SILENT' };
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], {
    env,
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { atImport: boolean; afterUse: boolean };
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'cld-stream-web-'));
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('node:stream/web in the function bundles', () => {
  it("gives Node's own classes: instances, instanceof, prototypes and statics as the real module's", async () => {
    const file = await bundle(
      'classes',
      "export * from 'node:stream/web'; export { default } from 'node:stream/web';",
    );
    const lazy = (await import(pathToFileURL(file).href)) as typeof real;
    expect(Object.keys(lazy).sort()).toEqual(Object.keys(real).sort());
    const defaults = (lazy as unknown as { default: Record<string, unknown> }).default;
    expect(Object.keys(defaults).sort()).toEqual(
      Object.keys(real)
        .filter((k) => k !== 'default')
        .sort(),
    );

    const made = new lazy.ReadableStream({
      start(controller) {
        controller.enqueue('a');
        controller.close();
      },
    });
    expect(made).toBeInstanceOf(real.ReadableStream);
    expect(Object.getPrototypeOf(made)).toBe(real.ReadableStream.prototype);
    expect(new real.ReadableStream()).toBeInstanceOf(lazy.ReadableStream);
    expect(new globalThis.ReadableStream() instanceof lazy.ReadableStream).toBe(true);
    expect({} instanceof lazy.ReadableStream).toBe(false);
    expect(lazy.ReadableStream.prototype).toBe(real.ReadableStream.prototype);
    const chunks: string[] = [];
    for await (const chunk of made) chunks.push(chunk as string);
    expect(chunks).toEqual(['a']);
    expect(new lazy.TextEncoderStream()).toBeInstanceOf(real.TextEncoderStream);
    expect(new lazy.CountQueuingStrategy({ highWaterMark: 3 }).highWaterMark).toBe(3);
  });

  it('loads Node’s web streams at the first use, not at import', async () => {
    const file = await bundle('use', "export { ReadableStream } from 'node:stream/web';");
    expect(await loadsStreamWeb(file, 'new m.ReadableStream();')).toEqual({
      atImport: false,
      afterUse: true,
    });
  });

  it('the assistant bundle (Middy core) imports without loading them', async () => {
    const file = await bundle('assistant', `export * from './${FUNCTIONS.assistant.entry}';`);
    expect(await loadsStreamWeb(file, '')).toEqual({ atImport: false, afterUse: false });
  });
});
