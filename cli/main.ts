import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import logUpdate from 'log-update';
import { CldError, ValidationError } from '../shared/errors.js';
import type { AnyResource, Message } from '../shared/resources/schemas.js';
import { composeFromEnv, modelFor, parseEnv, SYSTEM_ACTOR } from '../shared/runtime/compose.js';
import { startConversation } from '../shared/runtime/conversation.js';
import type { Deps } from '../shared/runtime/deps.js';
import { createLocalRuntime, type LocalRuntime } from '../shared/runtime/local.js';
import { ingest } from '../shared/search/ingest.js';
import type { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { parseUrn, rootOf } from '../shared/urn.js';
import { replayCommand } from './replay.js';
import { serveCommand } from './serve.js';
import { describeNew, renderTree } from './tree.js';

/**
 * `cld` — the local CLI (`npm start -- <command>`): `ingest`, `ask`, `show`. Runs the embedded
 * default: data in `.cld/` under the working directory unless `CLD_DATA_DIR` names another
 * place; the model is offline unless `CLD_MODEL_ID` names a Bedrock model. Exit code 0 on
 * success; 1 with one clear line on failure; 2 for bad usage.
 */

const USAGE = `usage:
  cld ingest <dir-or-file>...             split documents into chunks and index them
                                          (into the deployed bucket when CLD_BUCKET is set)
  cld ask [--docs <dir>]... [--conversation <name>] "<message>"
                                          plan, run and answer (ingests --docs first)
  cld show <urn>                          print a stored subtree
  cld replay <conversation-urn> [--rebuild]
                                          recompute projections from storage, print differences
  cld serve [--port 8787] [--data-dir <dir>] [--docs <dir>]...
                                          HTTP API, Slack and Teams endpoints on 127.0.0.1`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const env = parseEnv(process.env);
  const dataDir = resolve(env.CLD_DATA_DIR);
  switch (command) {
    case 'ingest': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length === 0) throw new UsageError('ingest needs at least one folder or file');
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
      const runtime = await createLocalRuntime({ dataDir, model: modelFor(env) });
      await runIngest(runtime.deps, positionals);
      await runtime.bus.idle();
      return 0;
    }
    case 'ask':
      return ask(rest, dataDir, env);
    case 'show': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} });
      if (positionals.length !== 1) throw new UsageError('show needs exactly one URN');
      const urn = positionals[0] as string;
      parseUrn(urn);
      const runtime = await createLocalRuntime({ dataDir, model: modelFor(env) });
      const resources = await subtree(runtime, urn);
      if (resources.length === 0) throw new ValidationError(`nothing stored at ${urn}`);
      console.log(renderTree(resources, urn).join('\n'));
      const answer = resources.find((r) => r.meta.type === 'common.Message' && (r as Message).inReplyTo) as
        | Message
        | undefined;
      if (answer) console.log(`\n${answer.content}`);
      return 0;
    }
    case 'serve':
      return serveCommand(rest, env, (message) => new UsageError(message));
    case 'replay':
      return replayCommand(rest, dataDir, env);
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** Ingests documents through `deps` (the embedded default's, or the deployed bucket's). */
async function runIngest(deps: Deps, paths: string[]): Promise<void> {
  for (const path of paths) {
    const found = await stat(resolve(path)).catch(() => undefined);
    if (!found) throw new ValidationError(`docs path does not exist: ${path}`);
  }
  const report = await ingest(paths, {
    resources: deps.resources,
    index: deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  });
  console.log(
    `ingested ${report.files} files: ${report.documents} new (${report.chunks} chunks, ${(report.bytes / 1024).toFixed(0)} KB), ${report.skipped} unchanged, in ${(report.ms / 1000).toFixed(1)} s`,
  );
}

async function subtree(runtime: LocalRuntime, urn: string): Promise<AnyResource[]> {
  const { resources } = runtime.deps;
  const self = await resources
    .find(SYSTEM_ACTOR, parseUrn(urn).elements.at(-1)?.type as never, urn)
    .catch(() => undefined);
  const below = await resources.list(SYSTEM_ACTOR, urn);
  return self ? [self as AnyResource, ...below] : below;
}

async function ask(args: string[], dataDir: string, env: ReturnType<typeof parseEnv>): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { docs: { type: 'string', multiple: true }, conversation: { type: 'string' } },
  });
  const content = positionals.join(' ').trim();
  if (!content) throw new UsageError('ask needs a message');
  const started = Date.now();
  const model = modelFor(env);
  const runtime = await createLocalRuntime({ dataDir, model });
  console.log(`model: ${model.name}   data: ${dataDir}`);
  if (values.docs?.length) {
    await runIngest(runtime.deps, values.docs);
    await runtime.bus.idle();
  } else if ((runtime.deps.search as MiniSearchIndex).size === 0) {
    throw new ValidationError('nothing has been ingested yet: pass --docs <folder>');
  }

  const askStarted = Date.now();
  const routedBefore = runtime.bus.stats.routed;
  const conversationName = values.conversation ?? randomUUID();
  const started2 = await startConversation(runtime.deps.resources, {
    user: `cli:${userInfo().username}`,
    channel: { kind: 'cli' },
    content,
    conversationName,
  });

  const tty = process.stdout.isTTY === true;
  const printed = new Set<string>();
  const render = async () => {
    const resources = await subtree(runtime, started2.conversation);
    const lines = renderTree(resources, started2.conversation);
    if (tty) logUpdate(lines.join('\n'));
    else
      for (const resource of resources) {
        if (
          printed.has(resource.meta.id) ||
          (/\/common\.Message\.[0-9a-f]+$/.test(resource.meta.id) &&
            (resource as Message).meta.name.startsWith('turn-'))
        )
          continue;
        printed.add(resource.meta.id);
        console.log(describeNew(resource, resources));
      }
    return resources;
  };
  const timer = setInterval(() => void render().catch(() => undefined), tty ? 150 : 500);
  await runtime.bus.idle();
  clearInterval(timer);
  const resources = await render();
  if (tty) logUpdate.done();
  else console.log(`\n${renderTree(resources, started2.conversation).join('\n')}`);

  const answer = resources.find((r) => r.meta.id === started2.answer) as Message | undefined;
  const stats = runtime.bus.stats;
  const written = resources.length;
  if (runtime.bus.deadLetters.length > 0) {
    const letter = runtime.bus.deadLetters[0];
    console.error(
      `dead-lettered: ${letter?.target} ${letter?.event.detail.object.key}: ${letter?.error.message}`,
    );
  }
  if (!answer)
    throw new CliFailure(
      `no answer was produced for ${started2.message} (${runtime.bus.deadLetters.length} dead letters)`,
    );
  console.log(`\n${answer.content}\n`);
  if (answer.citations?.length)
    console.log(`citations:\n${answer.citations.map((c) => `  ${c}`).join('\n')}`);
  console.log(`conversation: ${rootOf(started2.conversation)}`);
  console.log(
    `${written} resources, ${stats.routed - routedBefore} events routed, ask ${((Date.now() - askStarted) / 1000).toFixed(2)} s (total ${((Date.now() - started) / 1000).toFixed(2)} s)`,
  );
  if (answer.error) throw new CliFailure(`the request failed: ${answer.error.message}`);
  return 0;
}

class CliFailure extends Error {}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message =
      error instanceof UsageError
        ? `${error.message}\n${USAGE}`
        : error instanceof CldError || error instanceof CliFailure
          ? error.message
          : error instanceof Error
            ? error.message
            : String(error);
    console.error(`cld: ${message}`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  },
);
