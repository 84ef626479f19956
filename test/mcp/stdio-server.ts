import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

/**
 * A stdio MCP server for the tests (the SDK's server side over `StdioServerTransport`), run as a
 * child process by the stdio transport of shared/tools/mcp/client.ts: one read-only tool,
 * `echo({text})` → the text, prefixed with `GREETING` from its environment.
 */
const server = new McpServer({ name: 'local-echo', version: '1.0.0' });
server.registerTool(
  'echo',
  {
    description: 'Echoes a text',
    inputSchema: z.object({ text: z.string() }),
    annotations: { readOnlyHint: true },
  },
  async ({ text }) => ({ content: [{ type: 'text', text: `${process.env.GREETING ?? ''}${text}` }] }),
);
await server.connect(new StdioServerTransport());
