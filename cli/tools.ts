import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError } from '../shared/errors.js';
import { type Actor, SYSTEM_ACTOR } from '../shared/policy/port.js';
import type { ResourceIndex } from '../shared/resources/resource-index.js';
import type { Env } from '../shared/runtime/settings.js';
import { decideTool, discoverServer, type RegistryView, readRegistry } from '../shared/tools/registry.js';
import { UsageError } from './errors.js';
import type { CliSettings } from './settings.js';
import { readOnlyResources } from './subtree.js';

/**
 * `cld tools list | discover [<server>...] | approve <name> | revoke <name>` (issue 14 part 2):
 * the operator's side of the tool registry (shared/tools/registry.ts), on the local data
 * directory, or on the deployed bucket when `CLD_BUCKET` is set (as `ingest`). Discovery stores
 * as the system actor (rule `system-discover-tools`); decisions are the operator person's
 * (`{kind: operator, id: cli:<CLD_OPERATOR or the OS user>}`, rule `operator-decide-tools`).
 * @returns the exit code: 0, or 1 when a server could not be discovered
 * @throws UsageError for bad arguments; NotFoundError for an unknown tool (exit code 3);
 *   ConfigError when no server is configured for `discover` (exit code 2)
 */
export async function toolsCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  const { env } = settings;
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: { reason: { type: 'string' }, json: { type: 'boolean' } },
  });
  const [sub, ...names] = positionals;
  const operator: Actor = { kind: 'operator', id: `cli:${process.env.CLD_OPERATOR ?? userInfo().username}` };
  // A bad server list is a configuration error for every subcommand, not only `discover`: parsed
  // with every other setting before any command runs (cli/settings.ts).
  // `list` only reads: the local store alone; the others load the runtime (issue 23, item 5).
  const resources = await registryResources(dataDir, env, sub === 'list');
  const now = new Date();
  switch (sub) {
    case 'list': {
      const view = await readRegistry(resources, operator);
      console.log(values.json ? JSON.stringify(view.servers, null, 2) : renderRegistry(view).join('\n'));
      return 0;
    }
    case 'discover': {
      const { mcpFor } = await import('../shared/runtime/adapters/tools.js');
      const mcp = await mcpFor(env);
      if (!mcp) throw new ConfigError('no MCP server is configured (CLD_MCP_SERVERS or CLD_MCP_CONFIG)');
      const unknown = names.filter((n) => !mcp.servers.some((s) => s.name === n));
      if (unknown.length) throw new UsageError(`no MCP server named ${unknown.join(', ')} is configured`);
      const servers = mcp.servers.filter((s) => names.length === 0 || names.includes(s.name));
      let failed = 0;
      for (const server of servers) {
        const report = await discoverServer(resources, SYSTEM_ACTOR, server, mcp.connector, now);
        if (report.error) {
          failed++;
          console.log(`${server.name}: not discovered: ${report.error}`);
          continue;
        }
        console.log(`${server.name}: ${report.tools.length} tools`);
        for (const tool of report.tools)
          console.log(`  ${tool.name}  ${tool.status}${tool.changed ? '  (new or changed definition)' : ''}`);
        for (const skipped of report.skipped) console.log(`  skipped ${skipped.tool}: ${skipped.reason}`);
      }
      return failed ? 1 : 0;
    }
    case 'approve':
    case 'revoke': {
      if (names.length !== 1)
        throw new UsageError(`tools ${sub} needs exactly one tool name (<server>__<tool>)`);
      const { entry, approval } = await decideTool(
        resources,
        operator,
        {
          name: names[0] as string,
          decision: sub === 'approve' ? 'approved' : 'revoked',
          by: operator.id,
          reason: values.reason,
        },
        now,
      );
      console.log(
        `${entry.name}: ${approval.decision} by ${approval.by} (schema ${approval.schemaHash.slice(0, 12)})`,
      );
      return 0;
    }
    default:
      throw new UsageError('tools needs list, discover, approve <name> or revoke <name>');
  }
}

/**
 * The registry's resources: the deployed bucket's with `CLD_BUCKET`, else the local data
 * directory's — read only (no runtime loaded, cli/subtree.ts) when `readOnly`.
 */
async function registryResources(dataDir: string, env: Env, readOnly: boolean): Promise<ResourceIndex> {
  if (env.CLD_BUCKET) {
    const { composeFromEnv } = await import('../shared/runtime/compose.js');
    const deps = await composeFromEnv({
      ...process.env,
      CLD_FUNCTION: 'local',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    });
    return deps.resources;
  }
  if (readOnly) return readOnlyResources(dataDir);
  const { createLocalRuntime } = await import('../shared/runtime/local.js');
  return (await createLocalRuntime({ dataDir })).deps.resources;
}

/** One line per current tool: name, status, who decided last, schema hash. */
export function renderRegistry(view: RegistryView): string[] {
  if (view.servers.length === 0) return ['no tools discovered yet (cld tools discover)'];
  return view.servers.flatMap(({ server, discovery, entries }) => [
    `${server} (discovered ${discovery.at}, ${entries.length} tools)`,
    ...entries.map((e) => {
      const last = e.approvals.at(-1);
      const decided = last && e.status !== 'pending' ? ` by ${last.by} at ${last.at}` : '';
      return `  ${e.name}  ${e.status}${decided}  schema ${e.tool.mcp?.schemaHash.slice(0, 12)}`;
    }),
  ]);
}
