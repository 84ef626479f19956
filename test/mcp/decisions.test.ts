/**
 * Concurrent operator decisions on one discovered tool (issue 22 finding 4): whoever races —
 * the same operator included — exactly one decision is stored per number, the winner's answer is
 * what `readRegistry` shows, and the loser gets DecisionConflictError (409) with the status now.
 *
 * The race is made certain, not hoped for: each store is wrapped so that a decision's create is
 * held until the other request's create has arrived too, so both requests read the registry
 * before either writes (the window a real race opens). The conditional create underneath is the
 * real one: an exclusive create on the filesystem, and `If-None-Match: *` through the real S3
 * client to s3rver behind test/helpers/conditional-put-proxy.ts (S3's 412 semantics).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionConflictError } from '../../shared/errors.js';
import type { Actor } from '../../shared/policy/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import type { ToolDiscovery } from '../../shared/resources/schemas.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import type { StorageInterface } from '../../shared/storage/port.js';
import { createS3Client, S3Storage } from '../../shared/storage/s3.js';
import type { McpServerConfig } from '../../shared/tools/mcp/config.js';
import { decideTool, readRegistry, serverUrn, toolFromDefinition } from '../../shared/tools/registry.js';
import { type ConditionalPutProxy, startConditionalPutProxy } from '../helpers/conditional-put-proxy.js';
import { S3RVER_CREDENTIALS, S3RVER_REGION, type S3rverHandle, startS3rver } from '../helpers/s3rver.js';

const OPS: Actor = { kind: 'operator', id: 'http:ops' };
const OTHER_OPS: Actor = { kind: 'operator', id: 'http:ops2' };
const SERVER = {
  name: 'demo',
  url: 'https://mcp.example.com/mcp',
  headers: {},
  timeoutMs: 1_000,
  maxResultChars: 1_000,
} as McpServerConfig;

/**
 * `storage` whose creates of `tool.ToolApproval` keys are held until `parties` of them are
 * waiting, then released together (once; later creates pass straight through).
 */
function racing(storage: StorageInterface, parties = 2): StorageInterface {
  const waiting: (() => void)[] = [];
  let released = false;
  return {
    get: (key) => storage.get(key),
    getMany: (keys) => storage.getMany(keys),
    delete: (key) => storage.delete(key),
    findByPrefix: (prefix, options) => storage.findByPrefix(prefix, options),
    findByExtension: (extension) => storage.findByExtension(extension),
    async put(key, data) {
      if (!released && key.includes('tool.ToolApproval')) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length >= parties) {
            released = true;
            for (const go of waiting) go();
          }
        });
      }
      return storage.put(key, data);
    },
  };
}

/** A registry with one discovered tool, `demo__forecast`, no decision yet. */
async function seeded(storage: StorageInterface): Promise<ResourceIndex> {
  // No read cache: each request reads the store, as separate Lambda invocations would.
  const resources = new ResourceIndex(storage, builtinPolicy(), { maxEntries: 0 });
  const now = new Date('2026-01-01T00:00:00.000Z');
  const tool = toolFromDefinition(
    SERVER,
    { name: 'forecast', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } },
    now,
  );
  await resources.put(SYSTEM_ACTOR, tool);
  const discovery: ToolDiscovery = {
    meta: withMeta(
      { type: 'tool.Discovery', name: `discovery-${now.toISOString()}`, parent: serverUrn('demo') },
      now,
    ),
    server: 'demo',
    at: now.toISOString(),
    tools: [{ name: tool.function.name, tool: tool.meta.id, schemaHash: tool.mcp?.schemaHash as string }],
  };
  await resources.put(SYSTEM_ACTOR, discovery);
  return resources;
}

type Outcome = { ok: true; status: string } | { ok: false; error: unknown };

async function decide(
  resources: ResourceIndex,
  actor: Actor,
  decision: 'approved' | 'revoked',
  reason?: string,
): Promise<Outcome> {
  try {
    const { entry } = await decideTool(
      resources,
      actor,
      { name: 'demo__forecast', decision, by: actor.id, reason },
      new Date(),
    );
    return { ok: true, status: entry.status };
  } catch (error) {
    return { ok: false, error };
  }
}

async function stored(resources: ResourceIndex) {
  const entry = (await readRegistry(resources, OPS)).servers[0]?.entries[0];
  return { status: entry?.status, decisions: entry?.approvals.map((a) => [a.decision, a.by]) ?? [] };
}

let dir: string;
let s3: S3rverHandle;
let proxy: ConditionalPutProxy;
let client: S3Client;
let buckets = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cld-decisions-'));
  s3 = await startS3rver();
  proxy = await startConditionalPutProxy(s3.endpoint);
  client = createS3Client({
    region: S3RVER_REGION,
    endpoint: proxy.endpoint,
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
}, 60_000);

afterAll(async () => {
  client?.destroy();
  await proxy?.stop();
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const stores: [string, () => Promise<StorageInterface>][] = [
  ['the filesystem store', async () => new FilesystemStorage(await mkdtemp(join(dir, 'store-')))],
  [
    'the S3 store (s3rver behind the If-None-Match proxy)',
    async () => {
      buckets += 1;
      const bucket = `decisions-${buckets}`;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      return new S3Storage({ client, bucket });
    },
  ],
];

describe.each(stores)('concurrent tool decisions on %s', (_name, make) => {
  it.each([
    ['the same operator', OPS],
    ['another operator', OTHER_OPS],
  ])('approve and revoke at once by %s: one decision stored, the loser 409 with the status now', async (_who, second) => {
    const resources = await seeded(racing(await make()));

    const [approve, revoke] = await Promise.all([
      decide(resources, OPS, 'approved'),
      decide(resources, second, 'revoked'),
    ]);

    const now = await stored(resources);
    expect(now.decisions).toHaveLength(1);
    const [winner, loser] = approve.ok ? [approve, revoke] : [revoke, approve];
    expect(winner.ok).toBe(true);
    expect(loser.ok).toBe(false);
    if (!winner.ok || loser.ok) return;
    expect(winner.status).toBe(now.status);
    expect(loser.error).toBeInstanceOf(DecisionConflictError);
    expect((loser.error as DecisionConflictError).details).toMatchObject({ status: now.status });
  });

  it('the same decision twice at once (a retry) stores one and answers both with it', async () => {
    const resources = await seeded(racing(await make()));

    const both = await Promise.all([
      decide(resources, OPS, 'approved', 'read-only'),
      decide(resources, OPS, 'approved', 'read-only'),
    ]);

    expect(both).toEqual([
      { ok: true, status: 'approved' },
      { ok: true, status: 'approved' },
    ]);
    expect(await stored(resources)).toEqual({ status: 'approved', decisions: [['approved', 'http:ops']] });
  });

  it('the same decision with another reason at once is a conflict: the stored reason is not this one', async () => {
    const resources = await seeded(racing(await make()));

    const results = await Promise.all([
      decide(resources, OPS, 'approved', 'read-only'),
      decide(resources, OPS, 'approved', 'vetted'),
    ]);

    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.find((r) => !r.ok)).toMatchObject({ error: expect.any(DecisionConflictError) });
    expect((await stored(resources)).decisions).toHaveLength(1);
  });
});
