import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** s3rver's hard-coded access key pair (its dummy account); any other key is rejected. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** s3rver signs continuation tokens for `us-east-1` only and rejects tokens of other regions. */
export const S3RVER_REGION = 'us-east-1';

/** A running s3rver child process. */
export interface S3rverHandle {
  /** `http://127.0.0.1:<port>`; use it with `forcePathStyle: true`. */
  endpoint: string;
  /** A bucket that exists from the start. */
  bucket: string;
  /** Stops the server, waits for the process to exit and removes its data directory. */
  stop(): Promise<void>;
}

const SERVER_SCRIPT = fileURLToPath(new URL('./s3rver-server.mjs', import.meta.url));
const STARTUP_TIMEOUT_MS = 15_000;

/**
 * Starts s3rver in a child process (`node --openssl-legacy-provider`, needed for its DES
 * continuation tokens; the flag stays out of the vitest workers) on an ephemeral port of
 * 127.0.0.1, with a fresh temporary data directory and one bucket.
 * @throws Error when the process exits or stays silent for 15 s before reporting its port.
 */
export async function startS3rver(): Promise<S3rverHandle> {
  const directory = await mkdtemp(join(tmpdir(), 'cld-s3rver-'));
  const bucket = 'cld-test';
  const child = spawn(process.execPath, ['--openssl-legacy-provider', SERVER_SCRIPT, directory, bucket], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let port: number;
  try {
    port = await readPort(child);
  } catch (error) {
    child.kill();
    await exited;
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    async stop() {
      child.stdin.end();
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function readPort(child: ChildProcessByStdio<Writable, Readable, Readable>): Promise<number> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(
      () => reject(new Error(`s3rver did not start in ${STARTUP_TIMEOUT_MS} ms: ${stderr}`)),
      STARTUP_TIMEOUT_MS,
    );
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const newline = stdout.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      const { port } = JSON.parse(stdout.slice(0, newline)) as { port: number };
      resolve(port);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with code ${code} before reporting its port: ${stderr}`));
    });
  });
}
