import { roundOf } from '../domain/assistant.js';
import { NAMES } from '../domain/common.js';
import { ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import type { ResourceIndex } from '../resources/resource-index.js';
import type { AnyResource, Task } from '../resources/schemas.js';
import { parentOf, parseUrn, typeOf } from '../urn.js';
import { BUDGET, modelCharge, TOOL_CHARGE } from './budget.js';
import { DONE, roundCounterKey } from './counters.js';
import type { Projection, ProjectionStore } from './port.js';

/**
 * Replay (DESIGN.md principle 2: projections "are derived from the resources. They can be
 * rebuilt from S3"): recomputes every projection of a conversation from its resources alone,
 * compares it with the store, and can rebuild the store from the recomputation.
 *
 * What is derived, member by member (each member is exactly what the live step applies):
 * - round counters: each task output `O` of a task `C` under a parent `P` (a supervised task, or
 *   the user Message for root tasks) is member `O` of `P`'s counter for `C`'s round;
 * - the budget: each `plan.Plan`, `common.Message` and `plan.Verdict` with `usage` (one model
 *   call each) is member `meta.hash` with its tokens and one model call; each `tool.Call`, one
 *   tool call.
 * The budget's `since` is a time, not derived from the resources, and is not compared (a
 * rebuild sets it to the earliest `createdAt` of a charged resource).
 */

/** One member of one projection, as the live step applies it. */
export interface Charge {
  name: string;
  member: string;
  increments: Record<string, number>;
  /** `createdAt` of the resource (rebuild uses the earliest as the budget's `since`). */
  createdAt?: string;
}

/** One difference between the store and the replay. */
export interface ProjectionDifference {
  name: string;
  /** `missing`: replay has it, the store not; `unexpected`: the store has it, replay not. */
  kind: 'missing' | 'unexpected' | 'values' | 'members';
  detail: string;
}

/** Result of {@link replayConversation}. */
export interface ReplayReport {
  conversation: string;
  /** Resources read from storage (the conversation included). */
  resources: number;
  /** Projections recomputed from the resources. */
  replayed: Projection[];
  /** Projections in the store (before a rebuild). */
  stored: Projection[];
  differences: ProjectionDifference[];
  /** Projections written by a rebuild (only when asked for). */
  rebuilt?: number;
}

/**
 * Every charge the resources of one conversation imply (see the file header).
 * @param resources the conversation and everything under it
 */
export function chargesOf(conversation: string, resources: readonly AnyResource[]): Charge[] {
  const tasks = new Map<string, Task>();
  for (const resource of resources)
    if (resource.meta.type === 'plan.Task') tasks.set(resource.meta.id, resource as Task);
  const charges: Charge[] = [];
  const at = (resource: AnyResource) =>
    resource.meta.createdAt ? { createdAt: resource.meta.createdAt } : {};
  for (const resource of resources) {
    const { meta } = resource;
    if (!meta.id.startsWith(`${conversation}/`)) continue;
    if (meta.type === 'common.Message' && meta.name === NAMES.output) {
      const child = tasks.get(meta.parent ?? '');
      const parent = child ? parentOf(child.meta.id) : undefined;
      if (child && parent) {
        const supervisor = tasks.get(parent);
        const round = supervisor ? roundOf(supervisor, child) : 0;
        if (supervisor || typeOf(parent) === 'common.Message')
          charges.push({
            name: roundCounterKey(parent, round).name,
            member: meta.id,
            increments: { [DONE]: 1 },
          });
      }
    }
    if (
      (meta.type === 'plan.Plan' || meta.type === 'common.Message' || meta.type === 'plan.Verdict') &&
      'usage' in resource &&
      resource.usage
    )
      charges.push({
        name: BUDGET,
        member: meta.hash,
        increments: modelCharge(resource.usage),
        ...at(resource),
      });
    if (meta.type === 'tool.Call')
      charges.push({ name: BUDGET, member: meta.hash, increments: { ...TOOL_CHARGE }, ...at(resource) });
  }
  return charges;
}

/** Folds charges into projections, sorted by name (members applied once, as the store does). */
export function foldCharges(conversation: string, charges: readonly Charge[]): Projection[] {
  const byName = new Map<string, { values: Record<string, number>; members: Set<string> }>();
  for (const charge of charges) {
    let projection = byName.get(charge.name);
    if (!projection) {
      projection = { values: {}, members: new Set() };
      byName.set(charge.name, projection);
    }
    if (projection.members.has(charge.member)) continue;
    projection.members.add(charge.member);
    for (const [name, amount] of Object.entries(charge.increments))
      projection.values[name] = (projection.values[name] ?? 0) + amount;
  }
  return [...byName.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, p]) => ({ conversation, name, values: p.values, members: [...p.members].sort() }));
}

/**
 * Compares stored projections with replayed ones: names, values (an absent value counts as 0)
 * and member sets; `since` is not compared.
 */
export function diffProjections(
  stored: readonly Projection[],
  replayed: readonly Projection[],
): ProjectionDifference[] {
  const differences: ProjectionDifference[] = [];
  const storedByName = new Map(stored.map((p) => [p.name, p]));
  const replayedByName = new Map(replayed.map((p) => [p.name, p]));
  for (const expected of replayed) {
    const actual = storedByName.get(expected.name);
    if (!actual) {
      differences.push({
        name: expected.name,
        kind: 'missing',
        detail: `not in the store: ${describe(expected)}`,
      });
      continue;
    }
    const names = new Set([...Object.keys(expected.values), ...Object.keys(actual.values)]);
    const values = [...names]
      .sort()
      .filter((n) => (expected.values[n] ?? 0) !== (actual.values[n] ?? 0))
      .map((n) => `${n}: stored ${actual.values[n] ?? 0}, replay ${expected.values[n] ?? 0}`);
    if (values.length) differences.push({ name: expected.name, kind: 'values', detail: values.join('; ') });
    const have = new Set(actual.members);
    const want = new Set(expected.members);
    const missing = expected.members.filter((m) => !have.has(m));
    const extra = actual.members.filter((m) => !want.has(m));
    if (missing.length || extra.length) {
      differences.push({
        name: expected.name,
        kind: 'members',
        detail: [
          missing.length ? `not counted: ${missing.join(', ')}` : '',
          extra.length ? `counted but not in storage: ${extra.join(', ')}` : '',
        ]
          .filter(Boolean)
          .join('; '),
      });
    }
  }
  for (const actual of stored) {
    if (!replayedByName.has(actual.name))
      differences.push({
        name: actual.name,
        kind: 'unexpected',
        detail: `not derivable from storage: ${describe(actual)}`,
      });
  }
  return differences;
}

/** One line describing a projection's values and member count. */
export function describe(projection: Projection): string {
  const values = Object.entries(projection.values)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, value]) => `${name} ${value.toLocaleString('en-US')}`)
    .join(', ');
  return `${values || 'no values'} (${projection.members.length} member${projection.members.length === 1 ? '' : 's'})`;
}

/**
 * Replays a conversation: reads its resources, recomputes its projections, compares them with
 * the store and, with `rebuild`, replaces the stored ones by the recomputation (delete, then
 * apply every member again).
 * @param actor who reads the resources (the operator)
 * @throws ValidationError when the URN is not a conversation or nothing is stored under it
 */
export async function replayConversation(
  resources: ResourceIndex,
  store: ProjectionStore,
  actor: Actor,
  conversation: string,
  options: { rebuild?: boolean } = {},
): Promise<ReplayReport> {
  const parsed = parseUrn(conversation);
  if (parsed.elements.length !== 1 || parsed.elements[0]?.type !== 'common.Conversation')
    throw new ValidationError(`${conversation} is not a conversation URN (cld:common.Conversation.<hash>)`);
  const root = await resources.find(actor, 'common.Conversation', conversation);
  if (!root) throw new ValidationError(`no conversation stored at ${conversation}`);
  const below = await resources.list(actor, conversation);
  const all: AnyResource[] = [root, ...below];
  const charges = chargesOf(conversation, all);
  const replayed = foldCharges(conversation, charges);
  const stored = await store.list(conversation);
  const report: ReplayReport = {
    conversation,
    resources: all.length,
    replayed,
    stored,
    differences: diffProjections(stored, replayed),
  };
  if (options.rebuild) report.rebuilt = await rebuild(store, conversation, charges);
  return report;
}

/** Replaces a conversation's projections by the ones `charges` imply; returns how many. */
export async function rebuild(
  store: ProjectionStore,
  conversation: string,
  charges: readonly Charge[],
): Promise<number> {
  await store.deleteConversation(conversation);
  const since = charges
    .filter((c) => c.name === BUDGET && c.createdAt)
    .map((c) => c.createdAt as string)
    .sort()[0];
  const names = new Set<string>();
  for (const charge of charges) {
    names.add(charge.name);
    await store.applyOnce(
      { conversation, name: charge.name },
      charge.member,
      charge.increments,
      charge.name === BUDGET && since ? { since } : {},
    );
  }
  return names.size;
}
