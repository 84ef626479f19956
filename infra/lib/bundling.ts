import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, type ICommandHooks, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * How a function is bundled, in one place: the stack's `NodejsFunction`s
 * ({@link nodejsBundling}), `npm run bundle:report` and the bundle tests ({@link esbuildOptions})
 * use the same settings, so what is measured and tested is what is deployed. `esbuildOptions`
 * mirrors the esbuild command line aws-lambda-nodejs builds from `BundlingOptions`
 * (aws-cdk-lib 2.276 `Bundling.buildEsbuildArgs`); test/infra/bundles.test.ts checks both
 * give byte-identical output.
 */

/** The project root (where package.json and package-lock.json are). */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Lambda's Node.js runtime the bundles target (`Runtime.NODEJS_22_X`). */
export const NODE_TARGET = 'node22';

/** File name of the bundle in the asset (`OutputFormat.ESM` → `index.mjs`; handler `index.handler`). */
export const BUNDLE_FILE = 'index.mjs';

/**
 * Banner that gives ESM output a CommonJS `require`, for the CJS dependencies esbuild wraps
 * (they call `require('node:...')` at run time).
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __cldCreateRequire } from 'node:module'; const require = __cldCreateRequire(import.meta.url);";

/**
 * Modules left out of every bundle because the Lambda Node.js runtime provides them: AWS SDK
 * for JavaScript v3 and its Smithy packages (the same list aws-lambda-nodejs uses with the
 * `@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages` flag).
 */
export const EXTERNAL_MODULES = ['@aws-sdk/*', '@smithy/*'] as const;

/** Where each function finds its policy bundle at run time (`CLD_POLICY_DIR`). */
export const LAMBDA_POLICY_DIR = '/var/task/policies';

/** The settings shared by both forms below. */
export const BUNDLE_SETTINGS = {
  format: 'esm',
  platform: 'node',
  target: NODE_TARGET,
  minify: true,
  /** Linked `index.mjs.map`; with `NODE_OPTIONS=--enable-source-maps` stack traces show TS lines. */
  sourcemap: true,
  /** The map only maps; sources are not embedded (smaller asset). */
  sourcesContent: false,
  /** Class names survive minification: errors log as `ValidationError`, not `e`. */
  keepNames: true,
  /** Prefer packages' ESM entry points (better tree shaking). */
  mainFields: ['module', 'main'],
  external: EXTERNAL_MODULES,
  banner: ESM_REQUIRE_BANNER,
} as const;

/** Files of a function's policy bundle, as absolute source paths. */
export interface PolicyBundle {
  /** `policies/rules.json`: the rules data every function gets. */
  rules: string;
  /** `policies/dist/<function>.wasm`, the compiled OPA policy, when it has been built. */
  wasm: string | undefined;
}

/**
 * The policy bundle of a function as it exists now in `projectRoot`.
 * @param name the function's name in the function table
 */
export function policyBundle(name: string, projectRoot: string = PROJECT_ROOT): PolicyBundle {
  const wasm = join(projectRoot, 'policies', 'dist', `${name}.wasm`);
  return { rules: join(projectRoot, 'policies', 'rules.json'), wasm: existsSync(wasm) ? wasm : undefined };
}

/** Quotes a path for `bash -c` (the shell aws-lambda-nodejs runs command hooks with on Linux/macOS). */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Shell commands that copy a function's policy bundle into its asset: `rules.json` and, when
 * built, `<function>.wasm`, both under `<outputDir>/policies/`.
 */
export function policyCopyCommands(
  name: string,
  inputDir: string,
  outputDir: string,
  wasm: boolean,
): string[] {
  const target = `${outputDir}/policies`;
  const commands = [
    `mkdir -p ${shellQuote(target)}`,
    `cp ${shellQuote(`${inputDir}/policies/rules.json`)} ${shellQuote(`${target}/rules.json`)}`,
  ];
  if (wasm) {
    commands.push(
      `cp ${shellQuote(`${inputDir}/policies/dist/${name}.wasm`)} ${shellQuote(`${target}/${name}.wasm`)}`,
    );
  }
  return commands;
}

/** Copies a function's policy bundle into `outputDir/policies/` (what the hook does, for the report). */
export function copyPolicyBundle(
  name: string,
  outputDir: string,
  projectRoot: string = PROJECT_ROOT,
): string[] {
  const bundle = policyBundle(name, projectRoot);
  const target = join(outputDir, 'policies');
  mkdirSync(target, { recursive: true });
  const copied = [join(target, 'rules.json')];
  copyFileSync(bundle.rules, copied[0] as string);
  if (bundle.wasm) {
    const wasm = join(target, `${name}.wasm`);
    copyFileSync(bundle.wasm, wasm);
    copied.push(wasm);
  }
  return copied;
}

/**
 * `NodejsFunction` bundling options of a function: local esbuild (never Docker), the shared
 * settings, and the policy bundle copied in after bundling.
 * @param name the function's name in the function table
 * @param wasm whether `policies/dist/<name>.wasm` is copied too (it exists at synth time)
 */
export function nodejsBundling(name: string, wasm: boolean): BundlingOptions {
  const commandHooks: ICommandHooks = {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) => policyCopyCommands(name, inputDir, outputDir, wasm),
  };
  return {
    forceDockerBundling: false,
    format: OutputFormat.ESM,
    target: BUNDLE_SETTINGS.target,
    minify: BUNDLE_SETTINGS.minify,
    sourceMap: BUNDLE_SETTINGS.sourcemap,
    sourcesContent: BUNDLE_SETTINGS.sourcesContent,
    keepNames: BUNDLE_SETTINGS.keepNames,
    mainFields: [...BUNDLE_SETTINGS.mainFields],
    externalModules: [...BUNDLE_SETTINGS.external],
    banner: BUNDLE_SETTINGS.banner,
    commandHooks,
  };
}

/**
 * esbuild JS-API options equivalent to what `NodejsFunction` runs for {@link nodejsBundling}
 * (`esbuild --bundle <entry> --target=node22 --platform=node --format=esm --outfile=<dir>/index.mjs
 * --minify --sourcemap --sources-content=false --external:... --keep-names --banner:js=...
 * --main-fields=module,main`, from the project root).
 * @param entry entry file relative to `projectRoot` (the function table's `entry`)
 * @param outdir directory that receives `index.mjs` and `index.mjs.map`
 */
export function esbuildOptions(
  entry: string,
  outdir: string,
  projectRoot: string = PROJECT_ROOT,
): BuildOptions {
  return {
    absWorkingDir: projectRoot,
    entryPoints: [entry],
    bundle: true,
    outfile: join(outdir, BUNDLE_FILE),
    format: BUNDLE_SETTINGS.format,
    platform: BUNDLE_SETTINGS.platform,
    target: BUNDLE_SETTINGS.target,
    minify: BUNDLE_SETTINGS.minify,
    sourcemap: BUNDLE_SETTINGS.sourcemap,
    sourcesContent: BUNDLE_SETTINGS.sourcesContent,
    keepNames: BUNDLE_SETTINGS.keepNames,
    mainFields: [...BUNDLE_SETTINGS.mainFields],
    external: [...BUNDLE_SETTINGS.external],
    banner: { js: BUNDLE_SETTINGS.banner },
    logLevel: 'warning',
  };
}
