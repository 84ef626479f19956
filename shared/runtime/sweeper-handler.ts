import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import * as z from 'zod';
import type { Deps } from '../domain/ports.js';
import { type SweepOutcome, sweep } from '../domain/sweep.js';
import { ConfigError, ValidationError } from '../errors.js';
import type { RedrivePublisher } from '../events/redrive.js';

/**
 * The sweeper's Lambda handler (issue 12, redrive in AWS): a scheduled rule invokes it with an
 * EventBridge "Scheduled Event"; it runs one sweep (shared/domain/sweep.ts) over the
 * open-conversations projection and re-drives through EventBridge `PutEvents`.
 */

/** The EventBridge "Scheduled Event" a scheduled rule sends (validated, extra fields kept). */
export const ScheduledEventSchema = z.looseObject({
  'detail-type': z.literal('Scheduled Event'),
  source: z.literal('aws.events'),
  time: z.string(),
});

/** What one invocation did (returned, and logged). */
export interface SweepSummary {
  conversations: number;
  redriven: number;
  failed: number;
  closed: number;
  events: number;
}

/** Options of {@link createSweeperHandler}. */
export interface SweeperHandlerOptions {
  /** The composition root (memoised by the caller). */
  getDeps: () => Promise<Deps>;
  /**
   * The publisher; default: EventBridge `PutEvents` on `CLD_EVENT_BUS` with a client at module
   * scope, the events naming `CLD_BUCKET` (both set by the stack together with the grant).
   */
  publisher?: () => Promise<RedrivePublisher>;
}

let defaultPublisher: Promise<RedrivePublisher> | undefined;

/**
 * The EventBridge publisher from the environment, built once per cold start.
 * @throws ConfigError naming a missing `CLD_EVENT_BUS` or `CLD_BUCKET`
 */
export function publisherFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<RedrivePublisher> {
  defaultPublisher ??= (async () => {
    const bus = env.CLD_EVENT_BUS;
    const bucket = env.CLD_BUCKET;
    if (!bus || !bucket)
      throw new ConfigError('CLD_EVENT_BUS and CLD_BUCKET must be set for the sweeper (the stack sets both)');
    const { createEventBridgeClient, EventBridgePublisher } = await import(
      '../events/eventbridge-publisher.js'
    );
    const client = createEventBridgeClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) });
    return new EventBridgePublisher({ client, bucket, eventBusName: bus });
  })();
  return defaultPublisher;
}

/** Sums the outcomes of a sweep. */
export function summarise(outcomes: readonly SweepOutcome[]): SweepSummary {
  return {
    conversations: outcomes.length,
    redriven: outcomes.filter((o) => o.action === 'redriven').length,
    failed: outcomes.filter((o) => o.action === 'failed').length,
    closed: outcomes.filter((o) => o.action === 'closed' || o.action === 'missing').length,
    events: outcomes.reduce((sum, o) => sum + o.events, 0),
  };
}

/**
 * Builds the handler: Deps loaded once (the publisher at the first redrive), the Powertools logger
 * given the Lambda context, the event validated, then one sweep.
 * @throws ValidationError for an event that is not a Scheduled Event; ConfigError for a function
 *   composed without the open-conversations projection (no `CLD_TABLE`)
 */
export function createSweeperHandler(options: SweeperHandlerOptions) {
  let deps: Deps | undefined;
  // Built at the first redrive: a sweep with nothing stalled needs no EventBridge client.
  const load = options.publisher ?? (() => publisherFromEnv());
  const publisher: RedrivePublisher = {
    publish: async (urns, reason) => (await load()).publish(urns, reason),
  };
  return middy<unknown, SweepSummary>()
    .before(async (request) => {
      deps = await options.getDeps();
      await injectLambdaContext(deps.logger).before?.(request);
    })
    .handler(async (event: unknown) => {
      const parsed = ScheduledEventSchema.safeParse(event);
      if (!parsed.success)
        throw new ValidationError(`not an EventBridge Scheduled Event: ${z.prettifyError(parsed.error)}`);
      const active = deps as Deps;
      if (!active.openConversations)
        throw new ConfigError('the sweeper needs the open-conversations projection (CLD_TABLE)');
      const outcomes = await sweep(
        {
          resources: active.resources,
          projections: active.projections,
          open: active.openConversations,
          publisher,
          limits: active.limits,
          logger: active.logger,
          now: active.now,
        },
        { mode: 'sweep' },
      );
      const summary = summarise(outcomes);
      active.logger.info('sweep done', { ...summary });
      return summary;
    });
}
