import { spawn } from 'node:child_process';
import { cliBin } from './run-cache.js';

/** What one CLI run printed and how it ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link spawnCli}. */
export interface SpawnCliOptions {
  /** `CLD_*` settings; this process's `CLD_*` and `AWS_*` variables are dropped. */
  env?: Record<string, string>;
  /** Called with the standard output so far on each chunk: send a signal or a line of input. */
  onStdout?: (stdout: string, child: ReturnType<typeof spawn>) => void;
  /** Killed (SIGKILL) after this long, in ms. */
  killAfterMs: number;
  /**
   * Run under a pseudo-terminal (util-linux `script`), so standard input and output are TTYs as
   * in a user's shell; standard error is then part of standard output, lines end with `\r\n`.
   */
  tty?: boolean;
}

/** Runs the `cld` bin built from this tree's source (test/helpers/run-cache.ts), `node <bin> …`. */
export async function spawnCli(args: string[], options: SpawnCliOptions): Promise<CliRun> {
  const bin = await cliBin();
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^(CLD_|AWS_|npm_lifecycle_event$|npm_command$)/.test(key),
    ),
  );
  const command = [process.execPath, bin, ...args];
  const child = options.tty
    ? spawn('script', ['-qec', command.map(shellQuote).join(' '), '/dev/null'], {
        env: { ...clean, ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
    : spawn(command[0] as string, command.slice(1), {
        env: { ...clean, ...options.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
  if (!options.tty) child.stdin?.end();
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    options.onStdout?.(stdout, child);
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
