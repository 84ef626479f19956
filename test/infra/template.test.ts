import { type ChildProcess, fork } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_FILE, PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { rulesOfRoute } from '../../infra/lib/stack.js';
import rules from '../../policies/rules.json' with { type: 'json' };
import { encodeS3EventKey, type S3ObjectCreatedEvent } from '../../shared/events/envelope.js';
import { type EventPattern, matchesPattern } from '../../shared/events/pattern.js';
import { routingTable } from '../../shared/events/routing.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { ResourceIndex } from '../../shared/resources/resource-index.js';
import { seedCatalog } from '../../shared/runtime/assemble.js';
import { ingest } from '../../shared/search/ingest.js';
import { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { FilesystemStorage } from '../../shared/storage/filesystem.js';
import { isWithin, shapeOf, urnOfKey } from '../../shared/urn.js';
import { PARTIAL_QUESTION, partialAnswerProblems } from '../helpers/partial.js';
import { type BundledSynth, bundledSynth, type TemplateJson } from './helpers.js';

/**
 * The template is what gets tested: the stack is synthesized with its real bundles, its
 * `AWS::Events::Rule` resources (event pattern and target function) are read back from the
 * template, and whole conversations run through them. Every object the functions write becomes
 * an S3 "Object Created" EventBridge event as AWS sends it (the documented field set of a
 * versioned bucket, the key URL-encoded as S3 encodes it), every rule whose pattern matches it
 * (shared/events/pattern.ts, EventBridge semantics) invokes its target, and the target is the
 * **built function bundle** (`index.mjs` of the cloud assembly's asset) running on the embedded
 * default adapters (filesystem under CLD_DATA_DIR, offline model). Each function runs in one
 * long-lived plain `node` process that imported its bundle once (test/infra/bundle-worker.mjs):
 * a warm Lambda execution environment, invoked once per delivery.
 *
 * The counts are what AWS would invoke: deliveries per function per conversation, and
 * deliveries per written object (goal ≤ 1.5, issue 10).
 */

/** The resources bucket's name in the events (the template names it by a `Ref`). */
const BUCKET = 'cld-dev-resourcesbucket-1a2b3c4d5e6f';
const FIXTURE = JSON.parse(
  readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 's3-object-created.json'), 'utf8'),
) as S3ObjectCreatedEvent;
const REQUEST = JSON.parse(
  readFileSync(join(PROJECT_ROOT, 'test', 'infra', 'fixtures', 'http-api-v2-request.json'), 'utf8'),
) as {
  headers: Record<string, string>;
  requestContext: { http: Record<string, string>; routeKey: string };
  [key: string]: unknown;
};
const WORKER = join(PROJECT_ROOT, 'test', 'infra', 'bundle-worker.mjs');
const DOCS = ['node_modules/aws-cdk-lib/aws-s3', 'node_modules/aws-cdk-lib/aws-events'];
/** The README's quick-start question. */
const QUICK_START =
  '1. How do I send S3 object events to EventBridge? 2. How do I match only keys with a given prefix in an event rule?';

/** One EventBridge rule of the template: its pattern (bucket resolved) and target functions. */
interface TemplateRule {
  id: string;
  pattern: EventPattern;
  targets: string[];
}

interface Outcome {
  ok: boolean;
  result?: { action?: string; urn?: string; detail?: string; statusCode?: number; body?: string };
  error?: { name?: string; code?: string; message: string };
}

let work: string;
let synth: BundledSynth;
let dataDir: string;
let storage: FilesystemStorage;
const assets = new Map<string, string>();
const workers = new Map<string, { child: ChildProcess; pending: Map<string, (o: Outcome) => void> }>();
let templateRules: TemplateRule[] = [];

/** Replaces `{ Ref: <bucket> }` with the bucket's name, deeply. */
function resolveBucket(value: unknown, bucketId: string): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveBucket(item, bucketId));
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (Object.keys(record).length === 1 && record.Ref === bucketId) return BUCKET;
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, resolveBucket(v, bucketId)]));
  }
  return value;
}

function rulesOf(json: TemplateJson): TemplateRule[] {
  const functionsById = new Map<string, string>();
  for (const [id, resource] of Object.entries(json.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const name = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
      ?.Variables?.CLD_FUNCTION;
    if (typeof name === 'string') functionsById.set(id, name);
  }
  const bucketId = Object.entries(json.Resources).find(
    ([id, r]) => r.Type === 'AWS::S3::Bucket' && id.startsWith('ResourcesBucket'),
  )?.[0] as string;
  return (
    Object.entries(json.Resources)
      // Rules with an event pattern (the sweeper's scheduled rule has a ScheduleExpression instead).
      .filter(([, resource]) => resource.Type === 'AWS::Events::Rule' && resource.Properties?.EventPattern)
      .map(([id, resource]) => {
        const props = resource.Properties as {
          EventPattern: unknown;
          State?: string;
          EventBusName?: unknown;
          Targets: { Arn: { 'Fn::GetAtt': [string, string] } }[];
        };
        expect(props.State ?? 'ENABLED').toBe('ENABLED');
        expect(props.EventBusName).toBeUndefined(); // the default bus, where S3 sends its events
        return {
          id,
          pattern: resolveBucket(props.EventPattern, bucketId) as EventPattern,
          targets: props.Targets.map((t) => functionsById.get(t.Arn['Fn::GetAtt'][0]) as string),
        };
      })
  );
}

/** The S3 "Object Created" event of a created object, as S3 sends it to EventBridge. */
function objectCreated(key: string, data: Buffer): S3ObjectCreatedEvent {
  const event = structuredClone(FIXTURE);
  return {
    ...event,
    id: randomUUID(),
    account: '111122223333',
    region: 'eu-west-1',
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    resources: [`arn:aws:s3:::${BUCKET}`],
    detail: {
      ...event.detail,
      bucket: { name: BUCKET },
      object: {
        key: encodeS3EventKey(key),
        size: data.length,
        etag: createHash('md5').update(data).digest('hex'),
        'version-id': randomBytes(24).toString('base64url').slice(0, 32),
        sequencer: Date.now().toString(16).toUpperCase().padStart(18, '0'),
      },
      'request-id': randomBytes(8).toString('hex').toUpperCase(),
      requester: '111122223333',
    },
  };
}

/** Starts the warm execution environment of a function. */
async function start(name: string): Promise<void> {
  const dir = assets.get(name);
  if (!dir) throw new Error(`no asset for ${name}`);
  const child = fork(WORKER, [join(dir, BUNDLE_FILE)], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? work,
      CLD_DATA_DIR: dataDir,
      CLD_FUNCTION: name,
      CLD_POLICY_DIR: join(dir, 'policies'),
      POWERTOOLS_SERVICE_NAME: 'cld',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const pending = new Map<string, (o: Outcome) => void>();
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} worker exited with ${code}`)));
    child.on('message', (message: { ready?: boolean; id?: string } & Outcome) => {
      if (message.ready) return resolve();
      const done = pending.get(message.id as string);
      pending.delete(message.id as string);
      done?.(message);
    });
  });
  workers.set(name, { child, pending });
  await ready;
}

/** Invokes a function's bundle once (asynchronous invocation: the event in, the outcome out). */
async function invoke(name: string, event: unknown): Promise<Outcome> {
  if (!workers.has(name)) await start(name);
  const worker = workers.get(name) as { child: ChildProcess; pending: Map<string, (o: Outcome) => void> };
  const id = randomUUID();
  return new Promise((resolve) => {
    worker.pending.set(id, resolve);
    worker.child.send({ id, event });
  });
}

/** What one run through the rules did. */
interface Drive {
  /** Keys created during the run, in the order they were seen. */
  written: string[];
  /** Deliveries (= invocations) per function. */
  invocations: Record<string, number>;
  /** Deliveries per rule (logical id). */
  byRule: Record<string, number>;
  /** Deliveries per written key. */
  byKey: Map<string, string[]>;
  outcomes: { fn: string; key: string; outcome: Outcome }[];
}

/**
 * Routes the events of `keys` (and of everything the invoked functions write, until nothing new
 * is written) through the template's rules to the function bundles, one delivery at a time.
 */
async function drive(keys: readonly string[], seen: Set<string>): Promise<Drive> {
  const run: Drive = { written: [], invocations: {}, byRule: {}, byKey: new Map(), outcomes: [] };
  const queue = [...keys];
  const discover = async () => {
    for (const key of await storage.findByPrefix('')) {
      if (seen.has(key)) continue;
      seen.add(key);
      queue.push(key);
    }
  };
  for (const key of keys) seen.add(key);
  while (queue.length > 0) {
    const key = queue.shift() as string;
    run.written.push(key);
    const event = objectCreated(key, await storage.get(key));
    const targets: string[] = [];
    for (const rule of templateRules) {
      if (!matchesPattern(rule.pattern, event)) continue;
      run.byRule[rule.id] = (run.byRule[rule.id] ?? 0) + 1;
      for (const fn of rule.targets) {
        targets.push(fn);
        run.invocations[fn] = (run.invocations[fn] ?? 0) + 1;
        const outcome = await invoke(fn, event);
        run.outcomes.push({ fn, key, outcome });
        await discover();
      }
    }
    run.byKey.set(key, targets);
  }
  return run;
}

/** An API Gateway HTTP API (payload 2.0) request of the fixture's caller for a route of API_ROUTES. */
function apiRequest(routeKey: string, path: string, body?: unknown) {
  const [method] = routeKey.split(' ');
  const text = body === undefined ? undefined : JSON.stringify(body);
  return {
    ...REQUEST,
    routeKey,
    rawPath: path,
    headers: { ...REQUEST.headers, 'content-length': String(Buffer.byteLength(text ?? '')) },
    requestContext: {
      ...REQUEST.requestContext,
      routeKey,
      http: { ...REQUEST.requestContext.http, method, path },
    },
    body: text,
  };
}

/** Calls the http function's bundle; its status and JSON body. */
async function http(
  routeKey: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const outcome = await invoke('http', apiRequest(routeKey, path, body));
  expect(outcome.ok, JSON.stringify(outcome.error)).toBe(true);
  return { status: outcome.result?.statusCode as number, json: JSON.parse(String(outcome.result?.body)) };
}

/** One line per function and the totals, for the test log. */
function report(label: string, run: Drive, objects: number): string {
  const deliveries = Object.values(run.invocations).reduce((a, b) => a + b, 0);
  const fns = Object.entries(run.invocations)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([fn, n]) => `${fn} ${n}`)
    .join(', ');
  return `${label}: ${objects} objects written, ${deliveries} deliveries (${fns}), ${(deliveries / objects).toFixed(2)} per object`;
}

/**
 * Each test drives a question through the built bundles in-process (every step an import and an
 * invocation): 15–60 s of wall time on a quiet 2-core machine, over 60 s at load 20, so these
 * tests get four minutes.
 */
const DRIVE_TIMEOUT_MS = 240_000;

beforeAll(async () => {
  const cache = join(PROJECT_ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  work = mkdtempSync(join(cache, 'cld-template-test-'));
  synth = await bundledSynth();
  for (const resource of Object.values(synth.json.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const props = resource.Properties as {
      Code: { S3Key: string };
      Environment?: { Variables: Record<string, unknown> };
    };
    const name = props.Environment?.Variables.CLD_FUNCTION;
    if (typeof name === 'string')
      assets.set(name, join(synth.outdir, `asset.${props.Code.S3Key.replace(/\.zip$/, '')}`));
  }
  templateRules = rulesOf(synth.json);
  dataDir = mkdtempSync(join(work, 'data-'));
  storage = new FilesystemStorage(join(dataDir, 'resources'));
  // The run's bundling synth, built here or by bundles.test.ts in another worker (waited for):
  // ≈ 1 min on a quiet 2-core machine, over 4 min at load 17.
}, 600_000);

afterAll(() => {
  for (const { child } of workers.values()) child.kill();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the synthesized EventBridge rules', () => {
  it('are the rules of the routes (one per route, or one per shape above the complexity limit), each on Object Created events of the resources bucket with key wildcards only', () => {
    const expected = routingTable(BUCKET).flatMap((route) => rulesOfRoute(route).map(() => [route.target]));
    expect(expected.length).toBe(9);
    expect(templateRules.map((r) => r.targets).sort()).toEqual(expected.sort());
    for (const rule of templateRules) {
      // S3's Object Created, and the sweeper's RESOURCE_PUT (source cld) for the same keys.
      expect(rule.pattern).toMatchObject({
        source: ['aws.s3', 'cld'],
        'detail-type': ['Object Created', 'RESOURCE_PUT'],
      });
      const detail = rule.pattern.detail as {
        bucket: { name: string[] };
        object: { key: { wildcard: string }[] };
      };
      expect(detail.bucket.name).toEqual([BUCKET]);
      for (const matcher of detail.object.key)
        expect(matcher.wildcard).toMatch(/^cld\/\*_[A-Za-z*-]+\.json$/);
    }
  });
});

describe('conversations through the template rules and the built bundles', () => {
  const seen = new Set<string>();
  let conversation: string;
  let id: string;

  it(
    'writes the catalog (as the deploy seeds it) and ingested documents, which no rule delivers',
    async () => {
      const resources = new ResourceIndex(storage, new RulesPolicy(rules));
      const seeded = await seedCatalog(resources);
      const index = await MiniSearchIndex.open(new FilesystemStorage(dataDir));
      const ingested = await ingest(DOCS, { resources, index, actor: SYSTEM_ACTOR, cwd: PROJECT_ROOT });
      expect(seeded).toBeGreaterThan(0);
      expect(ingested.chunks).toBeGreaterThan(10);

      const run = await drive(await storage.findByPrefix(''), seen);

      expect(run.written.filter((key) => key.startsWith('cld/'))).toHaveLength(
        seeded + ingested.documents + ingested.chunks,
      );
      expect(run.invocations).toEqual({});
    },
    DRIVE_TIMEOUT_MS,
  );

  it(
    'answers the quick-start question, each written object reaching ≤ 1.5 functions on average',
    async () => {
      const before = new Set(seen);
      const accepted = await http('POST /conversations', '/conversations', { message: QUICK_START });
      expect(accepted.status).toBe(202);
      conversation = accepted.json.conversation as string;
      id = accepted.json.id as string;
      const created = (await storage.findByPrefix('')).filter((key) => !before.has(key));

      const run = await drive(created, seen);

      const objects = run.written.filter((key) => isWithin(urnOfKey(key) ?? '', conversation));
      console.log(report('quick-start question', run, objects.length));
      // Nothing else is written (a cold start writes nothing), and S3 sends every key unchanged.
      expect(objects).toEqual(run.written);
      for (const key of run.written) expect(encodeS3EventKey(key)).toBe(key);
      expect(run.outcomes.filter((o) => !o.outcome.ok)).toEqual([]);
      // The routes deliver only what a step acts on: the handlers' route filter drops nothing.
      expect(
        run.outcomes.filter((o) => o.outcome.result?.detail === 'shape not routed to this step'),
      ).toEqual([]);
      expect(objects).toHaveLength(19);
      expect(run.invocations).toEqual({ plan: 3, assistant: 11, tool: 2, reply: 5 });
      const deliveries = Object.values(run.invocations).reduce((a, b) => a + b, 0);
      expect(deliveries / objects.length).toBeLessThanOrEqual(1.5);
      // Every object of a shape a step acts on reached that step, and only those did.
      const byShape = (pattern: RegExp) =>
        objects.filter((key) => pattern.test(shapeOf(urnOfKey(key) as string)));
      for (const key of byShape(/-Call$/)) expect(run.byKey.get(key)).toEqual(['tool']);
      for (const key of byShape(/-Task$/)) expect(run.byKey.get(key)).toEqual(['assistant']);
      for (const key of byShape(/^Conversation-Message-Task-Output$/))
        expect(run.byKey.get(key)?.sort()).toEqual(['plan', 'reply']);
      for (const key of byShape(/-Task-Task-Output$/))
        expect(run.byKey.get(key)?.sort()).toEqual(['assistant', 'reply']);
      for (const key of byShape(/-(Plan|Verdict)$|^Conversation$/)) expect(run.byKey.get(key)).toEqual([]);
    },
    DRIVE_TIMEOUT_MS,
  );

  it('says so through the http bundle: done, with an answer of two sections and citations', async () => {
    const view = await http('GET /conversations/{id}', `/conversations/${id}`);

    expect(view.status).toBe(200);
    expect(view.json.status).toBe('done');
    const answer = view.json.answer as { content: string; citations: string[] };
    expect(answer.content.match(/^### /gm)).toHaveLength(2);
    expect(answer.citations.length).toBeGreaterThan(0);
  });

  it(
    'answers a follow-up question in the same conversation under the same bound',
    async () => {
      const before = new Set(seen);
      const accepted = await http('POST /conversations/{id}/messages', `/conversations/${id}/messages`, {
        message: 'How do I enable versioning on a bucket?',
      });
      expect(accepted.status).toBe(202);
      const created = (await storage.findByPrefix('')).filter((key) => !before.has(key));

      const run = await drive(created, seen);

      console.log(report('follow-up question', run, run.written.length));
      expect(run.outcomes.filter((o) => !o.outcome.ok)).toEqual([]);
      const deliveries = Object.values(run.invocations).reduce((a, b) => a + b, 0);
      expect(deliveries / run.written.length).toBeLessThanOrEqual(1.5);
      const view = await http('GET /conversations/{id}', `/conversations/${id}`);
      const messages = view.json.messages as { status?: string }[];
      expect(messages).toHaveLength(2);
      expect(view.json.status).toBe('done');
    },
    DRIVE_TIMEOUT_MS,
  );

  it(
    'ends a 3-part question whose third part the corpus cannot answer partial, parts 1–2 in the answer (issue 21)',
    async () => {
      const before = new Set(seen);
      const accepted = await http('POST /conversations', '/conversations', { message: PARTIAL_QUESTION });
      expect(accepted.status).toBe(202);
      const created = (await storage.findByPrefix('')).filter((key) => !before.has(key));

      const run = await drive(created, seen);

      expect(run.outcomes.filter((o) => !o.outcome.ok)).toEqual([]);
      const view = await http('GET /conversations/{id}', `/conversations/${accepted.json.id as string}`);
      expect(view.json.status).toBe('partial');
      const answer = view.json.answer as {
        status: string;
        content: string;
        unanswered?: { title: string }[];
      };
      expect(answer.status).toBe('partial');
      expect(answer.unanswered?.map((p) => p.title)).toHaveLength(1);
      expect(partialAnswerProblems(answer.content)).toEqual([]);
    },
    DRIVE_TIMEOUT_MS,
  );
});
