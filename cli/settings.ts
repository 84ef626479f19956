import { type ChannelConfig, parseChannelConfig } from '../shared/channels/config.js';
import { parseSettings, type Settings } from '../shared/runtime/settings.js';
import { type McpServerConfig, parseMcpServers } from '../shared/tools/mcp/config.js';

/** What every CLI command is configured with, parsed once at start ({@link loadCliSettings}). */
export interface CliSettings extends Settings {
  /** The channels' variables (`CLD_OPERATOR_SUBJECTS`, body limits, Slack and Teams, …). */
  channels: ChannelConfig;
  /** `CLD_MCP_SERVERS` or `CLD_MCP_CONFIG` (stdio servers only without `CLD_BUCKET`). */
  mcpServers: McpServerConfig[];
}

/**
 * The one settings path of the CLI (issue 23): every command (`ingest`, `ask`, `show`, `serve`,
 * `resume`, `replay`, `tools`) parses the whole environment here, before doing anything, with the
 * schemas the functions use (shared/runtime/settings.ts `parseSettings`: `CLD_*` variables,
 * `CLD_LIMITS`, `CLD_TOOL_APPROVAL`; shared/channels/config.ts; shared/tools/mcp/config.ts), so a
 * setting is honoured or refused the same way by every command — never silently ignored.
 * @throws ConfigError naming the variable (and the key within it) that is malformed, unknown or
 *   out of range: exit code 2 (cli/errors.ts)
 */
export function loadCliSettings(environment: NodeJS.ProcessEnv): CliSettings {
  const settings = parseSettings(environment);
  return {
    ...settings,
    channels: parseChannelConfig(environment),
    mcpServers: parseMcpServers(settings.env, { stdio: !settings.env.CLD_BUCKET }),
  };
}
