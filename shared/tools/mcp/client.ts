import { ASSET_MODULES, assetModuleUrl } from '../../aws/asset-modules.js';
import { ConfigError, ToolUnavailableError } from '../../errors.js';
import { type HeaderValue, isHttpServer, type McpServerConfig } from './config.js';
import { BlockedAddressError, guardedFetch, ResponseTooLargeError } from './guarded-fetch.js';
import type { Client } from './sdk.js';

/**
 * The MCP client adapter (issue 14 part 1): connects to a configured server with the official
 * MCP TypeScript SDK (`@modelcontextprotocol/client`: `Client` over `StreamableHTTPClientTransport`,
 * or `StdioClientTransport` for a local stdio server), lists its tools (`tools/list`, every page)
 * and calls one (`tools/call`). The SDK is loaded at the first connection, so functions that run
 * no MCP tool never evaluate it.
 *
 * HTTP goes through {@link guardedFetch}: the host's addresses are checked at connect time
 * (loopback, private, link-local and metadata addresses refused unless `allowPrivateAddresses`
 * opts in) and the response is cut off past `maxResponseBytes` while it streams; either is an
 * {@link McpCallError} (not retried).
 *
 * Failures are split in two: a server that cannot be reached (connection refused or reset, DNS,
 * a timeout while connecting, HTTP 429 or 5xx) throws {@link ToolUnavailableError}, which the tool
 * step lets fail the invocation so the event is retried; anything else the server answers (a
 * JSON-RPC error, a malformed response, HTTP 4xx) throws {@link McpCallError}, a tool ERROR.
 */

/** A tool as `tools/list` describes it (the fields the registry keeps). */
export interface McpToolDefinition {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** Hints about the tool's behaviour (`readOnlyHint`, `destructiveHint`, …), as the server declares them. */
  annotations?: Record<string, unknown>;
}

/** What `tools/call` returned. */
export interface McpCallResult {
  /** The tool reported an error (`isError: true`): its content says what went wrong. */
  isError: boolean;
  /** Content blocks (`text`, `image`, `resource_link`, …) as the server sent them. */
  content: unknown[];
  /** Structured result, when the tool declares an output schema. */
  structuredContent?: unknown;
}

/** An open connection to one server. */
export interface McpSession {
  /** `tools/list`, every page. @throws ToolUnavailableError, McpCallError */
  listTools(signal: AbortSignal): Promise<McpToolDefinition[]>;
  /** `tools/call`. @throws ToolUnavailableError, McpCallError */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult>;
  close(): Promise<void>;
}

/** Opens sessions to configured servers. */
export interface McpConnector {
  /** @throws ToolUnavailableError when the server cannot be reached, McpCallError when it answers wrongly, ConfigError for a header that cannot be resolved */
  connect(server: McpServerConfig, signal: AbortSignal): Promise<McpSession>;
}

/** A server answered, but not with a usable result: a tool ERROR (not retried). */
export class McpCallError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'McpCallError';
  }
}

/** Resolves `{ secret }` header values (Secrets Manager in AWS). */
export type SecretReader = (arn: string) => Promise<string>;

/**
 * Resolves a server's configured header values: literals as they are, `{env}` from `env`,
 * `{secret}` through `readSecret`.
 * @throws ConfigError for an unset variable or a secret that cannot be read
 */
export async function resolveValues(
  values: Readonly<Record<string, HeaderValue>>,
  env: NodeJS.ProcessEnv,
  readSecret: SecretReader,
  server: string,
): Promise<Record<string, string>> {
  const entries = await Promise.all(
    Object.entries(values).map(async ([name, value]): Promise<[string, string]> => {
      if (typeof value === 'string') return [name, value];
      if ('env' in value) {
        const found = env[value.env];
        if (!found)
          throw new ConfigError(`MCP server "${server}": ${name} needs ${value.env}, which is not set`);
        return [name, found];
      }
      try {
        return [name, await readSecret(value.secret)];
      } catch (error) {
        throw new ConfigError(
          `MCP server "${server}": ${name} secret cannot be read: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
    }),
  );
  return Object.fromEntries(entries);
}

/**
 * The file next to a function bundle's `index.mjs` that holds the SDK (shared/tools/mcp/sdk.ts
 * bundled on its own: shared/aws/asset-modules.ts), so the `tool` bundle stays small and a cold
 * start that calls no MCP tool never reads it.
 */
export const MCP_SDK_FILE = ASSET_MODULES.mcpSdk.file;

/** The SDK module (sdk.ts): from the asset's {@link MCP_SDK_FILE} in a function bundle, else from node_modules. */
async function loadSdk(): Promise<typeof import('./sdk.js')> {
  // esbuild folds the guard to false in a bundle and drops the branch, so `./sdk.js` (and the
  // SDK with it) is not bundled there.
  if (process.env.CLD_BUNDLE_FUNCTION === undefined) return import('./sdk.js');
  return (await import(assetModuleUrl('mcpSdk'))) as typeof import('./sdk.js');
}

/** Client identity sent in `initialize`. */
const CLIENT_INFO = { name: 'cld', version: '0.1.0' };

/**
 * The SDK-backed connector.
 * @param options.env where `{env}` values come from (default `process.env`)
 * @param options.readSecret reads `{secret}` values (default: fails with ConfigError)
 */
export function sdkConnector(
  options: { env?: NodeJS.ProcessEnv; readSecret?: SecretReader } = {},
): McpConnector {
  const env = options.env ?? process.env;
  const readSecret =
    options.readSecret ??
    ((arn: string) => Promise.reject(new ConfigError(`no secret reader configured for ${arn}`)));
  return {
    async connect(server, signal) {
      const sdk = await loadSdk();
      const client = new sdk.Client(CLIENT_INFO, { capabilities: {} });
      let transport: Parameters<Client['connect']>[0];
      if (isHttpServer(server)) {
        const headers = await resolveValues(server.headers, env, readSecret, server.name);
        transport = new sdk.StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers },
          fetch: guardedFetch({
            maxBytes: server.maxResponseBytes,
            allowPrivateAddresses: server.allowPrivateAddresses,
          }),
        });
      } else transport = await stdioTransport(server, env, readSecret);
      try {
        await client.connect(transport, { signal, timeout: server.timeoutMs });
      } catch (error) {
        await client.close().catch(() => undefined);
        throw classify(error, server.name, 'connect', true);
      }
      return {
        async listTools(listSignal) {
          try {
            const listed = await client.listTools(undefined, {
              signal: listSignal,
              timeout: server.timeoutMs,
            });
            return listed.tools.map((tool) => ({
              name: tool.name,
              ...(tool.description !== undefined ? { description: tool.description } : {}),
              inputSchema: tool.inputSchema as Record<string, unknown>,
              ...(tool.annotations ? { annotations: tool.annotations as Record<string, unknown> } : {}),
            }));
          } catch (error) {
            throw classify(error, server.name, 'tools/list', false);
          }
        },
        async callTool(name, args, callSignal) {
          try {
            const result = await client.callTool(
              { name, arguments: args },
              { signal: callSignal, timeout: server.timeoutMs },
            );
            return {
              isError: result.isError === true,
              content: Array.isArray(result.content) ? result.content : [],
              ...(result.structuredContent !== undefined
                ? { structuredContent: result.structuredContent }
                : {}),
            };
          } catch (error) {
            throw classify(error, server.name, 'tools/call', false);
          }
        },
        close: () => client.close(),
      };
    },
  };
}

async function stdioTransport(
  server: Exclude<McpServerConfig, { url: string }>,
  env: NodeJS.ProcessEnv,
  readSecret: SecretReader,
): Promise<Parameters<Client['connect']>[0]> {
  // Never in a function bundle (esbuild folds the guard there): stdio servers are for local use.
  if (process.env.CLD_BUNDLE_FUNCTION === undefined) {
    const { getDefaultEnvironment, StdioClientTransport } = await import(
      '@modelcontextprotocol/client/stdio'
    );
    const extra = await resolveValues(server.env, env, readSecret, server.name);
    // The SDK's default inherited variables (PATH, HOME, …) plus the configured ones: the child
    // never sees the rest of cld's environment (credentials, tokens).
    return new StdioClientTransport({
      command: server.command,
      args: server.args,
      env: { ...getDefaultEnvironment(), ...extra },
      ...(server.cwd ? { cwd: server.cwd } : {}),
      stderr: 'ignore',
    });
  }
  throw new ConfigError(
    `MCP server "${server.name}" is a stdio server; function bundles run url servers only`,
  );
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'EPIPE',
]);

/** The address guard's or the size limit's error among an error's causes (not retried: the answer would be the same). */
function guardError(error: unknown): Error | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof BlockedAddressError || e instanceof ResponseTooLargeError) return e;
  return undefined;
}

/** True when an error (or one of its causes) is a network failure or an HTTP 429/5xx. */
function unreachable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
    const status = (e as { status?: unknown; data?: { status?: unknown } }).data?.status;
    if (typeof status === 'number' && (status === 429 || status >= 500)) return true;
    if (e instanceof TypeError && /fetch failed/.test(e.message)) return true;
  }
  return false;
}

/**
 * Maps an SDK error to {@link ToolUnavailableError} (retryable) or {@link McpCallError}.
 * @param connecting a timeout or closed connection while connecting is "unreachable" too
 */
function classify(error: unknown, server: string, what: string, connecting: boolean): Error {
  if (error instanceof ConfigError) return error;
  const guarded = guardError(error);
  if (guarded)
    return new McpCallError(`MCP server "${server}" ${what} refused: ${guarded.message}`, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const lost = code === 'REQUEST_TIMEOUT' || code === 'CONNECTION_CLOSED' || code === 'SEND_FAILED';
  if (unreachable(error) || (connecting && lost))
    return new ToolUnavailableError(`MCP server "${server}" unreachable (${what}): ${message}`, {
      cause: error,
      details: { server },
    });
  return new McpCallError(`MCP server "${server}" ${what} failed: ${message}`, { cause: error });
}
