import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, type ICommandHooks, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';
import { ASSET_MODULES, type AssetModule } from '../../shared/aws/asset-modules.js';
import { BUNDLED_RANKS_FILE, RANKS_MODULE } from '../../shared/context/tokens.js';
import { bundleDefines, functionUses } from '../../shared/runtime/function-uses.js';
import type { FunctionSpec } from './functions.js';

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
 * Modules left out of `index.mjs`: AWS SDK for JavaScript v3 and its Smithy packages (the same
 * list aws-lambda-nodejs uses with the `@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages`
 * flag). The code `require`s them at first use (shared/aws/sdk.ts); the asset's own tree-shaken
 * `aws-sdk.cjs` answers those `require`s through stub packages under its `node_modules/`
 * (infra/lib/sdk-module.ts, {@link sdkModuleCommands}), ahead of the Lambda runtime's copy.
 */
export const EXTERNAL_MODULES = ['@aws-sdk/*', '@smithy/*'] as const;

/**
 * Modules left out of every bundle that no function loads: js-tiktoken's ranks (≈1 MB of JS),
 * which a function reads as data from {@link TOKENIZER_RANKS_FILE} instead (shared/context/tokens.ts
 * loads the module only outside a bundle: dev, tests, the CLI). Not provided by the Lambda runtime.
 */
export const NEVER_BUNDLED_MODULES = ['js-tiktoken/ranks/*'] as const;

/** Where each function finds its policy bundle at run time (`CLD_POLICY_DIR`). */
export const LAMBDA_POLICY_DIR = '/var/task/policies';

/**
 * The tokenizer ranks file in a function's asset, relative to the asset root (beside `index.mjs`,
 * where a bundle looks for it: shared/context/tokens.ts).
 */
export const TOKENIZER_RANKS_FILE = BUNDLED_RANKS_FILE;

/**
 * Where a function finds the tokenizer ranks in Lambda. The bundle finds them there by itself;
 * `CLD_TOKENIZER_RANKS` with this value makes it explicit (shared/context/tokens.ts).
 */
export const LAMBDA_TOKENIZER_RANKS = `/var/task/${TOKENIZER_RANKS_FILE}`;

/** The module the bundles get for `yaml` (shared/policy/yaml-unavailable.ts), relative to the project root. */
export const YAML_STAND_IN = './shared/policy/yaml-unavailable.ts';

/** The module the bundles get for `node:stream/web` (shared/runtime/stream-web-lazy.ts), relative to the project root. */
export const STREAM_WEB_STAND_IN = './shared/runtime/stream-web-lazy.ts';

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
  /**
   * No `keepNames`: it wraps every function and class of the bundle in a `__name()` call at
   * import (≈ 1,000 `Object.defineProperty` calls, ≈ 20 KB; issue 25 cold starts). What reads a
   * class's name states it instead: our errors' `name` fields (shared/errors.ts), Powertools'
   * errors (`this.name = '...'`, and its event handler matches error handlers by constructor first).
   */
  keepNames: false,
  /** Prefer packages' ESM entry points (better tree shaking). */
  mainFields: ['module', 'main'],
  external: [...EXTERNAL_MODULES, ...NEVER_BUNDLED_MODULES],
  banner: ESM_REQUIRE_BANNER,
  /**
   * `readable-stream` (n3's dependency) is the userland copy of Node's `stream`; the Lambda
   * runtime has the original, so the bundles use `node:stream` instead of shipping ~95 KB.
   * `yaml` is required by opa-wasm only for the `yaml.*` Rego builtins, which no policy calls:
   * {@link YAML_STAND_IN} replaces it (~87 KB less in every bundle). Relative paths of aliases
   * resolve from esbuild's working directory, the project root (aws-lambda-nodejs runs local
   * bundling there; {@link esbuildOptions} sets `absWorkingDir` to it). `node:stream/web` is
   * {@link STREAM_WEB_STAND_IN}: Node's classes, loaded at their first use (Middy's core imports
   * `ReadableStream` at import for a streaming path no function takes; 3–13 ms of a cold import).
   */
  alias: {
    'readable-stream': 'node:stream',
    yaml: YAML_STAND_IN,
    'node:stream/web': STREAM_WEB_STAND_IN,
    'stream/web': STREAM_WEB_STAND_IN,
  },
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
 * The tokenizer ranks as a function's asset holds them: `JSON.stringify` of js-tiktoken's
 * `cl100k_base` ranks module as installed in `projectRoot` (UTF-8).
 * @throws Error when js-tiktoken is not installed there
 */
export function tokenizerRanksJson(projectRoot: string = PROJECT_ROOT): string {
  return JSON.stringify(createRequire(join(projectRoot, 'package.json'))(RANKS_MODULE));
}

/** Node.js code that writes {@link tokenizerRanksJson} (run from the project root) to the file `argv[1]`. */
const WRITE_RANKS = `require('node:fs').writeFileSync(process.argv[1], JSON.stringify(require(${JSON.stringify(RANKS_MODULE)})))`;

/**
 * Shell commands that write the tokenizer ranks into the asset as {@link TOKENIZER_RANKS_FILE}
 * (the same bytes as {@link writeTokenizerRanks}), with the Node.js running the synth.
 */
export function tokenizerCommands(inputDir: string, outputDir: string): string[] {
  const target = `${outputDir}/${TOKENIZER_RANKS_FILE}`;
  return [
    `mkdir -p ${shellQuote(target.slice(0, target.lastIndexOf('/')))}`,
    `cd ${shellQuote(inputDir)} && ${shellQuote(process.execPath)} -e ${shellQuote(WRITE_RANKS)} ${shellQuote(target)}`,
  ];
}

/** Writes the tokenizer ranks into `outputDir` as {@link TOKENIZER_RANKS_FILE} (what the hook does, for the report). */
export function writeTokenizerRanks(outputDir: string, projectRoot: string = PROJECT_ROOT): string {
  const file = join(outputDir, TOKENIZER_RANKS_FILE);
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, tokenizerRanksJson(projectRoot));
  return file;
}

/** Where a function's asset holds the built console (`CLD_CONSOLE_DIR` in Lambda: the asset is `/var/task`). */
export const LAMBDA_CONSOLE_DIR = '/var/task/console';

/**
 * Shell commands that build the web console into `<outputDir>/console` (scripts/build-console.ts → console/build.ts, with the
 * Node.js running the synth and the project's tsx), so the deployed assets are built from the same
 * sources `serve` builds at start and the browser tests drive.
 */
export function consoleCommands(inputDir: string, outputDir: string): string[] {
  return [
    `cd ${shellQuote(inputDir)} && ${shellQuote(process.execPath)} --import tsx scripts/build-console.ts ${shellQuote(`${outputDir}/console`)}`,
  ];
}

/**
 * `NodejsFunction` bundling options of a function: local esbuild (never Docker), the shared
 * settings, the function's build-time constants ({@link bundleDefines}: what it composes, so the
 * adapters it never uses are left out), and, after bundling, its policy bundle and the tokenizer
 * ranks written in (found by the bundle beside `index.mjs`; {@link LAMBDA_TOKENIZER_RANKS}).
 * @param name the function's name in the function table
 * @param wasm whether `policies/dist/<name>.wasm` is copied too (it exists at synth time)
 * @param withConsole whether the web console is built into the asset ({@link consoleCommands})
 * @param spec the function-table entry's `secrets` and `mcpServers`: which modules of its own the asset carries ({@link assetModulesOf})
 */
export function nodejsBundling(
  name: string,
  wasm: boolean,
  withConsole = false,
  spec: Pick<FunctionSpec, 'secrets' | 'mcpServers'> = {},
): BundlingOptions {
  const commandHooks: ICommandHooks = {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) => [
      ...policyCopyCommands(name, inputDir, outputDir, wasm),
      ...tokenizerCommands(inputDir, outputDir),
      ...(withConsole ? consoleCommands(inputDir, outputDir) : []),
      ...assetModuleCommands(assetModulesOf(name, spec), inputDir, outputDir),
      // Last: it reads the JavaScript files written above (infra/lib/sdk-module.ts).
      ...sdkModuleCommands(inputDir, outputDir),
    ],
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
    define: bundleDefines(name),
    banner: BUNDLE_SETTINGS.banner,
    esbuildArgs: Object.fromEntries(
      Object.entries(BUNDLE_SETTINGS.alias).map(([from, to]) => [`--alias:${from}`, to]),
    ),
    commandHooks,
  };
}

/**
 * The modules a function's asset carries as files of their own beside `index.mjs`
 * (shared/aws/asset-modules.ts), each only where the function can load it: Powertools' DynamoDB
 * persistence layer where it uses the projections table (idempotency), `SecretsProvider` where
 * it reads a channel secret or runs MCP tools (header secrets), the MCP SDK where it runs MCP tools.
 * @param name the function's name in the function table ({@link functionUses})
 * @param spec its function-table entry (`secrets`, `mcpServers`)
 */
export function assetModulesOf(
  name: string,
  spec: Pick<FunctionSpec, 'secrets' | 'mcpServers'>,
): AssetModule[] {
  const modules: AssetModule[] = [];
  if (functionUses(name).table) modules.push('idempotency');
  if (Object.keys(spec.secrets ?? {}).length > 0 || spec.mcpServers === true) modules.push('secrets');
  if (spec.mcpServers === true) modules.push('mcpSdk');
  return modules;
}

/**
 * esbuild options of an asset module's file `<outdir>/<file>` (the bundle settings in the
 * module's format, minified, no source map, no `define`: the code it bundles is third-party, with
 * no function guard; a CommonJS file has its own `require`, so no banner).
 */
export function assetModuleBuildOptions(
  module: AssetModule,
  outdir: string,
  projectRoot: string = PROJECT_ROOT,
): BuildOptions {
  const { file, entry, format } = ASSET_MODULES[module];
  const { define: _define, banner, ...options } = esbuildOptions('tool', entry, outdir, projectRoot);
  return {
    ...options,
    format,
    ...(format === 'esm' ? { banner } : {}),
    outfile: join(outdir, file),
    sourcemap: false,
  };
}

/**
 * Shell commands (afterBundling hook) that build {@link assetModuleBuildOptions} of each module
 * into the asset, with the project's esbuild, from the input directory (one Node.js process).
 */
export function assetModuleCommands(
  modules: readonly AssetModule[],
  inputDir: string,
  outputDir: string,
): string[] {
  if (modules.length === 0) return [];
  const options = JSON.stringify(
    modules.map((module) => assetModuleBuildOptions(module, outputDir, inputDir)),
  );
  const script = `for (const o of JSON.parse(process.argv[1])) require('esbuild').buildSync(o)`;
  return [
    `cd ${shellQuote(inputDir)} && ${shellQuote(process.execPath)} -e ${shellQuote(script)} ${shellQuote(options)}`,
  ];
}

/**
 * Shell commands (afterBundling hook, after every other JavaScript file of the asset is written)
 * that build the asset's AWS SDK module, `aws-sdk.cjs` with its stub packages under
 * `node_modules/` (infra/lib/sdk-module.ts), with the Node.js running the synth and the
 * project's tsx, from the input directory.
 */
export function sdkModuleCommands(inputDir: string, outputDir: string): string[] {
  return [
    `cd ${shellQuote(inputDir)} && ${shellQuote(process.execPath)} --import tsx scripts/build-sdk-module.ts ${shellQuote(outputDir)} ${NODE_TARGET}`,
  ];
}

/**
 * esbuild JS-API options equivalent to what `NodejsFunction` runs for {@link nodejsBundling}
 * (`esbuild --bundle <entry> --target=node22 --platform=node --format=esm --outfile=<dir>/index.mjs
 * --minify --sourcemap --sources-content=false --external:... --define:...
 * --banner:js=... --main-fields=module,main`, from the project root).
 * @param name the function's name in the function table (its `define`s)
 * @param entry entry file relative to `projectRoot` (the function table's `entry`)
 * @param outdir directory that receives `index.mjs` and `index.mjs.map`
 */
export function esbuildOptions(
  name: string,
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
    define: bundleDefines(name),
    alias: { ...BUNDLE_SETTINGS.alias },
    banner: { js: BUNDLE_SETTINGS.banner },
    logLevel: 'warning',
  };
}
