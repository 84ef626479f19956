import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type BuildOptions, buildSync } from 'esbuild';

/**
 * The AWS SDK a function's asset carries (issue 25 item 5, cold starts): one CommonJS file,
 * `aws-sdk.cjs`, beside `index.mjs`, bundled by esbuild from the SDK's ES module builds with
 * tree shaking and minified, holding only the clients, commands and helpers the function's code
 * names; and, for each SDK package the function loads, a two-line package under the asset's
 * `node_modules/` that hands out that package's part of the file.
 *
 * Why: the Lambda Node.js runtime provides the SDK (`/var/runtime/node_modules`, on `NODE_PATH`),
 * but as its CommonJS builds, each client package a single file with every command of the
 * service, spread over many files that Node.js resolves and reads one by one. `bundle:report`
 * times both per function (docs/numbers.md, "The AWS SDK in the asset"): the saving grows with
 * the clients a first invocation loads. The SDK team recommends bundling for cold starts (AWS
 * Developer Tools Blog, "Reduce Lambda cold start times: migrate to AWS SDK for JavaScript v3";
 * aws/aws-cdk#25492: the runtime-provided SDK "has higher cold start than a bundled function");
 * it also pins the SDK version the tests ran against.
 *
 * How: the function's code and its other asset modules keep their run-time
 * `require('@aws-sdk/client-s3')` (shared/aws/sdk.ts; Powertools'); Node.js resolves it from
 * `/var/task/node_modules/` before `NODE_PATH`, where the stub package answers with
 * `require('../../../aws-sdk.cjs').packages['@aws-sdk/client-s3']`. One file serves every
 * package, so the Smithy core loads once per process; a package the stubs do not cover falls
 * through to the runtime's copy.
 *
 * Which exports: the names of the package's exports that occur as identifiers in the asset's
 * JavaScript files (property names survive minification: `s3Sdk().GetObjectCommand`, Powertools'
 * `import_client_dynamodb.GetItemCommand`). A name reached by a computed key (`sdk['S3Client']`)
 * or a defaulted pattern (`{S3Client = d}`) would be missed; the minified files have neither
 * (test/infra/asset-modules.test.ts runs S3, DynamoDB and the idempotency layer through a built
 * asset). A subpath specifier (`@smithy/core/protocols`), which the stubs would not serve, fails
 * the build ({@link sdkUses}).
 */

/*
 * This module imports nothing of the project: the package ships it (package.json `files`) with
 * scripts/build-sdk-module.ts, which the stack's afterBundling hook runs from the package root of
 * a CDK app of one's own, where `infra/` is not installed.
 */

/** Where and for what an SDK module is built. */
export interface SdkModuleTarget {
  /** The project (or installed package) root: where the SDK packages resolve from. */
  projectRoot: string;
  /** esbuild's `target`, the Lambda runtime's Node.js (infra/lib/bundling.ts `NODE_TARGET`). */
  target: string;
}

/** File name of the SDK module in a function's asset. */
export const SDK_MODULE_FILE = 'aws-sdk.cjs';

/**
 * String literals naming an SDK package (`@aws-sdk/*`, `@smithy/*`): the run-time `require`s, which
 * esbuild rewrites to its `__require` shim in an ES module bundle (minified: `uo("@aws-sdk/client-s3")`).
 */
const SDK_SPECIFIER = /(["'])(@aws-sdk\/[a-z0-9-]+|@smithy\/[a-z0-9-]+)(\/[\w./-]*)?\1/g;

/**
 * ES module imports of SDK packages (`from"@aws-sdk/x"`, `import"@aws-sdk/x"`, `import("@aws-sdk/x")`),
 * which the CommonJS stubs cannot serve: named imports of a stub fail to link.
 */
const SDK_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](@aws-sdk\/[a-z0-9-]+|@smithy\/[a-z0-9-]+)["']/g;

/**
 * Property names of JavaScript source: member accesses (`.GetObjectCommand`) and keys of object
 * patterns and literals (`{DynamoDBClient:e}=f()`, `{S3Client}`); over-approximates the exports used.
 */
const PROPERTY = /\.\s*([A-Za-z_$][\w$]*)|[{,]\s*([A-Za-z_$][\w$]*)\s*(?=[:,}])/g;

/**
 * Packages of the SDK's default credential chain that a Lambda function never reaches, left out
 * of `aws-sdk.cjs` (≈ 110 KB of its ≈ 470): Lambda puts the execution role's credentials in the
 * environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), which the chain
 * reads first (`fromEnv`, bundled); SSO, shared ini files, `credential_process`, web identity,
 * the login and token providers, the container and instance metadata endpoints and the STS/SSO
 * clients they need come after it. Should one ever be reached, its `require` resolves to the
 * runtime's copy on `NODE_PATH` ({@link sdkModuleBuildOptions} keeps the chain's `import()`s as
 * `require`s for that).
 */
export const UNREACHED_CREDENTIAL_PACKAGES = [
  '@aws-sdk/credential-provider-http',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-login',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/nested-clients',
  '@aws-sdk/nested-clients/*',
  '@aws-sdk/token-providers',
  '@smithy/credential-provider-imds',
] as const;

/** What {@link buildSdkModule} wrote. */
export interface SdkModule {
  /** Absolute path of `aws-sdk.cjs`; undefined when the asset loads no SDK package. */
  file: string | undefined;
  /** Exports carried per package, sorted (package → export names). */
  packages: Record<string, string[]>;
  /** Size of `aws-sdk.cjs` in bytes (0 without one). */
  bytes: number;
}

/** The asset's JavaScript files at its top level (`index.mjs` and the asset modules). */
function assetScripts(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => /\.(mjs|cjs|js)$/.test(name) && name !== SDK_MODULE_FILE)
    .map((name) => join(dir, name))
    .filter((file) => statSync(file).isFile());
}

/**
 * The SDK packages the code loads at run time with `require`, and the property names it contains.
 * @param sources the asset's JavaScript sources
 * @throws Error when a source loads an SDK package with an ES `import` (static or dynamic), which
 *   the CommonJS stubs cannot serve (named imports fail to link), or names an SDK subpath
 *   (`@smithy/core/protocols`), which no stub serves
 */
export function sdkUses(sources: readonly string[]): { packages: string[]; identifiers: Set<string> } {
  const packages = new Set<string>();
  const identifiers = new Set<string>();
  for (const source of sources) {
    for (const match of source.matchAll(SDK_SPECIFIER)) {
      if (match[3] !== undefined)
        throw new Error(
          `an asset file requires ${match[2]}${match[3]}, a subpath the SDK module's stubs do not serve; require the package itself`,
        );
      packages.add(match[2] as string);
    }
    const imported = [...source.matchAll(SDK_IMPORT)].map((match) => match[1]);
    if (imported.length > 0)
      throw new Error(
        `an asset file imports ${[...new Set(imported)].join(', ')} as an ES module; load the SDK with require (shared/aws/sdk.ts)`,
      );
    for (const match of source.matchAll(PROPERTY)) identifiers.add((match[1] ?? match[2]) as string);
  }
  return { packages: [...packages].sort(), identifiers };
}

/**
 * The exports of each package that the code names: `Object.keys` of the package as installed in
 * `projectRoot`, kept where the name occurs among `identifiers` — never `default`, and never a
 * service's aggregated client (`S3` beside `S3Client`; also lib-dynamodb's `DynamoDBDocument`
 * beside `DynamoDBDocumentClient`), whose class imports every command of the service; our
 * adapters and Powertools send commands through the bare client, and code that used an
 * aggregated client would find it undefined in a function only.
 * @throws Error when a package is not installed in `projectRoot`, or the code names none of its exports
 */
export function sdkExportsUsed(
  packages: readonly string[],
  identifiers: ReadonlySet<string>,
  projectRoot: string,
): Record<string, string[]> {
  const load = createRequire(join(projectRoot, 'package.json'));
  const used: Record<string, string[]> = {};
  for (const name of packages) {
    const all = new Set(Object.keys(load(name) as object));
    const exports = [...all].filter(
      (key) => key !== 'default' && key !== '__esModule' && !all.has(`${key}Client`) && identifiers.has(key),
    );
    if (exports.length === 0) throw new Error(`the asset requires ${name} but names none of its exports`);
    used[name] = exports.sort();
  }
  return used;
}

/**
 * The ES module source esbuild bundles into `aws-sdk.cjs`: named imports of each package's used
 * exports (so esbuild shakes the rest off), re-exported as `packages[<package>]`.
 */
export function sdkModuleSource(used: Readonly<Record<string, readonly string[]>>): string {
  const lines: string[] = [];
  const entries: string[] = [];
  Object.entries(used).forEach(([name, exports], index) => {
    const local = (key: string) => `p${index}_${key}`;
    lines.push(
      `import { ${exports.map((key) => `${key} as ${local(key)}`).join(', ')} } from ${JSON.stringify(name)};`,
    );
    entries.push(
      `  ${JSON.stringify(name)}: { ${exports.map((key) => `${key}: ${local(key)}`).join(', ')} },`,
    );
  });
  return `${lines.join('\n')}\n${NO_OP_LOGGER_NAME}\nexport const packages = {\n${entries.join('\n')}\n};\n`;
}

/**
 * Source lines that give the SDK's `NoOpLogger` class its name back: `aws-sdk.cjs` is minified
 * without esbuild's `keepNames` (≈ 18 KB and ≈ 5 ms less at the tool's first SDK load; issue 25 cold
 * starts), and Smithy's deserializer and the S3 and user-agent middlewares recognise the default
 * logger by `logger.constructor.name === "NoOpLogger"` (to warn on `console` instead). The SDK's
 * errors state their names (`this.name = options.name`) and `instanceof` matches by prototype or
 * `shapeId`, so nothing else reads a class name.
 */
const NO_OP_LOGGER_NAME = [
  'import { NoOpLogger as cldNoOpLogger } from "@smithy/core/client";',
  'Object.defineProperty(cldNoOpLogger, "name", { value: "NoOpLogger" });',
].join('\n');

/**
 * esbuild options of `aws-sdk.cjs` from {@link sdkModuleSource}: CommonJS (the stubs `require`
 * it), the packages' ES module entry points (tree shaking), minified, for the Lambda runtime's
 * Node.js; external only Node.js built-ins and {@link UNREACHED_CREDENTIAL_PACKAGES}, whose
 * dynamic `import()`s become `require`s (`dynamic-import` unsupported), so that they would
 * resolve through `NODE_PATH` as CommonJS does (ES module resolution does not read it).
 */
export function sdkModuleBuildOptions(
  source: string,
  outfile: string,
  { projectRoot, target }: SdkModuleTarget,
): BuildOptions {
  return {
    absWorkingDir: projectRoot,
    stdin: { contents: source, resolveDir: projectRoot, loader: 'js', sourcefile: 'aws-sdk-entry.mjs' },
    bundle: true,
    outfile,
    format: 'cjs',
    platform: 'node',
    target,
    minify: true,
    keepNames: false,
    mainFields: ['module', 'main'],
    external: [...UNREACHED_CREDENTIAL_PACKAGES],
    supported: { 'dynamic-import': false },
    sourcemap: false,
    logLevel: 'warning',
  };
}

/** The stub package of `name` under the asset's `node_modules/`: its part of `aws-sdk.cjs`. */
function writeStub(dir: string, name: string): void {
  const target = join(dir, 'node_modules', ...name.split('/'));
  mkdirSync(target, { recursive: true });
  const manifest = {
    name,
    private: true,
    description: `cld: the exports of ${name} this function uses, from ../../../${SDK_MODULE_FILE} (infra/lib/sdk-module.ts)`,
    main: 'index.cjs',
  };
  writeFileSync(join(target, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(
    join(target, 'index.cjs'),
    `'use strict';\nmodule.exports = require('../../../${SDK_MODULE_FILE}').packages[${JSON.stringify(name)}];\n`,
  );
}

/**
 * Builds the asset's SDK module: reads the asset's JavaScript files in `dir` (run it after
 * `index.mjs` and the asset modules are written), bundles the SDK exports they use into
 * `dir/aws-sdk.cjs` and writes a stub package per SDK package under `dir/node_modules/`.
 * Writes nothing when the asset loads no SDK package.
 * @param dir the asset directory (the stack's afterBundling output directory)
 * @param where the project root the SDK packages resolve from, and esbuild's target
 * @throws Error from {@link sdkUses} and {@link sdkExportsUsed}; esbuild's build failure
 */
export function buildSdkModule(dir: string, where: SdkModuleTarget): SdkModule {
  const { packages, identifiers } = sdkUses(assetScripts(dir).map((file) => readFileSync(file, 'utf8')));
  if (packages.length === 0) return { file: undefined, packages: {}, bytes: 0 };
  const used = sdkExportsUsed(packages, identifiers, where.projectRoot);
  const file = join(dir, SDK_MODULE_FILE);
  buildSync(sdkModuleBuildOptions(sdkModuleSource(used), file, where));
  for (const name of packages) writeStub(dir, name);
  return { file, packages: used, bytes: statSync(file).size };
}
