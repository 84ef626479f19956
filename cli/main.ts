#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CldError } from '../shared/errors.js';
import { CliFailure, EXIT, exitCodeOf, UsageError } from './errors.js';
import { HELP, isCommand, meant, USAGE, usageOf } from './usage.js';

/**
 * `cld` — the local CLI (`npm start -- <command>`): `ingest`, `ask`, `show`. Runs the embedded
 * default: data in `.cld/` under the working directory unless `CLD_DATA_DIR` names another
 * place; the model is offline unless configured (`CLD_MODEL_ID` alone: Bedrock;
 * `CLD_MODEL_PROVIDER=openai` with `CLD_OPENAI_BASE_URL`: an OpenAI-compatible server; see
 * shared/llm/config.ts). Every command but `help`, `--help`/`-h` (also after a command: its own
 * usage) and `--version` first parses the whole environment
 * (cli/settings.ts): a bad setting stops it with exit code 2 naming the variable. Exit codes, the
 * same for every command: cli/errors.ts {@link EXIT} (0 done, 1 failed, 2 usage or bad input,
 * 3 not found, 4 a partial answer of `ask`, 5 waiting for an approval, 130 interrupted).
 */

/** The error for a command {@link USAGE} does not describe, naming the one it was likely meant to be. */
function unknownCommand(command: string): UsageError {
  const guess = meant(command);
  return new UsageError(`unknown command "${command}"${guess ? ` (did you mean "${guess}"?)` : ''}`);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || HELP.has(command)) {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic !== undefined && !isCommand(topic)) throw unknownCommand(topic);
    console.log(topic ? usageOf(topic) : USAGE);
    return command === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (command === '--version' || command === '-v') {
    // Bundled into its own chunk of the built bin (esbuild), read from the tree under tsx.
    const { default: manifest } = await import('../package.json', { with: { type: 'json' } });
    console.log(manifest.version);
    return EXIT.OK;
  }
  if (!isCommand(command)) throw unknownCommand(command);
  // `cld ask --help`: that command's usage, before anything it would parse or load.
  // After `--`, `--help` is a message, not an option.
  const end = rest.indexOf('--');
  if ((end < 0 ? rest : rest.slice(0, end)).some((arg) => HELP.has(arg))) {
    console.log(usageOf(command));
    return EXIT.OK;
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
      throw unknownCommand(command);
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
