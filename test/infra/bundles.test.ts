import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assetModulesOf,
  BUNDLE_FILE,
  PROJECT_ROOT,
  policyBundle,
  TOKENIZER_RANKS_FILE,
  tokenizerRanksJson,
} from '../../infra/lib/bundling.js';
import { FUNCTIONS, type FunctionSpec } from '../../infra/lib/functions.js';
import { SDK_MODULE_FILE } from '../../infra/lib/sdk-module.js';
import rules from '../../policies/rules.json' with { type: 'json' };
import { buildBundle, externalImports, forbiddenInputs, isProvidedAtRuntime } from '../../scripts/bundles.js';
import { ASSET_MODULES } from '../../shared/aws/asset-modules.js';
import { outputUrn, NAMES as RESOURCE_NAMES } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import { s3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { withMeta } from '../../shared/resources/meta.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import { FUNCTION_USES, functionUses } from '../../shared/runtime/function-uses.js';
import { LOCAL_BUCKET } from '../../shared/runtime/local.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { MCP_SDK_FILE } from '../../shared/tools/mcp/client.js';
import { keyOf, keyPrefixOf, urnOfKey } from '../../shared/urn.js';
import { slackHeaders, startReceiver, teamsAuthorization } from '../channels/helpers.js';
import { type BundledSynth, bundledSynth } from './helpers.js';

/**
 * The function bundles as `cdk synth` builds them (real local esbuild bundling, once): their
 * asset layout and policy bundle, equality with what `npm run bundle:report` measures, no CDK
 * or SDK code inside, and that they load and run in plain Node: each handler is invoked in a
 * child `node` process (no tsx) against the embedded default adapters (CLD_DATA_DIR, no
 * CLD_BUCKET) — the steps with a real-shaped S3 "Object Created" EventBridge event, the channel
 * functions with real-shaped API Gateway HTTP API (payload 2.0) requests signed as Slack and
 * Teams sign them, and the reply function delivering to a local Slack Web API receiver.
 *
 * The cloud assembly is the run's shared bundling synth ({@link bundledSynth}, under
 * node_modules/.cache/, so that a module left out of the bundles and of the asset's `aws-sdk.cjs`
 * resolves from the project's node_modules, as from the Lambda runtime's); it is only read here.
 */

const NAMES = Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[];
const INVOKER = join(PROJECT_ROOT, 'test', 'infra', 'invoke-bundle.mjs');
const FIXTURE = join(PROJECT_ROOT, 'test', 'fixtures', 's3-object-created.json');
const REQUEST_FIXTURE = join(PROJECT_ROOT, 'test', 'infra', 'fixtures', 'http-api-v2-request.json');
const run = promisify(execFile);

/**
 * `node --import` hook: js-tiktoken's ranks are unresolvable, by `import()` (a module resolve hook)
 * and by `require()`/`createRequire` (CommonJS resolution).
 */
const BLOCK_RANKS = `
import Module, { register } from 'node:module';
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request.startsWith('js-tiktoken/ranks')) throw new Error('blocked by the bundle test: ' + request);
  return resolveFilename.call(this, request, ...rest);
};
const hook = 'export async function resolve(s, c, next) {' +
  ' if (s.startsWith("js-tiktoken/ranks")) throw new Error("blocked by the bundle test: " + s);' +
  ' return next(s, c); }';
register('data:text/javascript,' + encodeURIComponent(hook));
`;

let work: string;
let blocker: string;
let synth: BundledSynth;
const assets = new Map<string, string>();

beforeAll(async () => {
  const cache = join(PROJECT_ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  work = mkdtempSync(join(cache, 'cld-infra-test-'));
  blocker = join(work, 'block-ranks.mjs');
  writeFileSync(blocker, BLOCK_RANKS);
  synth = await bundledSynth();
  for (const resource of Object.values(synth.json.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const props = resource.Properties as {
      Code: { S3Key: string };
      Environment?: { Variables: Record<string, unknown> };
    };
    const name = props.Environment?.Variables.CLD_FUNCTION;
    if (typeof name !== 'string') continue;
    assets.set(name, join(synth.outdir, `asset.${props.Code.S3Key.replace(/\.zip$/, '')}`));
  }
  // A synth that bundles every function (or waiting for template.test.ts's): ≈ 1 min on a quiet
  // 2-core machine, over 4 min at load 17.
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function assetOf(name: string): string {
  const dir = assets.get(name);
  if (!dir) throw new Error(`no asset for ${name}`);
  return dir;
}

interface Invocation {
  ok: boolean;
  /** A step's outcome, or an API Gateway v2 structured result. */
  result?: { action: string; urn: string; detail?: string; statusCode?: number; body?: string };
  error?: { name?: string; code?: string; message: string };
}

/**
 * Runs the bundle's handler once in a plain `node` child process with the embedded-default
 * environment, plus `env` (channel secrets and URLs as plain values).
 */
async function invoke(
  name: string,
  event: unknown,
  dataDir: string,
  env: Record<string, string> = {},
): Promise<Invocation> {
  const eventFile = join(work, `event-${name}-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
  writeFileSync(eventFile, JSON.stringify(event));
  const args = [
    '--import',
    pathToFileURL(blocker).href,
    INVOKER,
    join(assetOf(name), BUNDLE_FILE),
    eventFile,
  ];
  const { stdout } = await run(process.execPath, args, {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      CLD_DATA_DIR: dataDir,
      CLD_FUNCTION: name,
      CLD_POLICY_DIR: join(assetOf(name), 'policies'),
      POWERTOOLS_SERVICE_NAME: 'cld',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      ...env,
    },
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`no RESULT line from the ${name} bundle:\n${stdout.slice(-2000)}`);
  return JSON.parse(line.slice('RESULT '.length)) as Invocation;
}

/**
 * A fresh data directory with a stored conversation whose user Message the `plan` bundle has
 * planned: what the step bundles' tests start from. Returns the storage, an S3 "Object Created"
 * event builder for stored URNs, and the URN of the first planned Task.
 */
async function plannedConversation(content: string, conversationName: string) {
  const dataDir = mkdtempSync(join(work, 'data-'));
  const storage = new FilesystemStorage(join(dataDir, 'resources'));
  const resources = new ResourceIndex(storage, new RulesPolicy(rules));
  const started = await startConversation(resources, {
    user: 'bundle-test',
    channel: { kind: 'cli' },
    content,
    conversationName,
  });
  const eventFor = async (urn: string) =>
    s3ObjectCreatedEvent(LOCAL_BUCKET, keyOf(urn), (await storage.get(keyOf(urn))).length);
  const planned = await invoke('plan', await eventFor(started.message), dataDir);
  const taskKeys = (await storage.findByPrefix(keyPrefixOf(started.message))).filter((key) =>
    key.endsWith('_Conversation-Message-Task.json'),
  );
  const task = urnOfKey(taskKeys[0] ?? '') as string;
  return { dataDir, storage, started, eventFor, planned, taskKeys, task };
}

/** `npm run bundle:report`'s build of each function, built once and read by the tests below. */
const reportBuilds = new Map<string, ReturnType<typeof buildBundle>>();

/** The function's bundle as `npm run bundle:report` builds it (scripts/bundles.ts), once per file. */
function reportBuild(name: keyof typeof FUNCTIONS): ReturnType<typeof buildBundle> {
  let built = reportBuilds.get(name);
  if (!built) {
    built = buildBundle(name, FUNCTIONS[name], join(work, 'report'));
    reportBuilds.set(name, built);
  }
  return built;
}

describe('synthesized function assets', () => {
  it.each(
    NAMES,
  )('%s: index.mjs, its source map, the policy bundle under policies/, the tokenizer ranks and its asset modules (the MCP SDK for the tool function)', (name) => {
    const dir = assetOf(name);
    const expected = ['index.mjs', 'index.mjs.map', 'policies', 'tokenizer'];
    // Powertools' AWS modules, and the MCP SDK where MCP tools run, as files of their own
    // (shared/aws/asset-modules.ts, infra/lib/bundling.ts).
    expected.push(
      ...assetModulesOf(name, FUNCTIONS[name] as FunctionSpec).map((module) => ASSET_MODULES[module].file),
    );
    expect(expected.includes(MCP_SDK_FILE)).toBe('mcpServers' in FUNCTIONS[name]);
    // The AWS SDK the function loads, tree-shaken into one file, and the stub packages under
    // node_modules/ that hand it out (infra/lib/sdk-module.ts); every function loads the S3 client.
    expected.push(SDK_MODULE_FILE, 'node_modules');
    expect(readFileSync(join(dir, 'node_modules', '@aws-sdk', 'client-s3', 'index.cjs'), 'utf8')).toContain(
      `require('../../../${SDK_MODULE_FILE}').packages["@aws-sdk/client-s3"]`,
    );
    // The function that serves the web console carries its built assets (infra/lib/bundling.ts).
    if ('console' in FUNCTIONS[name]) expected.push('console');
    expect(readdirSync(dir).sort()).toEqual(expected.sort());
    expect(readFileSync(join(dir, TOKENIZER_RANKS_FILE), 'utf8')).toBe(tokenizerRanksJson());
    const policy = policyBundle(name);
    expect(readFileSync(join(dir, 'policies', 'rules.json'))).toEqual(readFileSync(policy.rules));
    const files = readdirSync(join(dir, 'policies')).sort();
    expect(files).toEqual(policy.wasm ? ['rules.json', `${name}.wasm`].sort() : ['rules.json']);
  });

  it.each(
    NAMES,
  )('%s: npm run bundle:report builds byte-identical code, without CDK or SDK code', async (name) => {
    const built = await reportBuild(name);
    expect(readFileSync(built.file).equals(readFileSync(join(assetOf(name), BUNDLE_FILE)))).toBe(true);
    expect(forbiddenInputs(built.metafile)).toEqual([]);
    const inputs = Object.keys(built.metafile.inputs);
    expect(inputs).toContain(FUNCTIONS[name].entry);
    const unprovided = externalImports(built.metafile).filter((specifier) => !isProvidedAtRuntime(specifier));
    expect(unprovided).toEqual([]);
    expect(inputs.filter((input) => input.includes('js-tiktoken/dist/ranks/'))).toEqual([]);
  });

  it.each(NAMES)('%s: composes what the function table grants it (model, projections table)', (name) => {
    const uses = functionUses(name);
    expect(Object.hasOwn(FUNCTION_USES, name)).toBe(true);
    expect(uses.model).toBe(FUNCTIONS[name].model);
    expect(uses.table).toBe(FUNCTIONS[name].table.length > 0);
  });

  it.each(NAMES)('%s: carries only the adapters and AWS SDK clients it composes', async (name) => {
    const built = await reportBuild(name);
    // Sources with code in the bundle (metafile inputs may list files whose code was dropped).
    const inputs = Object.values(built.metafile.outputs).flatMap((output) =>
      Object.entries(output.inputs).flatMap(([input, { bytesInOutput }]) =>
        bytesInOutput > 0 ? [input] : [],
      ),
    );
    const externals = externalImports(built.metafile);
    const uses = functionUses(name);
    const has = (input: string) => inputs.includes(input);

    expect(has('shared/storage/s3.ts') && externals.includes('@aws-sdk/client-s3')).toBe(true);
    expect(has('shared/llm/bedrock.ts')).toBe(uses.model);
    expect(has('shared/llm/offline.ts')).toBe(uses.model);
    expect(externals.includes('@aws-sdk/client-bedrock-runtime')).toBe(uses.model);
    expect(has('shared/projections/dynamodb.ts')).toBe(uses.table);
    expect(has('shared/projections/idempotency.ts')).toBe(uses.table);
    expect(externals.includes('@aws-sdk/client-dynamodb')).toBe(uses.table);
    expect(has('shared/search/minisearch-index.ts')).toBe(uses.tools);
    expect(inputs.some((input) => input.includes('node_modules/minisearch/'))).toBe(uses.tools);
  });
});

describe('bundles in plain Node', () => {
  const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as unknown;

  it('plan runs on the fixture event and reports the missing Message as a domain error', async () => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const outcome = await invoke('plan', fixture, dataDir);
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatchObject({ name: 'NotFoundError', code: 'NOT_FOUND' });
  });

  it.each([
    'assistant',
    'tool',
  ])('%s ignores the fixture event (a user Message is not its shape)', async (name) => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const outcome = await invoke(name, fixture, dataDir);
    expect(outcome).toMatchObject({
      ok: true,
      result: { action: 'ignored', detail: 'shape not routed to this step' },
    });
  });

  it('the module hook of these runs makes js-tiktoken ranks unresolvable (by import and require)', async () => {
    const probe = [
      "import { createRequire } from 'node:module';",
      'const outcomes = [];',
      "try { createRequire(process.argv[1])('js-tiktoken/ranks/cl100k_base'); outcomes.push('required'); } catch (e) { outcomes.push(e.message); }",
      "try { await import('js-tiktoken/ranks/cl100k_base'); outcomes.push('imported'); } catch (e) { outcomes.push(e.message); }",
      "try { createRequire(process.argv[1])('js-tiktoken/lite'); outcomes.push('lite'); } catch (e) { outcomes.push(e.message); }",
      'process.stdout.write(JSON.stringify(outcomes));',
    ].join('\n');
    const args = ['--import', pathToFileURL(blocker).href, '--input-type=module', '-e', probe];
    const { stdout } = await run(process.execPath, [...args, join(PROJECT_ROOT, 'package.json')], {
      cwd: PROJECT_ROOT,
    });

    const [required, imported, lite] = JSON.parse(stdout) as string[];
    expect(required).toMatch(/blocked by the bundle test: js-tiktoken\/ranks\/cl100k_base/);
    expect(imported).toMatch(/blocked by the bundle test: js-tiktoken\/ranks\/cl100k_base/);
    expect(lite).toBe('lite');
  });

  it('plan → assistant → tool run a question through the three bundles on local adapters', async () => {
    const { dataDir, storage, eventFor, planned, taskKeys, task } = await plannedConversation(
      'What does an S3 bucket policy control?',
      'bundle-test',
    );
    expect(planned).toMatchObject({ ok: true, result: { action: 'planned' } });
    expect(taskKeys).toHaveLength(1);

    // The assistant counts tokens (context window, offline model) from the ranks file CLD_TOKENIZER_RANKS names.
    const turned = await invoke('assistant', await eventFor(task), dataDir, {
      CLD_TOKENIZER_RANKS: join(assetOf('assistant'), TOKENIZER_RANKS_FILE),
    });
    expect(turned).toMatchObject({ ok: true, result: { action: 'tool-calls' } });
    const turn = JSON.parse((await storage.get(keyOf(turned.result?.urn as string))).toString('utf8')) as {
      window: { tokens: number };
      usage: { inputTokens: number };
    };
    expect(turn.window.tokens).toBeGreaterThan(0);
    expect(turn.usage.inputTokens).toBeGreaterThan(0);
    const calls = (await storage.findByPrefix(keyPrefixOf(task))).filter((key) => key.endsWith('-Call.json'));
    expect(calls.length).toBeGreaterThan(0);
    const call = urnOfKey(calls[0] as string) as string;

    const before = new Set(await storage.findByPrefix(keyPrefixOf(task)));
    const executed = await invoke('tool', await eventFor(call), dataDir);
    expect(executed).toMatchObject({ ok: true, result: { action: 'tool-result' } });
    const written = (await storage.findByPrefix(keyPrefixOf(task))).filter((key) => !before.has(key));
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/\/common\.Message\.[0-9a-f]+_Conversation-Message-Task-Message\.json$/);
  });
});

describe('dead-letter bundle in plain Node', () => {
  it('deadletter fails the task of a dead-lettered tool.Call from an SQS batch, once', async () => {
    const { dataDir, storage, eventFor, planned, task } = await plannedConversation(
      'What does an S3 bucket policy control?',
      'dead-letter-bundle-test',
    );
    expect(planned).toMatchObject({ ok: true });
    expect(await invoke('assistant', await eventFor(task), dataDir)).toMatchObject({ ok: true });
    const callKey = (await storage.findByPrefix(keyPrefixOf(task))).find((key) => key.endsWith('-Call.json'));
    const call = urnOfKey(callKey as string) as string;

    // The Lambda on-failure destination record of the tool step, as SQS delivers it (fixture from AWS's docs).
    const sqs = JSON.parse(
      readFileSync(join(process.cwd(), 'test/fixtures/sqs-dead-letter-lambda-destination.json'), 'utf8'),
    ) as { Records: { body: string; eventSourceARN: string }[] };
    const record = sqs.Records[0] as { body: string; eventSourceARN: string };
    record.body = JSON.stringify({ ...JSON.parse(record.body), requestPayload: await eventFor(call) });
    const env = { CLD_DEAD_LETTER_QUEUES: JSON.stringify({ tool: record.eventSourceARN }) };
    const first = await invoke('deadletter', { Records: [record] }, dataDir, env);
    expect(first).toMatchObject({ ok: true, result: { batchItemFailures: [] } });
    const outputKey = keyOf(outputUrn(task));
    const output = (await storage.get(outputKey)).toString('utf8');
    expect(JSON.parse(output).error.code).toBe('DELIVERY_FAILED');

    const again = await invoke('deadletter', { Records: [record] }, dataDir, env);
    expect(again).toMatchObject({ ok: true, result: { batchItemFailures: [] } });
    expect((await storage.get(outputKey)).toString('utf8')).toBe(output);
  });
});

describe('tokenizer ranks in plain Node', () => {
  it('the assistant bundle counts tokens from the ranks beside it when CLD_TOKENIZER_RANKS is unset', async () => {
    const { dataDir, storage, eventFor, planned, task } = await plannedConversation(
      'How do I match only keys with a given prefix in an event rule?',
      'bundle-ranks',
    );
    expect(planned).toMatchObject({ ok: true });

    const turned = await invoke('assistant', await eventFor(task), dataDir);

    expect(turned).toMatchObject({ ok: true, result: { action: 'tool-calls' } });
    const turn = JSON.parse((await storage.get(keyOf(turned.result?.urn as string))).toString('utf8')) as {
      window: { tokens: number };
    };
    expect(turn.window.tokens).toBeGreaterThan(0);
  });
});

describe('channel bundles in plain Node', () => {
  const request = JSON.parse(readFileSync(REQUEST_FIXTURE, 'utf8')) as {
    headers: Record<string, string>;
    requestContext: { authorizer?: unknown; http: Record<string, string>; routeKey: string };
    [key: string]: unknown;
  };
  const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
  const TEAMS_TOKEN = Buffer.from('teams bundle test security token').toString('base64');

  /** The fixture as API Gateway sends it for another route, body and headers. */
  function apiEvent(routeKey: string, rawPath: string, body: string, headers: Record<string, string>) {
    const [method] = routeKey.split(' ');
    return {
      ...request,
      routeKey,
      rawPath,
      headers: { ...request.headers, ...headers, 'content-length': String(Buffer.byteLength(body)) },
      requestContext: {
        ...request.requestContext,
        routeKey,
        http: { ...request.requestContext.http, method, path: rawPath },
      },
      body,
    };
  }

  it('http: starts a conversation for the JWT subject (202) and rejects a request without claims (401)', async () => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const accepted = await invoke('http', request, dataDir);
    expect(accepted.ok).toBe(true);
    expect(accepted.result?.statusCode).toBe(202);
    const body = JSON.parse(String(accepted.result?.body)) as { conversation: string; message: string };
    const storage = new FilesystemStorage(join(dataDir, 'resources'));
    expect(await storage.findByPrefix(keyPrefixOf(body.conversation))).toContain(keyOf(body.message));

    const { authorizer: _none, ...context } = request.requestContext;
    const unsigned = await invoke(
      'http',
      { ...request, requestContext: context },
      mkdtempSync(join(work, 'data-')),
    );
    expect(unsigned.result?.statusCode).toBe(401);
    expect(JSON.parse(String(unsigned.result?.body))).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('http: serves GET /openapi.json from the bundle without claims: the committed openapi.json', async () => {
    const event = apiEvent('GET /openapi.json', '/openapi.json', '', { 'accept-encoding': 'identity' });
    const { authorizer: _none, ...context } = event.requestContext;
    const served = await invoke(
      'http',
      { ...event, requestContext: context },
      mkdtempSync(join(work, 'data-')),
    );
    expect(served.result?.statusCode).toBe(200);
    expect(String(served.result?.body)).toBe(readFileSync(join(PROJECT_ROOT, 'openapi.json'), 'utf8'));
  });

  it('slack: answers a signed url_verification and rejects a forged signature before parsing', async () => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const body = JSON.stringify({ token: 'x', challenge: 'bundle-challenge', type: 'url_verification' });
    const env = { CLD_SLACK_SIGNING_SECRET: SIGNING_SECRET };
    const signed = apiEvent('POST /slack/events', '/slack/events', body, slackHeaders(SIGNING_SECRET, body));
    const ok = await invoke('slack', signed, dataDir, env);
    expect(ok.result?.statusCode).toBe(200);
    expect(JSON.parse(String(ok.result?.body))).toEqual({ challenge: 'bundle-challenge' });
    const forged = apiEvent(
      'POST /slack/events',
      '/slack/events',
      body,
      slackHeaders('not the secret', body),
    );
    expect((await invoke('slack', forged, dataDir, env)).result?.statusCode).toBe(401);
  });

  it('teams: acknowledges a signed message and stores it with a reference to the webhook secret, never the URL', async () => {
    const dataDir = mkdtempSync(join(work, 'data-'));
    const activity = JSON.stringify({
      type: 'message',
      id: '1710000000001',
      text: '<at>cld</at> What does an S3 bucket policy control?',
      from: { id: '29:1abc', aadObjectId: '6f1c1a44-1f34-4d7a-9f0e-3f6f3c1a2b3c' },
      conversation: { id: '19:abc@thread.tacv2;messageid=1710000000001' },
    });
    const event = apiEvent('POST /teams/messages', '/teams/messages', activity, {
      authorization: teamsAuthorization(TEAMS_TOKEN, activity),
    });
    const outcome = await invoke('teams', event, dataDir, {
      CLD_TEAMS_SECRET: TEAMS_TOKEN,
      CLD_TEAMS_WEBHOOK_URL: 'https://example.webhook.office.com/webhookb2/abc',
    });
    expect(outcome.result?.statusCode).toBe(200);
    expect(JSON.parse(String(outcome.result?.body))).toMatchObject({ type: 'message' });
    const storage = new FilesystemStorage(join(dataDir, 'resources'));
    const keys = await storage.findByPrefix('cld/common.Conversation.');
    expect(keys).toHaveLength(2);
    const stored = (await storage.get(keys.find((k) => k.endsWith('_Conversation.json')) as string)).toString(
      'utf8',
    );
    const conversation = JSON.parse(stored) as { channel: { address: Record<string, string> } };
    expect(conversation.channel.address).toEqual({
      webhookSecret: 'teamsWebhookUrl',
      conversation: '19:abc@thread.tacv2;messageid=1710000000001',
    });
    expect(stored).not.toContain('webhookb2');
  });

  it('reply: posts a final answer to the Slack thread once, though its event arrives twice', async () => {
    const slack = await startReceiver();
    try {
      const dataDir = mkdtempSync(join(work, 'data-'));
      const storage = new FilesystemStorage(join(dataDir, 'resources'));
      const resources = new ResourceIndex(storage, new RulesPolicy(rules));
      const started = await startConversation(resources, {
        user: 'slack:T1:U1',
        channel: { kind: 'slack', address: { team: 'T1', channel: 'C1', thread_ts: '1710000000.000100' } },
        content: 'What does an S3 bucket policy control?',
        conversationName: 'bundle-reply',
      });
      const answer = {
        meta: withMeta({
          type: 'common.Message',
          name: RESOURCE_NAMES.answer(started.message),
          parent: started.conversation,
        }),
        role: 'assistant' as const,
        content: 'It controls who may do what with the bucket.',
        inReplyTo: started.message,
      };
      await resources.put(
        { kind: 'plan', id: 'function:plan', conversation: started.conversation, message: started.message },
        answer,
      );
      const event = s3ObjectCreatedEvent(
        LOCAL_BUCKET,
        keyOf(answer.meta.id),
        (await storage.get(keyOf(answer.meta.id))).length,
      );
      const env = { CLD_SLACK_BOT_TOKEN: 'xoxb-bundle', CLD_SLACK_API_URL: `${slack.url}/api/` };

      const first = await invoke('reply', event, dataDir, env);
      const again = await invoke('reply', event, dataDir, env);

      expect(first).toMatchObject({ ok: true, result: { action: 'delivered', urn: answer.meta.id } });
      expect(again.result).toEqual(first.result);
      const posts = slack.requests.filter((r) => r.path === '/api/chat.postMessage');
      expect(posts).toHaveLength(1);
      expect(posts[0]?.fields).toMatchObject({ channel: 'C1', thread_ts: '1710000000.000100' });
      expect(posts[0]?.headers.authorization).toBe('Bearer xoxb-bundle');
    } finally {
      await slack.stop();
    }
  });
});
