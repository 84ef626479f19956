import { statSync } from 'node:fs';
import { buildSdkModule } from '../infra/lib/sdk-module.js';

/**
 * `tsx scripts/build-sdk-module.ts <assetDir> <target>`, from the project (or installed package)
 * root: builds a function asset's AWS SDK module (`aws-sdk.cjs` and its stub packages under
 * `node_modules/`, infra/lib/sdk-module.ts) from the JavaScript files already in `assetDir`, for
 * esbuild's `target` (`node22`), with the SDK packages that resolve from the working directory,
 * and prints what it carries. The stack's afterBundling hook runs it last (infra/lib/bundling.ts
 * `sdkModuleCommands`); the package ships it (package.json `files`).
 * Exit 2 without `assetDir` or when it is not a directory; exit 1 when the build fails.
 */
const [dir, target] = process.argv.slice(2);
const problem =
  dir === undefined || dir === ''
    ? 'no asset directory given'
    : !statSync(dir, { throwIfNoEntry: false })?.isDirectory()
      ? `${dir} is not a directory`
      : target === undefined || !/^node\d+$/.test(target)
        ? `the target must be esbuild's node<major> (node22), got ${target ?? 'none'}`
        : undefined;
if (problem !== undefined) {
  process.stderr.write(
    `build-sdk-module: ${problem}; usage: tsx scripts/build-sdk-module.ts <assetDir> <target>\n`,
  );
  process.exit(2);
}
const built = buildSdkModule(dir as string, { projectRoot: process.cwd(), target: target as string });
const packages = Object.entries(built.packages).map(([name, exports]) => `${name} (${exports.length})`);
process.stdout.write(
  built.file === undefined
    ? `aws-sdk: ${dir} loads no SDK package\n`
    : `aws-sdk: ${built.bytes} B, ${packages.join(', ')} → ${built.file}\n`,
);
