import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { handler as assistantHandler } from '../../functions/assistant/handler.js';
import { handler as planHandler } from '../../functions/plan/handler.js';
import { handler as replyHandler } from '../../functions/reply/handler.js';
import { handler as toolHandler } from '../../functions/tool/handler.js';
import type { ToolApproval } from '../catalog/catalog.js';
import { deadLetterStep } from '../domain/dead-letter.js';
import type { Limits } from '../domain/limits.js';
import type { Deps } from '../domain/ports.js';
import { type ResourceEvent, toResourcePut } from '../events/envelope.js';
import { type DeadLetter, type DeliveryFaults, LocalBus, type StepInvoker } from '../events/local-bus.js';
import { routingTable, type StepName } from '../events/routing.js';
import type { SchedulingPolicy } from '../events/scheduler.js';
import { OfflineChatModel } from '../llm/offline.js';
import type { ChatModel, Embedder } from '../llm/port.js';
import { LocalPersistenceLayer } from '../projections/idempotency.js';
import { LocalProjectionStore } from '../projections/local.js';
import { LocalOpenConversationStore } from '../projections/open-conversations.js';
import { LocalUserConversationStore } from '../projections/user-conversations.js';
import type { DEFAULT_RESOURCE_CACHE, ResourceCacheOptions } from '../resources/resource-index.js';
import type { FaultInjector } from '../storage/faulty.js';
import { FilesystemStorage } from '../storage/filesystem.js';
import { NotifyingStorage } from '../storage/notifying.js';
import type { StorageInterface } from '../storage/port.js';
import type { McpRuntime } from '../tools/mcp/sessions.js';
import { assembleDeps, seedCatalog } from './assemble.js';
import { provideDeps } from './compose.js';
import { parseLimits } from './settings.js';

/**
 * Read-cache bounds of the embedded default: one process runs every step of every conversation,
 * so the cache holds a 10,000-task conversation (≈ 57,000 resources, ≈ 70 MB of JSON) whole.
 * Not more entries than that needs: the cache's arrays are allocated when a runtime is created
 * (10 ms for 100,000 entries, 18 ms for 200,000). Lambda functions keep the smaller
 * {@link DEFAULT_RESOURCE_CACHE}.
 */
export const LOCAL_RESOURCE_CACHE: ResourceCacheOptions = {
  maxEntries: 100_000,
  maxBytes: 256 * 1024 * 1024,
};

/** Bucket name the local storage puts into its events. */
export const LOCAL_BUCKET = 'cld-local-resources';

/** Options of the embedded default. */
export interface LocalRuntimeOptions {
  /** Data directory: resources under `resources/`, the chunk index under `indexes/`. */
  dataDir: string;
  model?: ChatModel;
  /** Embedder for election and hybrid retrieval (default: the offline hashing embedder). */
  embedder?: Embedder;
  limits?: Partial<Limits>;
  /** Approval settings over the catalog's tools (`CLD_TOOL_APPROVAL`, shared/catalog/catalog.ts). */
  toolApproval?: ToolApproval;
  faults?: DeliveryFaults;
  /** Invocations at once (default 4). */
  concurrency?: number;
  /** Order of queued deliveries (default `newest-first`; shared/events/scheduler.ts). */
  scheduling?: SchedulingPolicy;
  /** Powertools log level (default SILENT: the CLI prints its own output). */
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  onDelivery?: (target: StepName, event: ResourceEvent) => void;
  onDeadLetter?: (letter: DeadLetter) => void;
  now?: () => Date;
  /** Backoff before retry n, in ms (default 50·2^(n-1)). */
  backoffMs?: (attempt: number) => number;
  /**
   * Fault injection (test/faults): handler crashes and poison events, decided per attempt. The
   * runtime runs every invocation inside it and routes resource creates and projection applies
   * through its wrappers. Delivery faults (copies, shuffle, delays) are `faults`.
   */
  injector?: FaultInjector;
  /** Storage of the resources (default: {@link FilesystemStorage} under `<dataDir>/resources`). */
  storage?: StorageInterface;
  /** Bounds of the resource read cache (default {@link LOCAL_RESOURCE_CACHE}). */
  resourceCache?: ResourceCacheOptions;
  /** MCP servers and sessions for the tool step (shared/runtime/adapters/tools.ts `mcpFor`); default: none. */
  mcp?: McpRuntime;
}

/** A running embedded default. */
export interface LocalRuntime {
  deps: Deps;
  bus: LocalBus;
  /** The raw storage of resources (no notifications): the filesystem unless `storage` was given. */
  storage: StorageInterface;
  /** The projection store itself (no fault injection); `deps.projections` may wrap it. */
  projections: LocalProjectionStore;
  /** The open-conversations projection (`deps.openConversations`), journaled under `projections/`. */
  openConversations: LocalOpenConversationStore;
}

/** A Lambda context for a local invocation. */
export function localContext(step: StepName): Context {
  const name = `cld-${step}`;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 900_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

const HANDLERS: Record<StepName, (event: unknown, context: Context) => Promise<unknown>> = {
  plan: planHandler,
  assistant: assistantHandler,
  tool: toolHandler,
  reply: replyHandler,
};

/**
 * Starts the embedded default (DESIGN.md "Local mode"): filesystem storage that emits the S3
 * events, an in-process bus routing them with the cloud rules' patterns, and the very Lambda
 * handlers of `functions/` invoked asynchronously with retries; the default catalog stored (as
 * the deployed stack stores it at deploy: {@link seedCatalog}); the local projection store and
 * idempotency layer journaled under `<dataDir>/projections`; and, as the on-failure
 * destination's consumer, the dead-letter step that fails the task of an event that failed
 * every attempt. Nothing here mocks the domain.
 */
export async function createLocalRuntime(options: LocalRuntimeOptions): Promise<LocalRuntime> {
  const storage = options.storage ?? new FilesystemStorage(join(options.dataDir, 'resources'));
  const projections = new LocalProjectionStore(join(options.dataDir, 'projections'));
  const openConversations = new LocalOpenConversationStore(join(options.dataDir, 'projections'));
  const userConversations = new LocalUserConversationStore(join(options.dataDir, 'projections'));
  const injector = options.injector;
  const invoker =
    (step: StepName): StepInvoker =>
    async (event, delivery) => {
      const invoke = async () => {
        await HANDLERS[step](event, localContext(step));
      };
      if (!injector || !delivery) return invoke();
      return injector.run(delivery, { target: step, urn: urnOfEvent(event) }, invoke);
    };
  const targets = Object.fromEntries(
    (Object.keys(HANDLERS) as StepName[]).map((step) => [step, invoker(step)]),
  ) as Record<StepName, StepInvoker>;
  let deps: Deps | undefined;
  // The on-failure destination's consumer: fails the task a dead-lettered event was for.
  const deadLetterTarget = async (letter: DeadLetter) => {
    const consume = async () => {
      if (deps) await deadLetterStep(letter, deps);
    };
    await (injector ? injector.outside(consume) : consume());
  };
  const bus = new LocalBus({
    routes: routingTable(LOCAL_BUCKET),
    targets,
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.scheduling ? { scheduling: options.scheduling } : {}),
    ...(options.faults ? { faults: options.faults } : {}),
    ...(options.onDelivery ? { onDelivery: options.onDelivery } : {}),
    ...(options.onDeadLetter ? { onDeadLetter: options.onDeadLetter } : {}),
    ...(options.backoffMs ? { backoffMs: options.backoffMs } : {}),
    deadLetterTarget,
  });
  deps = await assembleDeps({
    storage: new NotifyingStorage(injector ? injector.wrapStorage(storage) : storage, bus, LOCAL_BUCKET),
    indexStorage: new FilesystemStorage(options.dataDir),
    model: options.model ?? new OfflineChatModel(),
    ...(options.embedder ? { embedder: options.embedder } : {}),
    limits: parseLimits(undefined, options.limits),
    ...(options.toolApproval ? { toolApproval: options.toolApproval } : {}),
    projections: injector ? injector.wrapProjections(projections) : projections,
    idempotency: new LocalPersistenceLayer(join(options.dataDir, 'projections')),
    openConversations,
    userConversations,
    logger: new Logger({ serviceName: 'cld', logLevel: options.logLevel ?? 'SILENT' }),
    resourceCache: options.resourceCache ?? LOCAL_RESOURCE_CACHE,
    ...(options.mcp ? { mcp: options.mcp } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  // What the deployed stack's catalog seed does at deploy (functions never seed at cold start).
  await seedCatalog(deps.resources);
  provideDeps(deps);
  return { deps, bus, storage, projections, openConversations };
}

/** The URN an event is about (read from its key), or the raw key when it is not a resource key. */
function urnOfEvent(event: ResourceEvent): string {
  try {
    return toResourcePut(event).urn;
  } catch {
    return event.detail.object.key;
  }
}
