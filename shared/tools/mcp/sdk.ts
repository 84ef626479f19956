/**
 * The parts of the official MCP TypeScript SDK client the tool step uses, in one module so that a
 * function bundle can carry them as a separate file of its asset (`mcp-sdk.mjs`, built by
 * infra/lib/bundling.ts `mcpSdkBuildOptions`) loaded at the first MCP call only: the SDK is about
 * 320 KB minified and would otherwise be most of the `tool` bundle (client.ts `loadSdk`).
 *
 * Powertools' `SecretsProvider` (MCP header secrets, client.ts `loadSecretsProvider`) comes with it
 * for the same reason: bundled code that imports `@aws-sdk/client-secrets-manager` makes esbuild
 * hoist a static import of the client to the top of its file, so in `index.mjs` the client would
 * load at every cold start of the `tool` function (≈ 70 ms of CPU), MCP or not; here it loads
 * with the SDK, at the first MCP call.
 */
export { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
export { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
