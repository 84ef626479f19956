/**
 * Modules a function bundle carries as files of their own beside `index.mjs`, loaded with a
 * dynamic `import()` of the file at their first use (code splitting by hand: aws-lambda-nodejs
 * runs esbuild's command line for `index.mjs`, so the stack's afterBundling hook builds these,
 * infra/lib/bundling.ts `assetModuleCommands`).
 *
 * Why: the bundles leave `@aws-sdk/*` external (the asset's `aws-sdk.cjs` serves it through stub
 * packages: infra/lib/sdk-module.ts, which scans these files too, for the exports they use), and
 * esbuild hoists every static `import` of an external package by a bundled module to the top of
 * `index.mjs` — a dynamic `import()` of the bundled module does not defer it. Our own adapters
 * load their clients with `require` at first use (shared/aws/sdk.ts); third-party modules that
 * import a client statically (Powertools' idempotency and parameters utilities, the MCP SDK's
 * companions) live here instead, so a cold start that never uses them never loads the client.
 *
 * `entry` is relative to the project root; `file` is the name in the asset; `format` is the
 * module format of the file. The Powertools modules are CommonJS so that they load the SDK's
 * (CommonJS) client packages with `require`, about half the CPU of an ES `import`
 * (shared/aws/sdk.ts), and share the instance our adapters `require` (`instanceof` of the
 * client's exceptions holds across both).
 *
 * A module here carries its own copy of the library code it bundles. Powertools' idempotency
 * handler in `index.mjs` recognises the layer's errors by `error.name`
 * (`IdempotencyItemAlreadyExistsError`), not by class, so the two copies work together
 * (test/infra/asset-modules.test.ts runs a duplicate delivery through them).
 */
export const ASSET_MODULES = {
  /** Powertools' `DynamoDBPersistenceLayer` (shared/aws/powertools-idempotency.ts). */
  idempotency: {
    file: 'powertools-idempotency.cjs',
    entry: 'shared/aws/powertools-idempotency.ts',
    format: 'cjs',
  },
  /** Powertools' `SecretsProvider` (shared/aws/powertools-secrets.ts). */
  secrets: { file: 'powertools-secrets.cjs', entry: 'shared/aws/powertools-secrets.ts', format: 'cjs' },
  /** The MCP TypeScript SDK's client parts (shared/tools/mcp/sdk.ts), only in the `tool` function. */
  mcpSdk: { file: 'mcp-sdk.mjs', entry: 'shared/tools/mcp/sdk.ts', format: 'esm' },
} as const satisfies Record<string, { file: string; entry: string; format: 'cjs' | 'esm' }>;

/** The name of one of {@link ASSET_MODULES}. */
export type AssetModule = keyof typeof ASSET_MODULES;

/**
 * The `file:` URL of an asset module beside the running bundle's `index.mjs` (this module is
 * bundled into it, so `import.meta.url` is the bundle's own URL).
 */
export function assetModuleUrl(name: AssetModule): string {
  return new URL(`./${ASSET_MODULES[name].file}`, import.meta.url).href;
}

/**
 * Powertools' `DynamoDBPersistenceLayer` class: from the asset's
 * `powertools-idempotency.cjs` in a function bundle, else from node_modules.
 * @throws the loader's error when the asset lacks the file (a bundle built without its hook)
 */
export async function loadDynamoDBPersistenceLayer(): Promise<
  typeof import('./powertools-idempotency.js')['DynamoDBPersistenceLayer']
> {
  // esbuild's `define` makes the guard a literal comparison in a bundle, folds it to false and
  // drops the branch, so the module (and the clients it imports) is not bundled into index.mjs.
  if (process.env.CLD_BUNDLE_FUNCTION === undefined)
    return (await import('./powertools-idempotency.js')).DynamoDBPersistenceLayer;
  return ((await import(assetModuleUrl('idempotency'))) as typeof import('./powertools-idempotency.js'))
    .DynamoDBPersistenceLayer;
}

/**
 * Powertools' `SecretsProvider` class: from the asset's `powertools-secrets.cjs` in a function
 * bundle, else from node_modules.
 * @throws the loader's error when the asset lacks the file (a bundle built without its hook)
 */
export async function loadSecretsProvider(): Promise<
  typeof import('./powertools-secrets.js')['SecretsProvider']
> {
  if (process.env.CLD_BUNDLE_FUNCTION === undefined)
    return (await import('./powertools-secrets.js')).SecretsProvider;
  return ((await import(assetModuleUrl('secrets'))) as typeof import('./powertools-secrets.js'))
    .SecretsProvider;
}
