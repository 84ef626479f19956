import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeTokenizerRanks } from '../../infra/lib/bundling.js';
import { catalogObjects } from '../../shared/catalog/catalog.js';
import type { Deps } from '../../shared/domain/ports.js';
import { ConfigError, PolicyDeniedError } from '../../shared/errors.js';
import { builtinPolicy } from '../../shared/policy/select.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import { loadModel, modelFor } from '../../shared/runtime/adapters/model.js';
import { seedCatalog } from '../../shared/runtime/assemble.js';
import { composeFromEnv } from '../../shared/runtime/compose.js';
import {
  bundleDefines,
  EVERYTHING,
  FUNCTION_USES,
  functionUses,
} from '../../shared/runtime/function-uses.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';

/**
 * The composition root composes only what a function uses (FUNCTION_USES, keyed by
 * CLD_FUNCTION): what it does not use fails loudly with a ConfigError naming the function, and the
 * rest works — here against the embedded default adapters (filesystem under a temp directory).
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function compose(env: Record<string, string>): Promise<Deps> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
  dirs.push(dataDir);
  return composeFromEnv({ CLD_DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT', ...env });
}

const CONVERSATION = 'cld:common.Conversation.0123456789abcdef';
const REQUEST = { messages: [{ role: 'user' as const, content: [{ text: 'What is a bucket policy?' }] }] };

describe('functionUses', () => {
  it.each(Object.entries(FUNCTION_USES))('%s: its entry of the table', (name, uses) => {
    expect(functionUses(name)).toEqual(uses);
  });

  it.each([
    undefined,
    'local',
    'a-function-added-later',
    'constructor',
    'toString',
  ])('gives everything to %s', (name) => {
    expect(functionUses(name)).toEqual(EVERYTHING);
  });

  it('esbuild defines name the function and what it keeps, as JSON string literals', () => {
    expect(bundleDefines('tool')).toEqual({
      'process.env.CLD_BUNDLE_FUNCTION': '"tool"',
      'process.env.CLD_BUNDLE_MODEL': '"false"',
      'process.env.CLD_BUNDLE_TOOLS': '"true"',
      'process.env.CLD_BUNDLE_TABLE': '"false"',
    });
    expect(bundleDefines('plan')['process.env.CLD_BUNDLE_MODEL']).toBe('"true"');
  });
});

describe('composeFromEnv by CLD_FUNCTION', () => {
  it('http: storage, catalog and the projections it records to (conversations per user, open conversations)', async () => {
    const deps = await compose({ CLD_FUNCTION: 'http' });

    expect(deps.userConversations).toBeDefined();
    expect(deps.openConversations).toBeDefined();
    expect((await deps.userConversations?.list('http:alice'))?.items).toEqual([]);
    await expect(deps.model.converse(REQUEST)).rejects.toThrow('http does not use the chat model');
    await expect(deps.search.search('bucket')).rejects.toThrow('http does not use the chunk index');
    expect(deps.tools.size).toBe(0);
  });

  it.each(['slack', 'teams'])('%s: storage and catalog only', async (fn) => {
    const deps = await compose({ CLD_FUNCTION: fn });

    expect(deps.catalog.tools.map((tool) => tool.function.name).sort()).toEqual(['graph', 'read', 'search']);
    const unused = [
      deps.model.converse(REQUEST),
      deps.search.search('bucket'),
      deps.projections.get({ conversation: CONVERSATION, name: 'budget' }),
    ];
    for (const call of unused) await expect(call).rejects.toBeInstanceOf(ConfigError);
    await expect(deps.model.converse(REQUEST)).rejects.toThrow(`${fn} does not use the chat model`);
    await expect(deps.search.search('bucket')).rejects.toThrow(`${fn} does not use the chunk index`);
    expect(deps.tools.size).toBe(0);
  });

  it('tool: the chunk index and the tool implementations, no model', async () => {
    const deps = await compose({ CLD_FUNCTION: 'tool' });

    expect(await deps.search.search('bucket policy')).toEqual([]);
    expect([...deps.tools.keys()].sort()).toEqual(['graph', 'read', 'search']);
    await expect(deps.model.converse(REQUEST)).rejects.toThrow('tool does not use the chat model');
  });

  it.each(['plan', 'assistant'])('%s: the model and the projections, no chunk index', async (fn) => {
    const deps = await compose({ CLD_FUNCTION: fn });

    expect(deps.model.name).toBe('offline');
    expect((await deps.model.converse(REQUEST)).output.message.role).toBe('assistant');
    const applied = await deps.projections.applyOnce({ conversation: CONVERSATION, name: 'budget' }, 'm1', {
      modelCalls: 1,
    });
    expect(applied.applied).toBe(true);
    expect((await deps.projections.get({ conversation: CONVERSATION, name: 'budget' }))?.values).toEqual({
      modelCalls: 1,
    });
    await expect(deps.search.search('bucket')).rejects.toThrow(`${fn} does not use the chunk index`);
  });

  it('no CLD_FUNCTION: everything (the embedded default)', async () => {
    const deps = await compose({});

    expect(deps.model.name).toBe('offline');
    expect(await deps.search.search('bucket')).toEqual([]);
    expect(deps.tools.size).toBe(3);
  });

  it('fails the cold start when CLD_TOKENIZER_RANKS names a file that does not exist', async () => {
    const missing = join(tmpdir(), 'cld-no-such-dir', 'cl100k_base.json');

    const composing = compose({ CLD_FUNCTION: 'assistant', CLD_TOKENIZER_RANKS: missing });

    await expect(composing).rejects.toBeInstanceOf(ConfigError);
    await expect(compose({ CLD_TOKENIZER_RANKS: missing })).rejects.toThrow(missing);
  });
});

describe('a cold start', () => {
  it.each([
    'plan',
    'assistant',
    'tool',
    'reply',
    'http',
    'slack',
    'teams',
    'deadletter',
  ])('%s: writes nothing (the catalog is seeded at deploy, not by the functions)', async (fn) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
    dirs.push(dataDir);

    const deps = await composeFromEnv({
      CLD_DATA_DIR: dataDir,
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      CLD_FUNCTION: fn,
    });

    expect(deps.catalog.assistants.length).toBeGreaterThan(0);
    // FilesystemStorage creates the directory at its first put.
    expect(existsSync(join(dataDir, 'resources'))).toBe(false);
  });

  it('getDeps retries a failed composition at the next call, then keeps the composed Deps', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
    dirs.push(dataDir);
    vi.stubEnv('CLD_DATA_DIR', dataDir);
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'SILENT');
    vi.stubEnv('CLD_FUNCTION', 'http');
    vi.stubEnv('CLD_LIMITS', '{"maxDepth": ');
    vi.resetModules();
    try {
      const fresh = await import('../../shared/runtime/compose.js');

      await expect(fresh.getDeps()).rejects.toThrow('CLD_LIMITS is not JSON');
      await expect(fresh.getDeps()).rejects.toThrow('CLD_LIMITS is not JSON');
      vi.stubEnv('CLD_LIMITS', '{"maxDepth": 3}');
      const composed = await fresh.getDeps();
      vi.stubEnv('CLD_LIMITS', '{"maxDepth": ');
      const again = await fresh.getDeps();

      expect(composed.limits.maxDepth).toBe(3);
      expect(again).toBe(composed);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

describe('seedCatalog (the local start; deployed, the stack seeds at deploy)', () => {
  it('stores each catalog object with the bytes the deploy puts, once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
    dirs.push(dataDir);
    const storage = new FilesystemStorage(join(dataDir, 'resources'));
    const resources = new ResourceIndex(storage, builtinPolicy('local'));
    const objects = catalogObjects();

    const first = await seedCatalog(resources);
    const second = await seedCatalog(resources);

    expect(first).toBe(objects.length);
    expect(second).toBe(0);
    for (const object of objects) {
      expect((await storage.get(object.key)).toString('utf8'), object.key).toBe(object.body);
    }
  });

  it('is denied in a function bundle: only the local bundle lets the operator write the catalog', async () => {
    const storage = new FilesystemStorage(join(mkdtempSync(join(tmpdir(), 'cld-compose-')), 'resources'));
    const resources = new ResourceIndex(storage, builtinPolicy('plan'));

    await expect(seedCatalog(resources)).rejects.toBeInstanceOf(PolicyDeniedError);
  });

  it('runs when the embedded default starts (the CLI: ingest, ask, serve)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
    dirs.push(dataDir);

    const runtime = await createLocalRuntime({ dataDir });
    await runtime.bus.idle();

    for (const object of catalogObjects()) {
      expect((await runtime.storage.get(object.key)).toString('utf8'), object.key).toBe(object.body);
    }
  });
});

describe('composeFromEnv in a function bundle', () => {
  it('refuses a CLD_FUNCTION other than the function it was bundled for', async () => {
    // What esbuild's define makes a literal in a bundle is read at module load outside one.
    vi.stubEnv('CLD_BUNDLE_FUNCTION', 'tool');
    vi.resetModules();
    try {
      const bundled = await import('../../shared/runtime/compose.js');
      const dataDir = mkdtempSync(join(tmpdir(), 'cld-compose-'));
      dirs.push(dataDir);

      const composing = bundled.composeFromEnv({ CLD_DATA_DIR: dataDir, CLD_FUNCTION: 'assistant' });

      await expect(composing).rejects.toThrow('CLD_FUNCTION is assistant, but this is the tool bundle');
      // Outside an asset the ranks beside the bundle are missing: the cold start says so.
      await expect(
        bundled.composeFromEnv({ CLD_DATA_DIR: dataDir, POWERTOOLS_LOG_LEVEL: 'SILENT' }),
      ).rejects.toThrow(/tokenizer ranks .*tokenizer\/cl100k_base\.json do not exist/);
      const own = await bundled.composeFromEnv({
        CLD_DATA_DIR: dataDir,
        CLD_TOKENIZER_RANKS: writeTokenizerRanks(dataDir),
        POWERTOOLS_LOG_LEVEL: 'SILENT',
      });
      expect([...own.tools.keys()].sort()).toEqual(['graph', 'read', 'search']);
      await expect(own.model.converse(REQUEST)).rejects.toThrow('tool does not use the chat model');
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

describe('models', () => {
  it.each([
    ['offline', {}],
    ['offline (explicit)', { CLD_MODEL_PROVIDER: 'offline' }],
    ['Bedrock', { CLD_MODEL_ID: 'anthropic.claude-3-haiku-20240307-v1:0', AWS_REGION: 'eu-west-1' }],
    [
      'OpenAI-compatible',
      {
        CLD_MODEL_PROVIDER: 'openai',
        CLD_MODEL_ID: 'llama3.1',
        CLD_OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
      },
    ],
  ])('modelFor names the %s model as the loaded adapter does', async (_kind, env) => {
    const parsed = parseEnv(env);

    expect(modelFor(parsed).name).toBe((await loadModel(parsed)).name);
  });

  it('modelFor loads the adapter at the first call', async () => {
    const model = modelFor(parseEnv({}));

    const response = await model.converse(REQUEST);

    expect(response.output.message.content.length).toBeGreaterThan(0);
    expect(response.usage.inputTokens).toBeGreaterThan(0);
  });
});

describe('model configuration', () => {
  it.each([
    [
      { CLD_MODEL_PROVIDER: 'openai', CLD_OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' },
      /needs CLD_MODEL_ID/,
    ],
    [{ CLD_MODEL_PROVIDER: 'openai', CLD_MODEL_ID: 'llama3.1' }, /needs CLD_OPENAI_BASE_URL/],
    [{ CLD_MODEL_PROVIDER: 'bedrock' }, /CLD_MODEL_PROVIDER=bedrock needs CLD_MODEL_ID/],
    [{ CLD_MODEL_ID: 'x', CLD_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }, /set CLD_MODEL_PROVIDER=openai/],
    [{ CLD_MODEL_PROVIDER: 'anthropic' }, /CLD_MODEL_PROVIDER/],
    [
      { CLD_MODEL_PROVIDER: 'openai', CLD_MODEL_ID: 'm', CLD_OPENAI_BASE_URL: 'file:///tmp' },
      /CLD_OPENAI_BASE_URL/,
    ],
    [
      {
        CLD_MODEL_PROVIDER: 'openai',
        CLD_MODEL_ID: 'm',
        CLD_OPENAI_BASE_URL: 'http://h/v1',
        CLD_OPENAI_TIMEOUT_MS: '0',
      },
      /CLD_OPENAI_TIMEOUT_MS/,
    ],
  ])('parseEnv rejects %j naming the variable', (env, message) => {
    expect(() => parseEnv(env)).toThrow(ConfigError);
    expect(() => parseEnv(env)).toThrow(message);
  });

  it('loads the OpenAI-compatible adapter with the configured base URL, key and timeout', async () => {
    const model = await loadModel(
      parseEnv({
        CLD_MODEL_PROVIDER: 'openai',
        CLD_MODEL_ID: 'qwen2.5',
        CLD_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
        CLD_OPENAI_API_KEY: 'sk-x',
        CLD_OPENAI_TIMEOUT_MS: '1000',
      }),
    );
    expect(model.constructor.name).toBe('OpenAIChatModel');
    expect(model.name).toBe('openai:qwen2.5');
  });
});
