#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CldError } from '../shared/errors.js';
import { CliFailure, EXIT, exitCodeOf, UsageError } from './errors.js';

/**
 * `cld` — the local CLI (`npm start -- <command>`): `ingest`, `ask`, `show`. Runs the embedded
 * default: data in `.cld/` under the working directory unless `CLD_DATA_DIR` names another
 * place; the model is offline unless configured (`CLD_MODEL_ID` alone: Bedrock;
 * `CLD_MODEL_PROVIDER=openai` with `CLD_OPENAI_BASE_URL`: an OpenAI-compatible server; see
 * shared/llm/config.ts). Every command but `help` first parses the whole environment
 * (cli/settings.ts): a bad setting stops it with exit code 2 naming the variable. Exit codes, the
 * same for every command: cli/errors.ts {@link EXIT} (0 done, 1 failed, 2 usage or bad input,
 * 3 not found, 4 a partial answer of `ask`, 5 waiting for an approval, 130 interrupted).
 */

const USAGE = `usage:
  cld ingest <dir-or-file>...             split documents into chunks and index them
                                          (into the deployed bucket when CLD_BUCKET is set)
  cld ask [--docs <dir>]... [--conversation <urn-or-name> [--new]] "<message>" | - | --file <path>
                                          plan, run and answer (ingests --docs first); the
                                          message as arguments, from standard input (-) or a
                                          file, at most 16,000 characters; --conversation adds
                                          it to the conversation whose URN ask printed, or to a
                                          stored name (--new: start it); a tool call waiting for
                                          approval is asked y/N (piped: exit 5, see approvals)
  cld show <urn>                          a chunk's source file and text, or a stored subtree
  cld resume [<conversation-urn>]         re-drive what an interrupted run left pending
  cld replay <conversation-urn> [--rebuild]
                                          recompute projections from storage, print differences
  cld serve [--port 8787] [--data-dir <dir>] [--docs <dir>]...
                                          HTTP API, Slack and Teams endpoints on 127.0.0.1
  cld tools list [--json]                 discovered MCP tools and their approval status
  cld tools discover [<server>]...        tools/list the configured MCP servers (CLD_MCP_SERVERS
                                          or CLD_MCP_CONFIG); a changed tool is pending again
  cld tools approve|revoke <server>__<tool> [--reason <text>]
                                          record an operator's decision on a discovered tool
  cld approvals list [--all] [<conversation-urn>]
                                          tool calls waiting for your approval
  cld approvals approve|deny <request-urn> [--reason <text>]
                                          decide one, then run the conversation on and answer
exit codes: 0 done, 1 failed, 2 bad usage, input or setting (CLD_*), 3 not found,
  4 partial answer (some parts not answered), 5 waiting for an approval (ask without a
  terminal), 130 interrupted`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help') {
    console.log(USAGE);
    return command === undefined ? EXIT.USAGE : EXIT.OK;
  }
  // Loaded here, not at the top: `cld --help` loads no more than this file (issue 23).
  const settings = (await import('./settings.js')).loadCliSettings(process.env);
  const { env } = settings;
  const dataDir = resolve(env.CLD_DATA_DIR);
  switch (command) {
    case 'ingest': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length === 0) throw new UsageError('ingest needs at least one folder or file');
      const [{ composeFromEnv }, { embedderFor, modelFor }, { createLocalRuntime }, { runIngest }] =
        await Promise.all([
          import('../shared/runtime/compose.js'),
          import('../shared/runtime/adapters/model.js'),
          import('../shared/runtime/local.js'),
          import('./resources.js'),
        ]);
      if (env.CLD_BUCKET) {
        // The deployed bucket: documents and the chunk index go to S3, where the deployed
        // assistant and tool functions read them (EventBridge rules match only conversation keys).
        console.log(`bucket: ${env.CLD_BUCKET}`);
        const deps = await composeFromEnv({
          ...process.env,
          CLD_FUNCTION: 'local',
          POWERTOOLS_LOG_LEVEL: 'ERROR',
        });
        await runIngest(deps, positionals);
        return 0;
      }
      const runtime = await createLocalRuntime({
        dataDir,
        model: modelFor(env),
        embedder: await embedderFor(env),
        limits: settings.limits,
      });
      await runIngest(runtime.deps, positionals);
      await runtime.bus.idle();
      return 0;
    }
    // Each command's modules are loaded when it runs: a bad setting or usage fails before.
    case 'ask':
      return (await import('./ask.js')).askCommand(rest, dataDir, settings);
    case 'show':
      return (await import('./show.js')).showCommand(rest, dataDir, settings);
    case 'serve':
      return (await import('./serve.js')).serveCommand(rest, settings, (message) => new UsageError(message));
    case 'replay':
      return (await import('./replay.js')).replayCommand(rest, dataDir, settings);
    case 'resume':
      return (await import('./resume.js')).resumeCommand(rest, dataDir, settings);
    case 'tools':
      return (await import('./tools.js')).toolsCommand(rest, dataDir, settings);
    case 'approvals':
      return (await import('./approvals.js')).approvalsCommand(rest, dataDir, settings);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (thrown: unknown) => {
    // node:util parseArgs rejects unknown options and missing values with ERR_PARSE_ARGS_* codes.
    const code = (thrown as { code?: unknown } | undefined)?.code;
    const error =
      typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')
        ? new UsageError((thrown as Error).message)
        : thrown;
    const message =
      error instanceof UsageError
        ? `${error.message}\n${USAGE}`
        : error instanceof CldError || error instanceof CliFailure
          ? error.message
          : error instanceof Error
            ? error.message
            : String(error);
    console.error(`cld: ${message}`);
    process.exitCode = exitCodeOf(error);
  },
);
