import { statSync } from 'node:fs';
import { buildSdkModule } from '../infra/lib/sdk-module.js';

/**
 * `tsx scripts/build-sdk-module.ts <assetDir>`: builds a function asset's AWS SDK module
 * (`aws-sdk.cjs` and its stub packages under `node_modules/`, infra/lib/sdk-module.ts) from the
 * JavaScript files already in `assetDir`, and prints what it carries. The stack's afterBundling
 * hook runs it last (infra/lib/bundling.ts `sdkModuleCommands`).
 * Exit 2 without `assetDir` or when it is not a directory; exit 1 when the build fails.
 */
const dir = process.argv[2];
if (dir === undefined || dir === '' || !statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
  process.stderr.write(
    `build-sdk-module: ${dir ? `${dir} is not a directory` : 'no asset directory given'}; usage: tsx scripts/build-sdk-module.ts <assetDir>\n`,
  );
  process.exit(2);
}
const built = buildSdkModule(dir);
const packages = Object.entries(built.packages).map(([name, exports]) => `${name} (${exports.length})`);
process.stdout.write(
  built.file === undefined
    ? `aws-sdk: ${dir} loads no SDK package\n`
    : `aws-sdk: ${built.bytes} B, ${packages.join(', ')} → ${built.file}\n`,
);
