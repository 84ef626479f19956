import { createRequire } from 'node:module';
import type * as NodeHttpHandlerModule from '@smithy/node-http-handler';

/**
 * How the adapters load the AWS SDK for JavaScript v3 (issue 25 item 5): each adapter module
 * loads its client package with CommonJS `require` at its first use (building a client, sending a
 * command), never with a static `import`.
 *
 * - **Only where used.** The bundles leave `@aws-sdk/*` external (the asset's tree-shaken
 *   `aws-sdk.cjs` serves it: infra/lib/sdk-module.ts), and esbuild hoists an external static
 *   `import` to the top of `index.mjs`, so every cold start
 *   loaded every client the bundle mentions before the handler ran, whether the invocation used
 *   it or not (the probe invocations on local adapters, a `graph`-only tool call).
 * - **`require`, not `import`.** The SDK's packages are CommonJS (`main: dist-cjs`); Node's ESM
 *   loader detects the format of, and lexes the named exports of, every CommonJS file it loads:
 *   `import('@aws-sdk/client-s3')` costs ≈ 410 ms of CPU on this machine (Node 20.20, load 6),
 *   `require` ≈ 210 ms (docs/numbers.md, Bundles). The module objects are the same (one copy per
 *   process: `import` of CommonJS wraps the `require` cache entry).
 *
 * An adapter spells `require('<package>')` out where `require` exists — in a function bundle
 * (the `createRequire` banner, infra/lib/bundling.ts) and under vitest — so that esbuild records
 * the run-time dependency in the metafile (kind `require-call`, external: what `bundle:report`
 * and test/infra/bundles.test.ts read), and uses {@link requireSdk} in ES module scope without it
 * (tsx: the CLI, scripts; the CLI bundle dist/cld.mjs, which has no banner: {@link HAS_REQUIRE}).
 * Resolution is CommonJS's: in a function asset the stub packages under `/var/task/node_modules/`
 * answer first, with the asset's `aws-sdk.cjs` (infra/lib/sdk-module.ts); `NODE_PATH`
 * (`/var/runtime/node_modules`, the runtime's SDK) only serves a package the asset lacks.
 */
export const requireSdk: NodeJS.Require = createRequire(import.meta.url);

/**
 * Whether a working CommonJS `require` is in scope (a Lambda bundle, vitest); see
 * {@link requireSdk}. `typeof require` alone does not tell: in an ES module bundle esbuild turns
 * every `require` into its `__require` shim, a function even where no `require` exists (the CLI
 * bundle, dist/cld.mjs, built without the banner), which then throws `Dynamic require of "…" is
 * not supported`. The shim hands `resolve` through only from a real `require`.
 */
export const HAS_REQUIRE: boolean = typeof require === 'function' && typeof require.resolve === 'function';

let httpHandler: typeof NodeHttpHandlerModule | undefined;

/**
 * `@smithy/node-http-handler` (the SDK's HTTP/1.1 request handler, which adapters configure with
 * their own timeouts), loaded at its first use with `require`.
 */
export function nodeHttpHandler(): typeof NodeHttpHandlerModule {
  httpHandler ??= (
    HAS_REQUIRE ? require('@smithy/node-http-handler') : requireSdk('@smithy/node-http-handler')
  ) as typeof NodeHttpHandlerModule;
  return httpHandler;
}
