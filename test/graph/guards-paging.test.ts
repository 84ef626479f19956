import { rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolActor } from '../../shared/domain/common.js';
import { GraphIndex } from '../../shared/graph/graph-index.js';
import { ingestGraph } from '../../shared/graph/ingest.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { createLocalRuntime, type LocalRuntime } from '../../shared/runtime/local.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import type { StorageInterface } from '../../shared/storage/port.js';
import { createGraphTool } from '../../shared/tools/graph.js';
import type { ToolContext } from '../../shared/tools/port.js';
import { writePackage } from './helpers.js';

/**
 * Paging of the graph tool's pattern queries at the edge (issue 22, finding 10): `next` is given
 * exactly when solutions remain after the page, so a page that ends at the total has none, and
 * one that ends a solution short has one. BucketProps of the small assembly has 5 properties.
 */

const TASK =
  'cld:common.Conversation.c000000000000002/common.Message.a000000000000002/plan.Task.d000000000000002';
const PATTERNS = [['type:demo-lib.aws_s3.BucketProps', 'jsii:property', '?p']];
const TOTAL = 5;

let pkg: string;
let runtime: LocalRuntime;
let indexStorage: StorageInterface;

beforeAll(async () => {
  pkg = await writePackage();
  runtime = await createLocalRuntime({ dataDir: `${pkg}-data`, backoffMs: () => 5 });
  indexStorage = (runtime.deps.search as MiniSearchIndex).location?.storage as StorageInterface;
  await ingestGraph([basename(pkg)], {
    resources: runtime.deps.resources,
    indexStorage,
    actor: SYSTEM_ACTOR,
    cwd: dirname(pkg),
  });
});

afterAll(async () => {
  for (const dir of [pkg, `${pkg}-data`]) await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

async function page(limit: number, offset: number) {
  const tool = createGraphTool(() => GraphIndex.open(indexStorage, runtime.deps.resources));
  const context: ToolContext = {
    actor: toolActor(TASK, 'graph'),
    resources: runtime.deps.resources,
    search: runtime.deps.search,
    signal: new AbortController().signal,
  };
  return (await tool.execute({ patterns: PATTERNS, limit, offset }, context)) as {
    bindings: unknown[];
    total: number;
    offset: number;
    next?: number;
  };
}

describe('graph paging at the total', () => {
  it.each([
    // [limit, offset, bindings on the page, next]
    [TOTAL, 0, TOTAL, undefined],
    [TOTAL - 1, 0, TOTAL - 1, TOTAL - 1],
    [2, 3, 2, undefined],
    [2, 2, 2, 4],
    [1, TOTAL - 1, 1, undefined],
    [3, TOTAL, 0, undefined],
  ])('limit %i at offset %i: %i bindings, next %s', async (limit, offset, count, next) => {
    const result = await page(limit, offset);
    expect(result.total).toBe(TOTAL);
    expect(result.offset).toBe(offset);
    expect(result.bindings).toHaveLength(count);
    expect(result.next).toBe(next);
  });

  it('pages through every solution once by following next', async () => {
    const seen: unknown[] = [];
    let offset: number | undefined = 0;
    let pages = 0;
    while (offset !== undefined) {
      const result = await page(2, offset);
      seen.push(...result.bindings);
      offset = result.next;
      pages++;
    }
    expect(pages).toBe(3);
    expect(new Set(seen.map((b) => JSON.stringify(b))).size).toBe(TOTAL);
  });
});
