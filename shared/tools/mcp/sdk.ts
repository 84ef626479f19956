/**
 * The parts of the official MCP TypeScript SDK client the tool step uses, in one module so that a
 * function bundle can carry them as a separate file of its asset (`mcp-sdk.mjs`, built by
 * infra/lib/bundling.ts `mcpSdkBuildOptions`) loaded at the first MCP call only: the SDK is about
 * 320 KB minified and would otherwise be most of the `tool` bundle (client.ts `loadSdk`).
 */
export { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
