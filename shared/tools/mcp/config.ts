import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import * as z from 'zod';
import { ConfigError } from '../../errors.js';
import { lazyStrictObject } from '../../resources/lazy-schema.js';
import { McpServerNameSchema } from '../../resources/schemas.js';

/**
 * MCP servers in configuration (issue 14 part 1): the JSON array in `CLD_MCP_SERVERS`, or the
 * JSON file `CLD_MCP_CONFIG` names (local use). In AWS the stack sets `CLD_MCP_SERVERS` from the
 * CDK context `mcpServers` (infra/lib/config.ts). Each entry is a Streamable HTTP server (`url`)
 * or, for local use only, a stdio server (`command`):
 *
 * ```json
 * [
 *   { "name": "weather", "url": "https://mcp.example.com/mcp",
 *     "headers": { "Authorization": { "secret": "arn:aws:secretsmanager:…:secret:weather-token" } },
 *     "timeoutMs": 10000 },
 *   { "name": "files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] }
 * ]
 * ```
 *
 * A header value is a literal string (for what is not a credential), `{ "env": "NAME" }` (the
 * environment variable, local use) or `{ "secret": "<Secrets Manager ARN or name>" }` (its whole
 * value is the header's value, e.g. `Bearer …`; read with Powertools parameters, cached 5 min).
 */

/** A header's value: literal, from the environment, or from Secrets Manager. */
export const HeaderValueSchema = z.union([
  z.string().min(1).max(8_192),
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }),
  z.strictObject({ secret: z.string().min(1).max(2_048) }),
]);
export type HeaderValue = z.infer<typeof HeaderValueSchema>;

const Common = {
  name: McpServerNameSchema,
  /** Timeout of one `tools/list` or `tools/call`, in ms (a tool's own `timeoutMs` is this). */
  timeoutMs: z.number().int().positive().max(900_000).default(10_000),
  /** Largest tool result kept, in characters of its JSON (a longer one is an ERROR result, not stored). */
  maxResultChars: z.number().int().positive().max(1_000_000).default(100_000),
};

/** A Streamable HTTP server. */
export const HttpServerConfigSchema = lazyStrictObject(() => ({
  ...Common,
  /** The MCP endpoint; `https:` except on a loopback host (127.0.0.1, ::1, localhost). */
  url: z.url({ protocol: /^https?$/ }).refine(
    (url) => {
      const parsed = new URL(url);
      return parsed.protocol === 'https:' || ['127.0.0.1', '[::1]', 'localhost'].includes(parsed.hostname);
    },
    { message: 'an MCP server URL must be https: (http: only on 127.0.0.1, ::1 or localhost)' },
  ),
  headers: z
    .record(z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'an HTTP header name'), HeaderValueSchema)
    .default({}),
  /**
   * Largest HTTP response body read from the server, in bytes (default 4 MiB): counted while it
   * streams, the connection is closed past it (guarded-fetch.ts).
   */
  maxResponseBytes: z
    .number()
    .int()
    .positive()
    .max(64 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /**
   * Addresses or CIDR blocks of loopback, private, link-local or reserved ranges this server may
   * resolve to (opt-in for a server in a VPC, e.g. `["10.0.12.0/24"]`); none by default, so such
   * an address is refused for `https:` as for `http:` (guarded-fetch.ts).
   */
  allowPrivateAddresses: z
    .array(
      z.string().refine((entry) => {
        const [address = '', prefix] = entry.split('/');
        const family = isIP(address);
        if (family === 0) return false;
        return (
          prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
        );
      }, 'an IP address or CIDR block'),
    )
    .max(50)
    .default([]),
}));

/** A stdio server (a local child process; never in AWS). */
export const StdioServerConfigSchema = lazyStrictObject(() => ({
  ...Common,
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /**
   * Environment of the child process beyond the SDK's default inherited variables (PATH, HOME, …;
   * nothing else of cld's environment): values as header values, literal or `{env}`.
   */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), HeaderValueSchema).default({}),
  cwd: z.string().min(1).optional(),
}));

/** One configured MCP server. */
export const McpServerConfigSchema = z.union([HttpServerConfigSchema, StdioServerConfigSchema]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;
export type HttpServerConfig = z.infer<typeof HttpServerConfigSchema>;
export type StdioServerConfig = z.infer<typeof StdioServerConfigSchema>;

/** The configured servers: names unique. */
export const McpServersSchema = z
  .array(McpServerConfigSchema)
  .max(50)
  .refine((servers) => new Set(servers.map((s) => s.name)).size === servers.length, {
    message: 'MCP server names must be unique',
  });

/** True for a Streamable HTTP server. */
export function isHttpServer(server: McpServerConfig): server is HttpServerConfig {
  return 'url' in server;
}

/**
 * Parses the MCP server list from `CLD_MCP_SERVERS` (JSON) or the file `CLD_MCP_CONFIG` names;
 * neither → no servers.
 * @param options.stdio whether stdio servers are allowed (not in AWS: `CLD_BUCKET` set)
 * @throws ConfigError naming the variable for malformed JSON, an invalid entry, both variables
 *   set, or a stdio server where it is not allowed
 */
export function parseMcpServers(
  env: { CLD_MCP_SERVERS?: string | undefined; CLD_MCP_CONFIG?: string | undefined },
  options: { stdio: boolean } = { stdio: true },
): McpServerConfig[] {
  if (env.CLD_MCP_SERVERS && env.CLD_MCP_CONFIG)
    throw new ConfigError('set CLD_MCP_SERVERS or CLD_MCP_CONFIG, not both');
  let text: string;
  let source: string;
  if (env.CLD_MCP_SERVERS) {
    text = env.CLD_MCP_SERVERS;
    source = 'CLD_MCP_SERVERS';
  } else if (env.CLD_MCP_CONFIG) {
    source = `CLD_MCP_CONFIG (${env.CLD_MCP_CONFIG})`;
    try {
      text = readFileSync(env.CLD_MCP_CONFIG, 'utf8');
    } catch (error) {
      throw new ConfigError(`${source} cannot be read: ${(error as Error).message}`, { cause: error });
    }
  } else return [];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${source} is not JSON`, { cause: error });
  }
  const parsed = McpServersSchema.safeParse(json);
  if (!parsed.success) throw new ConfigError(`invalid ${source}: ${z.prettifyError(parsed.error)}`);
  if (!options.stdio) {
    const stdio = parsed.data.find((server) => !isHttpServer(server));
    if (stdio)
      throw new ConfigError(
        `${source}: MCP server "${stdio.name}" is a stdio server; only url servers run in AWS`,
      );
  }
  return parsed.data;
}
