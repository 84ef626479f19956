/**
 * The MCP client's HTTP guards (issue 22 finding 8), through the real connector (the official
 * SDK's Streamable HTTP transport) and real sockets:
 * - loopback-mapped, private, link-local and metadata addresses are refused for `https:` too,
 *   before any connection, unless `allowPrivateAddresses` opts in; a host *name* is checked on
 *   the addresses it resolves to, at connect time;
 * - the response size limit is enforced while the body streams: a server that sends far more
 *   than the limit sees the connection closed early (bytes it got flushed are counted on its side).
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpCallError, sdkConnector } from '../../shared/tools/mcp/client.js';
import { HttpServerConfigSchema } from '../../shared/tools/mcp/config.js';
import { BlockedAddressError, guardedFetch } from '../../shared/tools/mcp/guarded-fetch.js';
import { startTestMcpServer, type TestMcpServer } from './server.js';

let mcp: TestMcpServer;

beforeAll(async () => {
  mcp = await startTestMcpServer();
});

afterAll(async () => {
  await mcp?.close();
});

async function connectTo(url: string, extra: Record<string, unknown> = {}) {
  const server = HttpServerConfigSchema.parse({ name: 'probe', url, timeoutMs: 5_000, ...extra });
  const session = await sdkConnector().connect(server, AbortSignal.timeout(20_000));
  return session;
}

describe('addresses an MCP server may not have', () => {
  it.each([
    ['instance metadata (IPv4)', 'https://169.254.169.254/mcp'],
    ['instance metadata (IPv6)', 'https://[fd00:ec2::254]/mcp'],
    ['link-local', 'https://169.254.10.20/mcp'],
    ['private (RFC 1918)', 'https://10.1.2.3/mcp'],
    ['private (172.16/12)', 'https://172.20.0.1/mcp'],
    ['unique-local IPv6', 'https://[fd12:3456::1]/mcp'],
    ['carrier-grade NAT', 'https://100.64.0.1/mcp'],
    ['unspecified', 'https://0.0.0.0/mcp'],
  ])('refuses %s for https (%s) without connecting: a tool ERROR, not a retry', async (_what, url) => {
    const error = await connectTo(url).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpCallError);
    expect((error as Error).message).toMatch(/refused: .*loopback, private, link-local or reserved/);
  });

  it('refuses a loopback-mapped IPv6 host (::ffff:127.0.0.1) though a server listens there', async () => {
    const before = mcp.requests;
    const error = await connectTo(`https://[::ffff:127.0.0.1]:${mcp.port}/mcp`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpCallError);
    expect((error as Error).message).toMatch(/::ffff:7f00:1|::ffff:127\.0\.0\.1/);
    expect(mcp.requests).toBe(before);
  });

  it('still connects to a loopback host named literally over http (local servers), as before', async () => {
    const session = await connectTo(mcp.url);
    try {
      expect((await session.listTools(AbortSignal.timeout(10_000))).map((t) => t.name)).toContain('forecast');
    } finally {
      await session.close();
    }
  });

  /** A resolver that answers every name with these addresses (DNS as the attacker would set it). */
  function resolvingTo(...addresses: string[]) {
    return ((_host: string, _options: unknown, callback: (e: null, a: LookupAddress[]) => void) =>
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      )) as unknown as typeof import('node:dns').lookup;
  }

  it('checks a host name on what it resolves to: a name resolving to loopback is refused, no request reaches the server', async () => {
    const before = mcp.requests;
    const fetch = guardedFetch({ maxBytes: 1_000_000, lookup: resolvingTo('127.0.0.1') });

    const error = await fetch(`http://mcp.example.test:${mcp.port}/mcp`, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect((error as Error).cause).toBeInstanceOf(BlockedAddressError);
    expect(mcp.requests).toBe(before);
  });

  it('refuses a name when any of its addresses is blocked (a public and a metadata address)', async () => {
    const fetch = guardedFetch({ maxBytes: 1_000, lookup: resolvingTo('93.184.215.14', '169.254.169.254') });
    const error = await fetch('https://mcp.example.test/mcp').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).cause).toBeInstanceOf(BlockedAddressError);
  });

  it('reaches a private address named in allowPrivateAddresses (the opt-in), and only that one', async () => {
    const allowed = guardedFetch({
      maxBytes: 1_000_000,
      allowPrivateAddresses: ['127.0.0.0/8'],
      lookup: resolvingTo('127.0.0.1'),
    });
    const response = await allowed(`http://mcp.example.test:${mcp.port}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(response.status).toBeLessThan(500);
    await response.arrayBuffer();

    const other = guardedFetch({
      maxBytes: 1_000,
      allowPrivateAddresses: ['10.0.12.0/24'],
      lookup: resolvingTo('10.0.13.1'),
    });
    const error = await other('https://mcp.example.test/mcp').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as Error).cause).toBeInstanceOf(BlockedAddressError);
  });

  it('refuses an allowPrivateAddresses entry that is no address or CIDR block', () => {
    expect(
      HttpServerConfigSchema.safeParse({
        name: 'x',
        url: 'https://a.example/mcp',
        allowPrivateAddresses: ['10.0.0.0/33'],
      }).success,
    ).toBe(false);
  });
});

describe('the response size limit, enforced while reading', () => {
  const CHUNK = 64 * 1024;
  const SENT = 96 * 1024 * 1024;
  let flood: Server;
  let port: number;
  /** Bytes the flood server got flushed to the socket, per response. */
  const flushed: number[] = [];

  beforeAll(async () => {
    // Answers every request with 200 and an endless JSON string, written as the socket drains.
    flood = createServer((req, res) => {
      req.resume();
      const index = flushed.push(0) - 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      let open = true;
      res.on('close', () => {
        open = false;
      });
      const chunk = Buffer.alloc(CHUNK, 0x61);
      const pump = () => {
        while (open && (flushed[index] as number) < SENT) {
          const ok = res.write(chunk, (error) => {
            if (!error) flushed[index] = (flushed[index] as number) + CHUNK;
          });
          if (!ok) return void res.once('drain', pump);
        }
        if (open) res.end();
      };
      res.write('{"jsonrpc":"2.0","id":0,"result":{"x":"', pump);
    });
    await new Promise<void>((resolve) => flood.listen(0, '127.0.0.1', resolve));
    port = (flood.address() as AddressInfo).port;
  });

  afterAll(async () => {
    flood?.closeAllConnections();
    await new Promise<void>((resolve) => flood?.close(() => resolve()));
  });

  it('closes the connection soon after the limit (default 4 MiB): the server flushes a fraction of a 96 MiB answer', async () => {
    const error = await connectTo(`http://127.0.0.1:${port}/mcp`).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(McpCallError);
    expect((error as Error).message).toMatch(/exceeds 4194304 bytes/);
    // Kernel socket buffers on loopback hold a few MiB more than the client read; far from 96.
    const most = Math.max(...flushed);
    expect(most).toBeGreaterThan(4 * 1024 * 1024);
    expect(most).toBeLessThan(24 * 1024 * 1024);
  }, 30_000);
});
