/**
 * The parts of the official MCP TypeScript SDK client the tool step uses, in one module so that a
 * function bundle can carry them as a separate file of its asset (`mcp-sdk.mjs`, built by
 * infra/lib/bundling.ts `assetModuleBuildOptions`) loaded at the first MCP call only: the SDK is about
 * 320 KB minified and would otherwise be most of the `tool` bundle (client.ts `loadSdk`).
 * Header secrets are read with Powertools' `SecretsProvider`, a file of its own
 * (shared/aws/asset-modules.ts `loadSecretsProvider`).
 */
export { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
