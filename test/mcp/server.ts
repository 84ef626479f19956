import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

/**
 * A real MCP server for the tests, written with the official SDK's server side
 * (`McpServer` + `NodeStreamableHTTPServerTransport`, stateless: a server per request) on
 * 127.0.0.1. Its tools:
 * - `forecast({city})` → text `Forecast for <city>: sunny, 21 °C` (description mutable, to
 *   change the tool's definition between discoveries);
 * - `broken()` → `isError: true`;
 * - `slow({ms})` → answers after `ms`;
 * - `big({chars})` → a text of `chars` characters;
 * - `send({to, text})` → records the message in `sent`; the only tool not annotated
 *   `readOnlyHint: true`, so each of its calls needs the user's approval.
 * `mode` switches the whole server: `ok`, `garbage` (HTTP 200 with a body that is not JSON-RPC),
 * `error` (HTTP 503). `requests` counts HTTP requests; `lastAuthorization` is the last
 * `Authorization` header received.
 */
export interface TestMcpServer {
  url: string;
  port: number;
  forecastDescription: string;
  mode: 'ok' | 'garbage' | 'error';
  requests: number;
  lastAuthorization: string | undefined;
  /** Messages `send` sent (`<to>: <text>`). */
  sent: string[];
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 (a free port). */
export async function startTestMcpServer(): Promise<TestMcpServer> {
  const state: Omit<TestMcpServer, 'url' | 'port' | 'close'> = {
    forecastDescription: 'Weather forecast for a city',
    mode: 'ok',
    requests: 0,
    lastAuthorization: undefined,
    sent: [],
  };
  const http: Server = createServer(async (req, res) => {
    state.requests++;
    state.lastAuthorization = req.headers.authorization;
    if (state.mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('<html>this is not JSON-RPC</html>');
      return;
    }
    if (state.mode === 'error') {
      res.writeHead(503).end('unavailable');
      return;
    }
    const server = new McpServer({ name: 'demo', version: '1.0.0' });
    server.registerTool(
      'forecast',
      {
        description: state.forecastDescription,
        inputSchema: z.object({ city: z.string().min(1) }),
        annotations: { readOnlyHint: true },
      },
      async ({ city }) => ({ content: [{ type: 'text', text: `Forecast for ${city}: sunny, 21 °C` }] }),
    );
    server.registerTool(
      'send',
      {
        description: 'Sends a message (a side effect: not read-only)',
        inputSchema: z.object({ to: z.string(), text: z.string() }),
      },
      async ({ to, text }) => {
        state.sent.push(`${to}: ${text}`);
        return { content: [{ type: 'text', text: `sent to ${to}` }] };
      },
    );
    server.registerTool(
      'broken',
      { description: 'Always fails', inputSchema: z.object({}), annotations: { readOnlyHint: true } },
      async () => ({
        isError: true,
        content: [{ type: 'text', text: 'the weather station is offline' }],
      }),
    );
    server.registerTool(
      'slow',
      {
        description: 'Answers late',
        inputSchema: z.object({ ms: z.number().int().min(0) }),
        annotations: { readOnlyHint: true },
      },
      async ({ ms }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { content: [{ type: 'text', text: 'late' }] };
      },
    );
    server.registerTool(
      'big',
      {
        description: 'A long text',
        inputSchema: z.object({ chars: z.number().int().min(1) }),
        annotations: { readOnlyHint: true },
      },
      async ({ chars }) => ({ content: [{ type: 'text', text: 'x'.repeat(chars) }] }),
    );
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  const result = Object.assign(state, {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  });
  return result as TestMcpServer;
}
