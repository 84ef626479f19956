import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Served, startServe } from '../../cli/serve.js';
import { parseChannelConfig } from '../../shared/channels/config.js';
import { operatorActor } from '../../shared/channels/operator-routes.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { contractFetch } from '../helpers/openapi-contract.js';

/**
 * Operators only (issue 22, finding 10): `CLD_OPERATOR_SUBJECTS` names the JWT subjects that may
 * use the operator routes, exactly. Empty (or only commas and spaces) means nobody; a subject that
 * merely resembles a listed one (a prefix, an extension, another case) is nobody too. Checked on
 * the parse and the actor function, and over real HTTP through `serve` (`GET /tools`).
 */

const TOKENS: Record<string, string> = {
  'ops-token-0123456789abcdef0': 'ops',
  'ops2-token-0123456789abcdef': 'ops2',
  'op-token-0123456789abcdef01': 'op',
  'OPS-token-0123456789abcdef0': 'OPS',
};
const tokenOf = (subject: string) => Object.entries(TOKENS).find(([, s]) => s === subject)?.[0] as string;

function operatorsOf(value: string | undefined): string[] {
  return parseChannelConfig(value === undefined ? {} : { CLD_OPERATOR_SUBJECTS: value })
    .CLD_OPERATOR_SUBJECTS;
}

describe('CLD_OPERATOR_SUBJECTS and operatorActor', () => {
  it.each([undefined, '', ' ', ',', ' , ,'])('makes nobody an operator when set to %j', (value) => {
    const operators = operatorsOf(value);
    expect(operators).toEqual([]);
    for (const subject of ['ops', 'alice', '', ' '])
      expect(() => operatorActor(subject, operators), subject).toThrow(/only an operator/);
  });

  it('makes exactly the listed subjects operators, not ones that resemble them', () => {
    const operators = operatorsOf(' ops , someone-else ');
    expect(operators).toEqual(['ops', 'someone-else']);
    expect(operatorActor('ops', operators)).toEqual({ kind: 'operator', id: 'http:ops' });
    for (const subject of ['ops2', 'op', 'OPS', ' ops', 'ops,someone-else', 'someone', ''])
      expect(() => operatorActor(subject, operators), subject).toThrow(/only an operator/);
  });
});

describe('the operator routes over HTTP', () => {
  /** Runs `check` against a `serve` with these operators (one at a time: serve provides the process's channels). */
  async function withServe(subjects: string, check: (served: Served) => Promise<void>): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), 'cld-guards-operators-'));
    const served = await startServe({
      port: 0,
      dataDir: dir,
      env: { CLD_API_TOKENS: JSON.stringify(TOKENS), CLD_OPERATOR_SUBJECTS: subjects },
      core: parseEnv({ CLD_DATA_DIR: dir }),
    });
    try {
      await check(served);
    } finally {
      await served.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }

  async function listTools(served: Served, subject: string): Promise<number> {
    const response = await contractFetch(`${served.url}/tools`, {
      headers: { authorization: `Bearer ${tokenOf(subject)}` },
    });
    await response.arrayBuffer();
    return response.status;
  }

  it('lets only the listed subject list tools; near misses get 403', async () => {
    await withServe('ops', async (served) => {
      expect(await listTools(served, 'ops')).toBe(200);
      for (const subject of ['ops2', 'op', 'OPS'])
        expect(await listTools(served, subject), subject).toBe(403);
    });
  });

  it('lets nobody list tools when CLD_OPERATOR_SUBJECTS holds no subject', async () => {
    await withServe(' , ', async (served) => {
      for (const subject of ['ops', 'ops2', 'op', 'OPS'])
        expect(await listTools(served, subject), subject).toBe(403);
    });
  });
});
