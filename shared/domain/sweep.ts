import type { Logger } from '@aws-lambda-powertools/logger';
import pLimit from 'p-limit';
import { StalledError, toErrorInfo } from '../errors.js';
import type { RedrivePublisher } from '../events/redrive.js';
import type { Actor } from '../policy/port.js';
import { BUDGET } from '../projections/budget.js';
import type { OpenConversation, OpenConversationStore } from '../projections/open-conversations.js';
import type { ProjectionStore } from '../projections/port.js';
import { chargesOf } from '../projections/replay.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { AnyResource } from '../resources/schemas.js';
import { answerMessage } from './common.js';
import type { Limits } from './limits.js';
import { type ConversationProgress, conversationProgress, type TurnProgress } from './progress.js';
import { isEnded } from './turn.js';

/**
 * Resume and redrive (issue 12: nothing stays pending, even when the process dies). Both walk
 * open conversations — the open-conversations projection (shared/projections/open-conversations.ts),
 * or the URNs given — and, for each, from its stored resources alone (shared/domain/progress.ts):
 *
 * 1. **repair** its projections: every counter member and budget charge its resources imply
 *    (the replay's derivation, shared/projections/replay.ts) that the store lacks is applied, once.
 *    Every step writes a resource *before* it counts or charges it, so an interruption can only
 *    leave a charge missing, never one too many; applying the missing members makes the store
 *    equal the replay again, and a step that runs later applies them as no-ops;
 * 2. **closes** its item when every user Message is answered;
 * 3. otherwise **re-emits** `RESOURCE_PUT` for the resources whose effect is missing.
 *
 * `resume` (a runtime starting again: `serve`, `ask`, `cld resume`) re-drives every open
 * conversation at once. `sweep` (the scheduled sweeper in AWS; every minute inside `serve`) looks
 * only at conversations whose last progress is older than `limits.stallAfterMs`, and counts its
 * redrives: the count starts again whenever a resource was created since the last redrive, and a
 * conversation re-driven `limits.maxRedrives` times without progress has its stalled messages
 * answered with a `STALLED` error naming what did not complete. A message that waits for a
 * person (an approval request not decided and not expired) is never stalled (progress.ts), so a
 * sweep neither re-drives nor answers it `STALLED` while it waits, whatever its other tasks or
 * the conversation's other messages did.
 */

/** What {@link sweep} uses. */
export interface SweepDeps {
  resources: ResourceIndex;
  projections: ProjectionStore;
  open: OpenConversationStore;
  publisher: RedrivePublisher;
  limits: Limits;
  logger: Logger;
  now: () => Date;
}

/** Options of {@link sweep}. */
export interface SweepOptions {
  mode: 'resume' | 'sweep';
  /** Only these conversations (URNs), open or not; default: the open-conversations projection. */
  conversations?: readonly string[];
  /** Conversations handled at once (default 4). */
  concurrency?: number;
  /**
   * Stall time of this sweep (ms; default `limits.stallAfterMs`). The local sweeper passes 0 when
   * its bus is idle: with nothing in flight, an unanswered message cannot progress by itself.
   */
  stallAfterMs?: number;
  /** Called after each conversation (progress output). */
  onProgress?: (outcome: SweepOutcome, done: number, total: number) => void;
}

/** What was done for one conversation. */
export interface SweepOutcome {
  conversation: string;
  /**
   * `closed`: every message answered; `redriven`: events re-emitted; `failed`: answered as stalled;
   * `waiting`: not stalled after all (sweep); `missing`: no Conversation stored (item closed).
   */
  action: 'closed' | 'redriven' | 'failed' | 'waiting' | 'missing';
  /** Events re-emitted. */
  events: number;
  /** Projection members applied by the repair. */
  repaired: number;
  /** Redrives without progress so far (sweep). */
  redrives: number;
  /** What the open messages wait for. */
  waitingFor: string[];
}

/** The actor the sweeper reads a conversation as (the plan function's read rule). */
export function sweeperActor(conversation: string, message?: string): Actor {
  return {
    kind: 'plan',
    id: 'function:sweeper',
    conversation,
    ...(message ? { message } : {}),
  };
}

/**
 * Resumes (`mode: 'resume'`) or sweeps (`mode: 'sweep'`) conversations (see the file header).
 * @returns one outcome per conversation handled, in the order handled
 * @throws what storage, the projection store or the publisher throw for a conversation (the other
 *   conversations are still handled; the first error is rethrown at the end)
 */
export async function sweep(deps: SweepDeps, options: SweepOptions): Promise<SweepOutcome[]> {
  const now = deps.now();
  const items = await candidates(deps, options, now);
  const limit = pLimit(options.concurrency ?? 4);
  const outcomes: SweepOutcome[] = [];
  let failure: unknown;
  await Promise.all(
    items.map((item) =>
      limit(async () => {
        try {
          const outcome = await sweepConversation(deps, item, options.mode, options.stallAfterMs);
          outcomes.push(outcome);
          options.onProgress?.(outcome, outcomes.length, items.length);
        } catch (error) {
          deps.logger.error('sweep failed for a conversation', {
            conversation: item.conversation,
            error: toErrorInfo(error),
          });
          failure ??= error;
        }
      }),
    ),
  );
  if (failure !== undefined) throw failure;
  return outcomes;
}

async function candidates(deps: SweepDeps, options: SweepOptions, now: Date): Promise<OpenConversation[]> {
  if (options.conversations) {
    const open = new Map((await deps.open.list()).map((item) => [item.conversation, item]));
    return options.conversations.map(
      (conversation) => open.get(conversation) ?? { conversation, progress: now.toISOString(), redrives: 0 },
    );
  }
  if (options.mode === 'resume') return deps.open.list();
  return deps.open.list(new Date(now.getTime() - (options.stallAfterMs ?? deps.limits.stallAfterMs)));
}

/** One conversation: repair, then close, wait, re-drive or fail it. */
export async function sweepConversation(
  deps: SweepDeps,
  item: OpenConversation,
  mode: SweepOptions['mode'],
  stallAfterMs: number = deps.limits.stallAfterMs,
): Promise<SweepOutcome> {
  const { conversation } = item;
  const actor = sweeperActor(conversation);
  const root = await deps.resources.find(actor, 'common.Conversation', conversation);
  const base = { conversation, events: 0, repaired: 0, redrives: item.redrives, waitingFor: [] };
  if (!root) {
    await deps.open.close(conversation, item.progress);
    return { ...base, action: 'missing' };
  }
  const resources: AnyResource[] = [root, ...(await deps.resources.list(actor, conversation))];
  const repaired = await repairProjections(deps.projections, conversation, resources);
  const progress = conversationProgress(conversation, resources, { now: deps.now(), stallAfterMs });
  const open = progress.turns.filter((turn) => !isEnded(turn.status));
  const waitingFor = open.flatMap((turn) => turn.waitingFor);
  if (open.length === 0) {
    await deps.open.close(conversation, item.progress);
    return { ...base, repaired, action: 'closed' };
  }
  // A sweep acts on the stalled messages only: one that progresses or waits for a person (never
  // stalled, progress.ts) is neither re-driven nor failed, even beside a stalled one.
  const acted = mode === 'sweep' ? open.filter((turn) => turn.status === 'stalled') : open;
  if (acted.length === 0) {
    // Storage moved after the item's last touch: not stalled; the item catches up.
    if (progress.lastProgress) await deps.open.touch(conversation, new Date(progress.lastProgress));
    return { ...base, repaired, waitingFor, action: 'waiting' };
  }
  const redrives =
    mode === 'resume' ? item.redrives : item.seen === progress.lastProgress ? item.redrives + 1 : 1;
  if (mode === 'sweep' && redrives > deps.limits.maxRedrives) {
    await failStalled(deps, progress, acted, item.redrives);
    // The item stays open for the messages not failed (their answers are progress: the count restarts).
    if (acted.length === open.length) await deps.open.close(conversation, item.progress);
    return { ...base, repaired, redrives: item.redrives, waitingFor, action: 'failed' };
  }
  const urns = [...new Set(acted.flatMap((turn) => turn.redrive))];
  await deps.publisher.publish(urns, mode === 'sweep' ? 'redrive' : 'resume');
  if (mode === 'sweep') await deps.open.recordRedrive(conversation, redrives, progress.lastProgress);
  deps.logger.info(mode === 'sweep' ? 'conversation re-driven' : 'conversation resumed', {
    conversation,
    events: urns.length,
    redrives,
    repaired,
    waitingFor,
  });
  return { ...base, repaired, redrives, waitingFor, events: urns.length, action: 'redriven' };
}

/**
 * Applies every projection member the conversation's resources imply and the store lacks
 * ({@link chargesOf}: what the live steps apply), each once; a budget charge carries the earliest
 * `createdAt` of a charged resource as its `since`, as a rebuild does.
 * @returns how many members were applied
 */
export async function repairProjections(
  store: ProjectionStore,
  conversation: string,
  resources: readonly AnyResource[],
): Promise<number> {
  const charges = chargesOf(conversation, resources);
  if (charges.length === 0) return 0;
  const stored = new Map((await store.list(conversation)).map((p) => [p.name, new Set(p.members)]));
  const since = charges
    .filter((c) => c.name === BUDGET && c.createdAt)
    .map((c) => c.createdAt as string)
    .sort()[0];
  let applied = 0;
  for (const charge of charges) {
    if (stored.get(charge.name)?.has(charge.member)) continue;
    const result = await store.applyOnce(
      { conversation, name: charge.name },
      charge.member,
      charge.increments,
      charge.name === BUDGET && since ? { since } : {},
    );
    if (result.applied) applied++;
  }
  return applied;
}

/** Answers each given (stalled) turn with a `STALLED` error naming what it waits for (create-only). */
async function failStalled(
  deps: SweepDeps,
  progress: ConversationProgress,
  stalled: readonly TurnProgress[],
  redrives: number,
): Promise<void> {
  for (const turn of stalled) {
    const error = new StalledError(
      `no progress since ${turn.lastProgress ?? 'it was stored'} after ${redrives} redrive(s); still waiting for: ${turn.waitingFor.join('; ') || 'nothing known'}`,
      { details: { redrives, waitingFor: turn.waitingFor } },
    );
    const answer = answerMessage(
      turn.message,
      { content: `I could not complete this request: ${error.message}`, error: toErrorInfo(error) },
      deps.now(),
    );
    await deps.resources.put(sweeperActor(progress.conversation, turn.message), answer);
    deps.logger.warn('stalled conversation failed', {
      conversation: progress.conversation,
      message: turn.message,
      redrives,
    });
  }
}
