import type { McpConnector, McpSession } from './client.js';
import type { McpServerConfig } from './config.js';

/** The MCP part of the Deps: configured servers and the sessions to them. */
export interface McpRuntime {
  servers: readonly McpServerConfig[];
  /** Opens sessions (discovery opens its own, short-lived). */
  connector: McpConnector;
  sessions: McpSessions;
}

/**
 * Open sessions, one per server, kept for the life of the process (a warm Lambda container), so a
 * call costs one `tools/call` round trip, not a new `initialize` handshake. A session that failed
 * in any way is closed and forgotten; the next call connects again.
 */
export class McpSessions {
  readonly #open = new Map<string, Promise<McpSession>>();
  constructor(private readonly connector: McpConnector) {}

  /** The open session to `server`, connecting first when there is none. @throws as McpConnector.connect */
  session(server: McpServerConfig, signal: AbortSignal): Promise<McpSession> {
    let open = this.#open.get(server.name);
    if (!open) {
      open = this.connector.connect(server, signal);
      this.#open.set(server.name, open);
      open.catch(() => this.#open.delete(server.name));
    }
    return open;
  }

  /** Closes and forgets the session to `server`. */
  drop(server: string): void {
    const open = this.#open.get(server);
    this.#open.delete(server);
    open?.then((s) => s.close()).catch(() => undefined);
  }

  /** Closes every session. */
  async closeAll(): Promise<void> {
    const open = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(open.map((p) => p.then((s) => s.close()).catch(() => undefined)));
  }
}
