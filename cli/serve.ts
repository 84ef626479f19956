import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { buildConsole } from '../console/build.js';
import { parseToolApproval } from '../shared/catalog/catalog.js';
import { parseChannelConfig } from '../shared/channels/config.js';
import { forgetConsoleAssets } from '../shared/channels/console-assets.js';
import { createChannels, provideChannels } from '../shared/channels/context.js';
import { API_ROUTES } from '../shared/channels/routes.js';
import { ValidationError } from '../shared/errors.js';
import type { SchedulingPolicy } from '../shared/events/scheduler.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import { modelFor } from '../shared/runtime/adapters/model.js';
import { mcpFor } from '../shared/runtime/adapters/tools.js';
import { createLocalRuntime, type LocalRuntime } from '../shared/runtime/local.js';
import {
  type ApiTokens,
  apiTokens,
  type LocalGateway,
  parseApiTokens,
  startLocalGateway,
} from '../shared/runtime/local-gateway.js';
import {
  type LocalSweeper,
  type ResumeReport,
  resumeLocal,
  startLocalSweeper,
} from '../shared/runtime/local-recovery.js';
import { type Env, parseLimits } from '../shared/runtime/settings.js';
import { ingest } from '../shared/search/ingest.js';
import type { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import type { CliSettings } from './settings.js';

/**
 * `cld serve [--port 8787] [--data-dir .cld] [--docs <dir>]...`: the HTTP API, Slack and Teams
 * endpoints on 127.0.0.1, served by the same Lambda handlers as in AWS through a local stand-in
 * for API Gateway (shared/runtime/local-gateway.ts), with the embedded default runtime behind
 * them. Bearer tokens come from `CLD_API_TOKENS` (`{"<token>": "<user id>"}`); without it one
 * token is generated for user `local` and printed. At start it resumes the conversations an
 * earlier run left unfinished (shared/runtime/local-recovery.ts) and runs the sweeper while it
 * serves. Stops cleanly on SIGINT/SIGTERM.
 */

/** Default port of `serve`. */
export const DEFAULT_PORT = 8787;

/** How long a stop waits for running work (the bus to go idle), in ms. */
export const STOP_GRACE_MS = 10_000;

/** Options of {@link startServe}. */
export interface ServeOptions {
  /** 0 → any free port. */
  port: number;
  dataDir: string;
  /** Environment the channels' config, tokens and model are read from. */
  env: NodeJS.ProcessEnv;
  /** Parsed core config (model, limits). */
  core: Env;
  /** Folders or files to ingest before serving. */
  docs?: string[];
  /** Output lines (requests, dead letters); default none. */
  print?: (line: string) => void;
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** Order of queued deliveries on the local bus (default `newest-first`; the burst bench compares them). */
  scheduling?: SchedulingPolicy;
  /** Invocations the local bus runs at once (default 4). */
  concurrency?: number;
}

/** A running server. */
export interface Served {
  url: string;
  runtime: LocalRuntime;
  gateway: LocalGateway;
  /** The generated development token, when `CLD_API_TOKENS` was not set. */
  generatedToken?: { token: string; user: string };
  /** What the resume at start did (conversations left unfinished by an earlier run). */
  resumed: ResumeReport;
  /** The sweeper re-driving stalled conversations (shared/runtime/local-recovery.ts). */
  sweeper: LocalSweeper;
  /** Closes the server and waits (at most {@link STOP_GRACE_MS}) for running work. */
  stop(): Promise<void>;
}

/** Starts the server. @throws ConfigError for bad channel config or tokens, ValidationError for bad docs paths */
export async function startServe(options: ServeOptions): Promise<Served> {
  const print = options.print ?? (() => undefined);
  const config = parseChannelConfig(options.env);
  // The web console, built from its sources at every start (what the stack's bundling also does).
  const consoleDir = config.CLD_CONSOLE_DIR ?? join(options.dataDir, 'console');
  if (!config.CLD_CONSOLE_DIR) {
    await buildConsole(consoleDir);
    forgetConsoleAssets(consoleDir);
  }
  const channels = createChannels({ ...config, CLD_CONSOLE_DIR: consoleDir });
  let tokens: ApiTokens;
  let generatedToken: Served['generatedToken'];
  if (options.env.CLD_API_TOKENS) tokens = parseApiTokens(options.env.CLD_API_TOKENS);
  else {
    generatedToken = { token: randomBytes(24).toString('base64url'), user: 'local' };
    tokens = apiTokens({ [generatedToken.token]: generatedToken.user });
  }
  const mcp = await mcpFor(options.core);
  const runtime = await createLocalRuntime({
    dataDir: options.dataDir,
    model: modelFor(options.core),
    // CLD_LIMITS (the approval time among them) and CLD_TOOL_APPROVAL, as the functions read them.
    limits: parseLimits(options.core.CLD_LIMITS),
    toolApproval: parseToolApproval(options.core.CLD_TOOL_APPROVAL),
    ...(mcp ? { mcp } : {}),
    logLevel: options.logLevel ?? 'SILENT',
    ...(options.scheduling ? { scheduling: options.scheduling } : {}),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    onDeadLetter: (letter) =>
      print(`dead-lettered: ${letter.target} ${letter.event.detail.object.key}: ${letter.error.message}`),
  });
  provideChannels(channels);
  if (options.docs?.length) {
    for (const path of options.docs) {
      if (!(await stat(resolve(path)).catch(() => undefined)))
        throw new ValidationError(`docs path does not exist: ${path}`);
    }
    const report = await ingest(options.docs, {
      resources: runtime.deps.resources,
      index: runtime.deps.search as MiniSearchIndex,
      actor: SYSTEM_ACTOR,
      cwd: process.cwd(),
    });
    await runtime.bus.idle();
    print(
      `ingested ${report.files} files: ${report.documents} new (${report.chunks} chunks), ${report.skipped} unchanged`,
    );
    for (const file of report.leftOut) print(`left out ${file.path}: ${file.reason}`);
    for (const problem of report.glossaryProblems ?? [])
      print(`API glossary of ${problem.path} left out (searched without it): ${problem.reason}`);
  }
  // Work an earlier run left unfinished (a crash, a kill) is re-driven before new work comes in.
  const resumed = await resumeLocal(runtime, { dataDir: options.dataDir, print });
  if (resumed.outcomes.length > 0)
    print(
      `resumed ${resumed.outcomes.filter((o) => o.action === 'redriven').length} unfinished conversation(s), closed ${resumed.outcomes.filter((o) => o.action === 'closed').length}`,
    );
  const sweeper = startLocalSweeper(runtime, { print });
  const gateway = await startLocalGateway({
    port: options.port,
    tokens,
    maxBodyBytes: {
      http: config.CLD_HTTP_MAX_BODY_BYTES,
      slack: config.CLD_WEBHOOK_MAX_BODY_BYTES,
      teams: config.CLD_WEBHOOK_MAX_BODY_BYTES,
    },
    onRequest: ({ method, path, status, ms }) => print(`${method} ${path} ${status} ${ms.toFixed(0)} ms`),
    onError: (error) => print(`handler failed: ${error instanceof Error ? error.message : String(error)}`),
  });
  return {
    url: gateway.url,
    runtime,
    gateway,
    ...(generatedToken ? { generatedToken } : {}),
    resumed,
    sweeper,
    async stop() {
      await sweeper.stop();
      await gateway.close();
      await Promise.race([
        runtime.bus.idle(),
        new Promise((done) => setTimeout(done, STOP_GRACE_MS).unref()),
      ]);
      provideChannels(undefined);
    },
  };
}

const Port = z.coerce.number().int().min(0).max(65_535);

/**
 * The `serve` command: starts the server, prints its URL, routes and (when generated) the token,
 * and runs until SIGINT or SIGTERM.
 * @param settings the environment as every command parses it (cli/settings.ts)
 * @param usage builds the CLI's usage error (exit code 2) for a bad flag
 * @returns the exit code
 * @throws the `usage` error for a bad `--port`; ConfigError, ValidationError from {@link startServe}
 */
export async function serveCommand(
  args: string[],
  settings: CliSettings,
  usage: (message: string) => Error,
): Promise<number> {
  const core = settings.env;
  const { values } = parseArgs({
    args,
    allowPositionals: false,
    options: {
      port: { type: 'string', default: String(DEFAULT_PORT) },
      'data-dir': { type: 'string' },
      docs: { type: 'string', multiple: true },
    },
  });
  const port = Port.safeParse(values.port);
  if (!port.success) throw usage(`--port must be 0-65535, got "${values.port}"`);
  const dataDir = resolve(values['data-dir'] ?? core.CLD_DATA_DIR);
  const served = await startServe({
    port: port.data,
    dataDir,
    env: process.env,
    core,
    ...(values.docs ? { docs: values.docs } : {}),
    print: (line) => console.log(line),
    logLevel: 'WARN',
  });
  console.log(`cld serve: ${served.url}   model: ${served.runtime.deps.model.name}   data: ${dataDir}`);
  console.log(`  console: ${served.url}/  (sign in with the bearer token)`);
  for (const route of API_ROUTES)
    console.log(
      `  ${route.method.padEnd(4)} ${served.url}${route.path}  (${route.auth === 'jwt' ? 'bearer token' : route.function === 'http' ? 'public' : 'signed'})`,
    );
  if (served.generatedToken)
    console.log(
      `bearer token for user "${served.generatedToken.user}": ${served.generatedToken.token}\n` +
        `  (set CLD_API_TOKENS='{"<token>":"<user>"}' to choose tokens)`,
    );
  const signal = await new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', () => done('SIGINT'));
    process.once('SIGTERM', () => done('SIGTERM'));
  });
  console.log(`${signal}: stopping`);
  await served.stop();
  return 0;
}
