import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy, { type MiddlewareObj } from '@middy/core';
import type { StepOutcome } from '../domain/common.js';
import type { Deps } from '../domain/ports.js';
import { CldError } from '../errors.js';
import { type ResourcePutEvent, toResourcePut } from '../events/envelope.js';
import { routeAccepts, routingTable, type StepName } from '../events/routing.js';
import { rootOf } from '../urn.js';

/**
 * The one middleware chain every step function uses (Middy: middleware first, handler last;
 * one middleware, one job): logger context → parse the S3 "Object Created" event into
 * `RESOURCE_PUT` → drop events none of the step's routes matches → the domain step → error
 * logging. A thrown error fails the invocation, so Lambda's asynchronous retries (and then
 * the dead-letter queue) apply; locally the LocalBus does the same.
 */

/** A domain step: what a function does for one `RESOURCE_PUT`. */
export type Step = (event: ResourcePutEvent, deps: Deps) => Promise<StepOutcome>;

const ROUTES = routingTable('*');

/** Steps that advance a conversation's task tree: they record its progress (the reply step does not). */
const TASK_TREE_STEPS: ReadonlySet<StepName> = new Set(['plan', 'assistant', 'tool']);

/** Parses and normalises the event (replacing `request.event`); malformed input → ValidationError. */
function parseResourcePut(): MiddlewareObj {
  return {
    before: (request) => {
      request.event = toResourcePut(request.event);
    },
  };
}

/**
 * Returns early, with an `ignored` outcome, for events whose key no route of the step matches
 * (an event of another rule, a hand-made one): the step acts only on what its rules deliver.
 */
function routeFilter(step: StepName, logger: () => Logger): MiddlewareObj {
  const routes = ROUTES.filter((route) => route.target === step);
  return {
    before: (request) => {
      const event = request.event as ResourcePutEvent;
      if (routes.some((route) => routeAccepts(route, event.urn))) return undefined;
      logger().debug('event not for this step', { urn: event.urn });
      return {
        action: 'ignored',
        urn: event.urn,
        detail: 'shape not routed to this step',
      } satisfies StepOutcome;
    },
  };
}

/** Logs failures with their code (never swallows them). */
function errorLogger(logger: () => Logger): MiddlewareObj {
  return {
    onError: (request) => {
      const error = request.error;
      const info = error instanceof CldError ? error.toJSON() : { message: String(error) };
      logger().error('step failed', {
        error: info,
        stack: error instanceof CldError ? undefined : error?.stack,
      });
    },
  };
}

/**
 * Builds a step's Lambda handler. `getDeps` is the composition root, called at every invocation
 * and memoised by the caller (shared/runtime/compose.ts `getDeps`): composed Deps are kept for the
 * execution environment's life, a failed composition fails only that invocation (logged and
 * rethrown, so Lambda's retries apply) and the next invocation composes again. The same handler
 * runs in AWS, locally and in tests.
 */
export function createStepHandler(step: StepName, run: Step, getDeps: () => Promise<Deps>) {
  let deps: Deps | undefined;
  // Until the cold-start composition succeeds there are no Deps: a failed composition is logged
  // (and rethrown) with this logger instead of being hidden behind a TypeError.
  let bootLogger: Logger | undefined;
  const logger = (): Logger => {
    if (deps) return deps.logger;
    bootLogger ??= new Logger({ serviceName: 'cld' });
    return bootLogger;
  };
  const loadDeps: MiddlewareObj = {
    before: async () => {
      deps = await getDeps();
    },
  };
  const lazyLogger: MiddlewareObj = {
    before: async (request) => {
      await injectLambdaContext(logger()).before?.(request);
    },
  };
  return middy<unknown, StepOutcome | undefined>()
    .use(loadDeps)
    .use(lazyLogger)
    .use(errorLogger(logger))
    .use(parseResourcePut())
    .use(routeFilter(step, logger))
    .handler(async (event: unknown) => {
      const resourcePut = event as ResourcePutEvent;
      const active = deps as Deps;
      active.logger.appendKeys({ urn: resourcePut.urn, conversation: rootOf(resourcePut.urn), step });
      try {
        const outcome = await run(resourcePut, active);
        // Progress for the sweeper (shared/domain/sweep.ts): after the step's writes, never before.
        if (TASK_TREE_STEPS.has(step) && outcome.action !== 'ignored')
          await active.openConversations?.touch(rootOf(resourcePut.urn), active.now());
        active.logger.info('step done', { ...outcome });
        return outcome;
      } finally {
        active.logger.removeKeys(['urn', 'conversation', 'step']);
      }
    });
}
