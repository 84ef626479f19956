import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliBin } from '../helpers/run-cache.js';
import { startTestMcpServer, type TestMcpServer } from './server.js';

/** The `cld` bin built from this tree's source, once per run (test/helpers/run-cache.ts). */
const CLI = await cliBin();

/**
 * `cld tools discover | list | approve | revoke` as an operator runs it (the `cld` bin built
 * from this tree's source, `node <bin> tools …`, a process per command over one data directory) against a real MCP server.
 */

const run = promisify(execFile);

let mcp: TestMcpServer;
let dataDir: string;

async function tools(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return toolsWith({}, ...args);
}

/** {@link tools} with extra environment variables (over the demo server list). */
async function toolsWith(
  extra: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('CLD_')));
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, 'tools', ...args], {
      env: {
        ...env,
        CLD_DATA_DIR: dataDir,
        CLD_OPERATOR: 'alice',
        CLD_MCP_SERVERS: JSON.stringify([{ name: 'demo', url: mcp.url }]),
        ...extra,
      },
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  mcp = await startTestMcpServer();
  dataDir = await mkdtemp(join(tmpdir(), 'cld-tools-cli-'));
});

afterAll(async () => {
  await mcp?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('cld tools', () => {
  it('discovers, lists, approves and revokes, recording the operator', async () => {
    const discovered = await tools('discover');
    expect(discovered.code).toBe(0);
    expect(discovered.stdout).toContain('demo: 5 tools');
    expect(discovered.stdout).toMatch(/demo__forecast {2}pending {2}\(new or changed definition\)/);

    const approved = await tools('approve', 'demo__forecast', '--reason', 'read-only');
    expect(approved.code).toBe(0);
    expect(approved.stdout).toMatch(/^demo__forecast: approved by cli:alice \(schema [0-9a-f]{12}\)/);

    const listed = await tools('list');
    expect(listed.stdout).toMatch(/demo__forecast {2}approved by cli:alice at \S+ {2}schema [0-9a-f]{12}/);
    expect(listed.stdout).toMatch(/demo__broken {2}pending {2}schema/);

    expect((await tools('revoke', 'demo__forecast')).stdout).toMatch(/^demo__forecast: revoked by cli:alice/);
    const json = JSON.parse((await tools('list', '--json')).stdout) as {
      entries: { name: string; status: string }[];
    }[];
    expect(json[0]?.entries.find((e) => e.name === 'demo__forecast')?.status).toBe('revoked');
  }, 180_000);

  it('fails clearly for an unknown tool, an unknown server and bad usage', async () => {
    const unknown = await tools('approve', 'demo__nothing');
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      3, // not found (cli/errors.ts EXIT)
      'cld: no discovered tool is named "demo__nothing" (run tools discover?)',
    ]);
    const server = await tools('discover', 'other');
    expect(server.code).toBe(2);
    expect(server.stderr).toContain('no MCP server named other is configured');
    expect((await tools('approve')).code).toBe(2);
    // A bad server list fails every subcommand, list included (not "no tools discovered yet").
    const badList = await toolsWith({ CLD_MCP_SERVERS: 'not json' }, 'list');
    expect(badList.code).toBe(2);
    expect(badList.stderr).toContain('CLD_MCP_SERVERS is not JSON');
  }, 180_000);
});
