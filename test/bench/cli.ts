import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAIStub } from '../helpers/openai-stub.js';

/**
 * `npm run bench:cli`: the CLI's reaction times that test/e2e/cli.test.ts once asserted (moved here
 * by issue 23: no wall-clock assertion in a test). Prints each with the load average; exits 1 when
 * one is over its bound:
 * - a 1 MB message from standard input is refused within {@link REFUSE_BOUND_MS} of a plain start
 *   (`cld ask -` with an empty message: the same modules loaded), i.e. read only up to just past
 *   the limit;
 * - `ask` stops within {@link INTERRUPT_BOUND_MS} of Ctrl-C (SIGINT) while the model (an
 *   OpenAI-compatible stub that never answers) is still answering.
 */
const REFUSE_BOUND_MS = 2_000;
const INTERRUPT_BOUND_MS = 2_000;

interface Run {
  code: number | null;
  ms: number;
  /** ms from `onStdout`'s signal to exit, when it sent one. */
  afterSignalMs?: number;
}

function cli(
  args: string[],
  env: Record<string, string>,
  options: { stdin?: string; interruptWhen?: (stdout: string) => boolean } = {},
): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CLD_|AWS_)/.test(key)));
  const started = performance.now();
  let signalled: number | undefined;
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
    env: { ...clean, ...env },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (signalled === undefined && options.interruptWhen?.(stdout)) {
      signalled = performance.now();
      child.kill('SIGINT');
    }
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const ended = performance.now();
      resolve({
        code,
        ms: ended - started,
        ...(signalled !== undefined ? { afterSignalMs: ended - signalled } : {}),
      });
    });
  });
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cld-bench-cli-'));
  const env = { CLD_DATA_DIR: dataDir };
  console.log(`load average ${loadavg()[0]?.toFixed(1)}`);
  const ingested = await cli(['ingest', 'node_modules/aws-cdk-lib/aws-events'], env);
  if (ingested.code !== 0) throw new Error(`ingest exited ${ingested.code}`);
  let over = 0;

  // A plain start of `ask`: its modules loaded, an empty message refused (exit 2).
  const plain = await cli(['ask', '-'], env, { stdin: '\n' });
  const refused = await cli(['ask', '-'], env, { stdin: 'bucket events rule '.repeat(55_189) });
  const refuseMs = refused.ms - plain.ms;
  if (refused.code !== 1 || refuseMs >= REFUSE_BOUND_MS) over++;
  console.log(
    `1 MB message refused ${refuseMs.toFixed(0)} ms after a plain start (ask with an empty message ${plain.ms.toFixed(0)} ms, exit ${refused.code}; bound ${REFUSE_BOUND_MS} ms)`,
  );

  const stub = await startOpenAIStub();
  stub.respond = () => ({ hang: true });
  const interrupted = await cli(
    ['ask', 'How do I send events to the bus?'],
    { ...env, CLD_MODEL_PROVIDER: 'openai', CLD_OPENAI_BASE_URL: stub.baseUrl, CLD_MODEL_ID: 'stub-model' },
    { interruptWhen: (stdout) => stdout.includes('user: "') },
  );
  await stub.stop();
  const afterSignal = interrupted.afterSignalMs ?? Number.POSITIVE_INFINITY;
  if (interrupted.code !== 130 || afterSignal >= INTERRUPT_BOUND_MS) over++;
  console.log(
    `Ctrl-C to exit ${afterSignal.toFixed(0)} ms (exit ${interrupted.code}; bound ${INTERRUPT_BOUND_MS} ms)`,
  );
  process.exitCode = over > 0 ? 1 : 0;
}

await main();
