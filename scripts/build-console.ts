import { join } from 'node:path';
import { buildConsole, CONSOLE_SOURCE } from '../console/build.js';

/**
 * `tsx scripts/build-console.ts [outDir]` (`npm run build:console`): builds the web console
 * (console/build.ts) into `outDir` (default `console/dist`) and prints the sizes. The stack's
 * bundling hook runs it into the `http` asset (infra/lib/bundling.ts `consoleCommands`).
 * A script of its own, not a "run as main" check in console/build.ts: bundled into another
 * program (the kill harness's CLI bundle), such a check would fire for that program's arguments.
 * @throws Error (exit 1) when the build fails or the script is over the 150 KB gzipped limit
 */
const out = process.argv[2] ?? join(CONSOLE_SOURCE, 'dist');
const built = await buildConsole(out);
process.stdout.write(
  `console: ${built.js.name} ${built.js.bytes} B (${built.js.gzipBytes} B gzipped), ${built.css.name} ${built.css.bytes} B (${built.css.gzipBytes} B gzipped) → ${out}\n`,
);
