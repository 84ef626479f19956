import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outputUrn as outputUrnOf } from '../../shared/domain/common.js';
import { startConversation } from '../../shared/domain/conversation.js';
import type { DeadLetter, DeliveryFaults } from '../../shared/events/local-bus.js';
import { OfflineChatModel } from '../../shared/llm/offline.js';
import type { ChatModel } from '../../shared/llm/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { Projection, ProjectionStore } from '../../shared/projections/port.js';
import {
  chargesOf,
  diffProjections,
  foldCharges,
  type ProjectionDifference,
} from '../../shared/projections/replay.js';
import type { AnyResource, Message, Task, Verdict } from '../../shared/resources/schemas.js';
import { createLocalRuntime } from '../../shared/runtime/local.js';
import { ingest } from '../../shared/search/ingest.js';
import type { MiniSearchIndex } from '../../shared/search/minisearch-index.js';
import { type CrashKind, FaultInjector, type InjectionStats } from '../../shared/storage/faulty.js';
import { keyOf, parentOf, typeOf } from '../../shared/urn.js';
import { DOCS, QUESTION, withoutTimestamps } from '../e2e/local-run.js';
import { FaultyChatModel, type ModelFaultStats } from './faulty-model.js';
import { ScriptedModel } from './scripted-model.js';

/**
 * The fault-injection harness (issue 5). Runs a workload on the embedded default — the very
 * handlers, bus, filesystem storage and local projection store — under one scenario of faults,
 * and checks the outcome against a reference run without faults:
 * same final answer, same resources (same URNs, content equal apart from timestamps), nothing
 * pending, dead letters only for the poison event with its task failed, projections equal to a
 * replay from storage.
 *
 * Workloads: `docs`, the end-to-end question of issue 2 on the aws-s3/aws-events READMEs with the
 * offline model; `synthetic`, a scripted plan of `shape` (depth 4; ≥ 200 tasks at the large size).
 */

/** Sizes: the default runs in `npm test`; `large` is `npm run bench:faults`. */
export const SIZES = {
  default: { shape: [2, 2, 2, 3] },
  large: { shape: [3, 3, 4, 5] },
} as const;
export type SizeName = keyof typeof SIZES;

/** One set of faults. */
export interface Scenario {
  name: string;
  /** What is injected, for the table. */
  label: string;
  delivery?: DeliveryFaults;
  /** Share of attempts that crash (before / in the middle of / after their writes; error or abort). */
  crashRate?: number;
  /** Crash kinds to draw from (default: all three). */
  kinds?: readonly CrashKind[];
  /** Share of model calls that are throttled or time out. */
  modelFaultRate?: number;
  /** Whether one event (a tool call's) always fails. */
  poison?: boolean;
  seed: number;
}

const DUPLICATES: DeliveryFaults = { copies: { min: 2, max: 3 }, shuffle: true, maxDelayMs: 15 };

/**
 * The scenarios, each compared with the reference run of its kind (clean, or poison only). Fault
 * decisions are a hash of the seed, the step, the URN and the attempt (shared/storage/faulty.ts
 * `chance`), so a seed injects the same faults in every run; the seeds are ones under which the
 * small docs workload (≈ 30 attempts, 10 model calls) gets at least one fault of its kind at 10 %.
 */
export const SCENARIOS: readonly Scenario[] = [
  { name: 'clean', label: 'no faults', seed: 1 },
  {
    name: 'duplicates',
    label: 'every event 2–3×, shuffled, 0–15 ms delays',
    delivery: { ...DUPLICATES, seed: 2 },
    seed: 2,
  },
  {
    name: 'crashes',
    label: '10 % of attempts crash (error or abort; before/mid/after write)',
    crashRate: 0.1,
    seed: 5,
  },
  { name: 'model', label: '10 % of model calls throttled or timed out', modelFaultRate: 0.1, seed: 8 },
  { name: 'poison', label: 'one tool-call event always fails', poison: true, seed: 5 },
  {
    name: 'all',
    label: 'all of the above at once',
    delivery: { ...DUPLICATES, seed: 6 },
    crashRate: 0.1,
    modelFaultRate: 0.1,
    poison: true,
    seed: 6,
  },
];

/** What one run did and left. */
export interface RunOutcome {
  workload: string;
  scenario: Scenario;
  ms: number;
  conversation: string;
  answer: Message | undefined;
  /** The conversation and everything under it, sorted by URN. */
  resources: AnyResource[];
  /** Tasks without an output Message (must be none). */
  pending: string[];
  bus: {
    routed: number;
    invocations: number;
    failures: number;
    retries: number;
    duplicates: number;
    aborts: number;
  };
  injection: InjectionStats;
  model: ModelFaultStats;
  deadLetters: DeadLetter[];
  /** Failures of the dead-letter consumer itself (must be none). */
  deadLetterErrors: number;
  /** Live projections (from the store). */
  projections: Projection[];
  /** Differences between the store and a replay from storage (must be none). */
  replay: ProjectionDifference[];
  /** The poisoned event, when the scenario had one. */
  poison?: { target: string; urn: string };
}

/** A workload ready to run: its data directory template and model. */
export interface Workload {
  name: 'docs' | 'synthetic';
  /** What it is, for the table. */
  label: string;
  /** Copies the prepared data (ingested docs) into a fresh directory. */
  newDataDir(): Promise<string>;
  model(): ChatModel;
  question: string;
  /** Removes the template. */
  dispose(): Promise<void>;
}

/** The docs workload: ingests the READMEs once into a template directory. */
export async function docsWorkload(): Promise<Workload> {
  const template = await mkdtemp(join(tmpdir(), 'cld-faults-docs-'));
  const runtime = await createLocalRuntime({ dataDir: template });
  await ingest(DOCS, {
    resources: runtime.deps.resources,
    index: runtime.deps.search as MiniSearchIndex,
    actor: SYSTEM_ACTOR,
    cwd: process.cwd(),
  });
  await runtime.bus.idle();
  return {
    name: 'docs',
    label: 'issue 2 end-to-end question (offline model)',
    async newDataDir() {
      const dir = await mkdtemp(join(tmpdir(), 'cld-faults-run-'));
      await cp(template, dir, { recursive: true });
      return dir;
    },
    model: () => new OfflineChatModel(),
    question: QUESTION,
    dispose: () => rm(template, { recursive: true, force: true }),
  };
}

/** The synthetic workload: a scripted plan of `shape`. */
export function syntheticWorkload(shape: readonly number[]): Workload {
  return {
    name: 'synthetic',
    label: `synthetic plan, ${ScriptedModel.taskCount(shape)} tasks, depth ${shape.length} (scripted model)`,
    newDataDir: () => mkdtemp(join(tmpdir(), 'cld-faults-run-')),
    model: () => new ScriptedModel(shape),
    question: `Run the synthetic plan ${shape.join('x')}.`,
    dispose: async () => undefined,
  };
}

/**
 * Runs a workload under a scenario until the bus is idle and collects the outcome.
 * @param poison the event that always fails (from the reference run), for poison scenarios
 */
export async function runScenario(
  workload: Workload,
  scenario: Scenario,
  poison?: { target: string; urn: string },
  options: { tamper?: (store: ProjectionStore) => ProjectionStore } = {},
): Promise<RunOutcome> {
  const dataDir = await workload.newDataDir();
  const started = Date.now();
  const Injector = options.tamper ? tamperingInjector(options.tamper) : FaultInjector;
  const injector = new Injector({
    crashRate: scenario.crashRate ?? 0,
    ...(scenario.kinds ? { kinds: scenario.kinds } : {}),
    seed: scenario.seed,
    ...(scenario.poison && poison
      ? { poison: (target: string, urn: string) => target === poison.target && urn === poison.urn }
      : {}),
  });
  const model = new FaultyChatModel(workload.model(), {
    rate: scenario.modelFaultRate ?? 0,
    seed: scenario.seed,
  });
  const runtime = await createLocalRuntime({
    dataDir,
    model,
    injector,
    backoffMs: () => 5,
    ...(scenario.delivery ? { faults: scenario.delivery } : {}),
  });
  const conversationStarted = await startConversation(runtime.deps.resources, {
    user: 'cli:faults',
    channel: { kind: 'cli' },
    content: workload.question,
    conversationName: `faults-${workload.name}`,
  });
  await runtime.bus.idle();
  const ms = Date.now() - started;
  const conversation = conversationStarted.conversation;
  const root = await runtime.deps.resources.get(SYSTEM_ACTOR, conversation);
  const resources = [root, ...(await runtime.deps.resources.list(SYSTEM_ACTOR, conversation))].sort((a, b) =>
    a.meta.id < b.meta.id ? -1 : 1,
  );
  const ids = new Set(resources.map((r) => r.meta.id));
  const pending = resources
    .filter((r) => r.meta.type === 'plan.Task')
    .map((r) => r.meta.id)
    .filter((task) => !ids.has(outputUrnOf(task)));
  const projections = await runtime.projections.list(conversation);
  const replayed = foldCharges(conversation, chargesOf(conversation, resources));
  const outcome: RunOutcome = {
    workload: workload.name,
    scenario,
    ms,
    conversation,
    answer: resources.find((r) => r.meta.id === conversationStarted.answer) as Message | undefined,
    resources,
    pending,
    bus: {
      routed: runtime.bus.stats.routed,
      invocations: runtime.bus.stats.invocations,
      failures: runtime.bus.stats.failures,
      retries: runtime.bus.stats.retries,
      duplicates: runtime.bus.faultStats.duplicates,
      aborts: runtime.bus.faultStats.aborts,
    },
    injection: { ...injector.stats, crashes: { ...injector.stats.crashes } },
    model: { ...model.stats },
    deadLetters: [...runtime.bus.deadLetters],
    deadLetterErrors: runtime.bus.deadLetterErrors.length,
    projections,
    replay: diffProjections(projections, replayed),
    ...(scenario.poison && poison ? { poison } : {}),
  };
  await rm(dataDir, { recursive: true, force: true });
  return outcome;
}

/** A FaultInjector whose projection store the steps see is `tamper(store)` (negative controls). */
function tamperingInjector(tamper: (store: ProjectionStore) => ProjectionStore): typeof FaultInjector {
  return class extends FaultInjector {
    override wrapProjections(inner: ProjectionStore): ProjectionStore {
      return super.wrapProjections(tamper(inner));
    }
  };
}

/** The poison event of a workload: the first tool call (by URN) of its reference run. */
export function poisonOf(reference: RunOutcome): { target: string; urn: string } {
  const call = reference.resources.find((r) => r.meta.type === 'tool.Call');
  if (!call) throw new Error(`${reference.workload}: the reference run made no tool call to poison`);
  return { target: 'tool', urn: call.meta.id };
}

/**
 * What is wrong with `run` compared with `reference` (empty = the guarantees hold):
 * same answer, same resources, nothing pending, dead letters only for the poison (and the
 * poisoned task failed with DELIVERY_FAILED), no dead-letter consumer error, projections equal
 * to the replay.
 */
export function problemsOf(run: RunOutcome, reference: RunOutcome): string[] {
  const problems: string[] = [];
  if (!run.answer) problems.push('no final answer');
  else if (run.answer.content !== reference.answer?.content)
    problems.push('final answer differs from the reference');
  const want = new Map(reference.resources.map((r) => [r.meta.id, JSON.stringify(withoutTimestamps(r))]));
  const have = new Map(run.resources.map((r) => [r.meta.id, JSON.stringify(withoutTimestamps(r))]));
  const missing = [...want.keys()].filter((urn) => !have.has(urn));
  const extra = [...have.keys()].filter((urn) => !want.has(urn));
  if (missing.length) problems.push(`${missing.length} resource(s) missing, e.g. ${missing[0]}`);
  if (extra.length) problems.push(`${extra.length} extra resource(s), e.g. ${extra[0]}`);
  const changed = [...have.entries()].filter(([urn, json]) => want.has(urn) && want.get(urn) !== json);
  if (changed.length)
    problems.push(`${changed.length} resource(s) with other content, e.g. ${changed[0]?.[0]}`);
  if (run.pending.length) problems.push(`${run.pending.length} task(s) pending, e.g. ${run.pending[0]}`);
  const stray = run.deadLetters.filter(
    (l) => !run.poison || l.event.detail.object.key !== keyOf(run.poison.urn),
  );
  if (stray.length) problems.push(`${stray.length} unexpected dead letter(s): ${stray[0]?.error.message}`);
  if (run.poison) {
    if (run.deadLetters.length === 0) problems.push('the poison event was not dead-lettered');
    const task = parentOf(run.poison.urn) as string;
    const output = run.resources.find((r) => r.meta.id === outputUrnOf(task)) as Message | undefined;
    if (output?.error?.code !== 'DELIVERY_FAILED')
      problems.push(`the poisoned task has no DELIVERY_FAILED output (${output?.error?.code ?? 'none'})`);
    if (!toldParent(run, task)) problems.push('the poisoned task’s failure did not reach its parent');
  }
  if (run.deadLetterErrors) problems.push(`${run.deadLetterErrors} dead-letter consumer error(s)`);
  if (run.replay.length)
    problems.push(
      `projections differ from the replay: ${run.replay.map((d) => `${d.kind} ${d.name}`).join('; ')}`,
    );
  return problems;
}

/** What a poison run must end with, stated by the test (not taken from another faulty run). */
export interface PoisonExpectation {
  /**
   * `failed`: the failure reaches the user's answer; `partial`: it reaches the answer as a part
   * not answered, the parts that passed kept (issue 21); `answered`: a supervisor corrected it.
   */
  answer: 'failed' | 'partial' | 'answered';
}

/**
 * The task a dead-lettered event fails (shared/domain/dead-letter.ts), or undefined when the
 * event fails the request itself (a `plan` event: the user Message, whose whole subtree is then
 * the Plan with the error, or a root task's output, whose failure is the answer's).
 */
function failedScopeOf(poison: { target: string; urn: string }, clean: RunOutcome): string | undefined {
  const parent = parentOf(poison.urn) as string;
  const isTask = (urn: string) =>
    clean.resources.some((r) => r.meta.id === urn && r.meta.type === 'plan.Task');
  if (poison.target === 'plan') return isTask(parent) ? undefined : poison.urn;
  if (poison.target === 'tool') return parent;
  if (isTask(poison.urn)) return poison.urn;
  // A task's output fails its supervisor; any other message under a task fails that task.
  return outputUrnOf(parent) === poison.urn ? parentOf(parent) : parent;
}

/**
 * What is wrong with a poison run, checked against the clean run of the same workload (made
 * without any fault) and a hand-stated expectation — never against another poison run:
 * - every resource of the clean run that the failure cannot touch is in the run with the same
 *   content (apart from timestamps): everything but the failed task's subtree, the outputs,
 *   verdicts and corrective subtasks of the failed task's ancestors (and its own), and the answer;
 * - the run has no resource the clean run lacks outside those places;
 * - the failed task's output is a DELIVERY_FAILED error naming the event and the step (for a
 *   `plan` event, the answer names them), and its parent was told;
 * - the answer failed with that reason, or (`answered`) a supervisor corrected the failure;
 * - nothing pending, only the poison dead-lettered, no dead-letter consumer error, projections
 *   equal to the replay.
 * @throws Error when the run has no poison
 */
export function poisonProblems(run: RunOutcome, clean: RunOutcome, expected: PoisonExpectation): string[] {
  const poison = run.poison;
  if (!poison) throw new Error('poisonProblems needs a poison run');
  const problems: string[] = [];
  const failed = failedScopeOf(poison, clean);
  const reason = `event for ${poison.urn} failed 3 times in the ${poison.target} step`;
  // The failed task and its ancestor tasks: their outputs, verdicts and corrective rounds change.
  const affected = new Set<string>();
  for (let urn = failed; urn; urn = parentOf(urn)) affected.add(urn);
  const answerUrn = run.answer?.meta.id ?? clean.answer?.meta.id;
  const correctiveRoots = (resources: readonly AnyResource[]) =>
    resources
      .filter((r): r is Task => r.meta.type === 'plan.Task' && (r as Task).round > 0)
      .filter((t) => affected.has(parentOf(t.meta.id) as string))
      .map((t) => t.meta.id);
  const corrective = [...correctiveRoots(clean.resources), ...correctiveRoots(run.resources)];
  const touchable = (urn: string): boolean =>
    urn === answerUrn ||
    (failed !== undefined && urn.startsWith(`${failed}/`)) ||
    [...affected].some((task) => urn === outputUrnOf(task)) ||
    (typeOf(urn) === 'plan.Verdict' && affected.has(parentOf(urn) as string)) ||
    corrective.some((root) => urn === root || urn.startsWith(`${root}/`));

  const have = new Map(run.resources.map((r) => [r.meta.id, JSON.stringify(withoutTimestamps(r))]));
  const want = new Map(
    clean.resources
      .filter((r) => !touchable(r.meta.id))
      .map((r) => [r.meta.id, JSON.stringify(withoutTimestamps(r))]),
  );
  if (want.size < 2) problems.push('the clean run leaves nothing to compare');
  const missing = [...want.keys()].filter((urn) => !have.has(urn));
  if (missing.length) problems.push(`${missing.length} untouched resource(s) missing, e.g. ${missing[0]}`);
  const changed = [...want.entries()].filter(([urn, json]) => have.has(urn) && have.get(urn) !== json);
  if (changed.length)
    problems.push(`${changed.length} untouched resource(s) with other content, e.g. ${changed[0]?.[0]}`);
  const cleanIds = new Set(clean.resources.map((r) => r.meta.id));
  const stray = [...have.keys()].filter((urn) => !cleanIds.has(urn) && !touchable(urn));
  if (stray.length)
    problems.push(`${stray.length} resource(s) outside the reach of the failure, e.g. ${stray[0]}`);

  const failedTask = clean.resources.some((r) => r.meta.id === failed && r.meta.type === 'plan.Task');
  if (failed !== undefined && failedTask) {
    const output = run.resources.find((r) => r.meta.id === outputUrnOf(failed)) as Message | undefined;
    if (output?.error?.code !== 'DELIVERY_FAILED' || !output.error.message.includes(reason))
      problems.push(`the failed task's output is not DELIVERY_FAILED with "${reason}"`);
    // A root task's parent is the user Message: the answer (checked below) is what is told.
    const parent = parentOf(failed) as string;
    const parentIsTask = clean.resources.some((r) => r.meta.id === parent && r.meta.type === 'plan.Task');
    if (parentIsTask && !toldParent(run, failed)) problems.push('the failed task’s parent was not told');
  }
  if (!run.answer) problems.push('no final answer');
  else if (expected.answer === 'failed') {
    if (!run.answer.error) problems.push('the answer does not carry the failure');
    if (!run.answer.content.includes(reason)) problems.push(`the answer does not say "${reason}"`);
  } else if (expected.answer === 'partial') {
    if (run.answer.error) problems.push(`the answer failed: ${run.answer.error.message}`);
    if (!run.answer.unanswered?.some((p) => p.reason.includes(reason)))
      problems.push(`the answer does not name a part not answered because "${reason}"`);
    if (!run.answer.content.includes(reason)) problems.push(`the answer does not say "${reason}"`);
  } else {
    if (run.answer.error) problems.push(`the answer failed: ${run.answer.error.message}`);
    if (run.answer.content.length === 0) problems.push('the answer is empty');
  }

  if (run.pending.length) problems.push(`${run.pending.length} task(s) pending, e.g. ${run.pending[0]}`);
  const letters = run.deadLetters.filter((l) => l.event.detail.object.key === keyOf(poison.urn));
  if (letters.length === 0) problems.push('the poison event was not dead-lettered');
  if (letters.length < run.deadLetters.length)
    problems.push(`${run.deadLetters.length - letters.length} unexpected dead letter(s)`);
  if (run.deadLetterErrors) problems.push(`${run.deadLetterErrors} dead-letter consumer error(s)`);
  if (run.replay.length)
    problems.push(
      `projections differ from the replay: ${run.replay.map((d) => `${d.kind} ${d.name}`).join('; ')}`,
    );
  return problems;
}

/** True when the failed task's parent judged it failed (a verdict) or failed with its reason. */
function toldParent(run: RunOutcome, task: string): boolean {
  const parent = parentOf(task) as string;
  const verdicts = run.resources.filter(
    (r): r is Verdict => r.meta.type === 'plan.Verdict' && parentOf(r.meta.id) === parent,
  );
  if (verdicts.some((v) => v.subtasks.some((s) => s.urn === task && !s.pass))) return true;
  const output = run.resources.find((r) => r.meta.id === outputUrnOf(parent)) as Message | undefined;
  return output?.error?.message.includes('failed 3 times') ?? false;
}

/** The reference runs of a workload: clean, and poison only (what poison scenarios are compared with). */
export async function referenceRuns(
  workload: Workload,
): Promise<{ clean: RunOutcome; poisoned: RunOutcome }> {
  const clean = await runScenario(workload, SCENARIOS[0] as Scenario);
  const poison = poisonOf(clean);
  const poisoned = await runScenario(
    workload,
    SCENARIOS.find((s) => s.name === 'poison') as Scenario,
    poison,
  );
  return { clean, poisoned };
}

/** Total crashes injected in a run. */
export function crashesOf(run: RunOutcome): number {
  return Object.values(run.injection.crashes).reduce((a, b) => a + b, 0);
}

/** One markdown table row per run. */
export function tableOf(
  runs: readonly { run: RunOutcome; reference: RunOutcome; problems: string[] }[],
): string {
  const header =
    '| workload | scenario | events delivered | duplicates injected | crashes injected (aborts) | model faults | resource writes | final resources vs reference | dead letters | projections = replay | time |';
  const rule = '|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|';
  const rows = runs.map(({ run, reference, problems }) => {
    const tasks = run.resources.filter((r): r is Task => r.meta.type === 'plan.Task').length;
    return `| ${run.workload} (${tasks} tasks) | ${run.scenario.name}: ${run.scenario.label} | ${run.bus.routed.toLocaleString('en-US')} | ${run.bus.duplicates.toLocaleString('en-US')} | ${crashesOf(run)} (${run.injection.aborts}) | ${run.model.throttled + run.model.timedOut} | ${run.injection.resourceWrites.toLocaleString('en-US')} | ${run.resources.length} vs ${reference.resources.length}${problems.length ? ` ✗ ${problems.join('; ')}` : ' ✓'} | ${run.deadLetters.length} | ${run.replay.length === 0 ? 'yes' : 'no'} | ${(run.ms / 1000).toFixed(1)} s |`;
  });
  return [header, rule, ...rows].join('\n');
}
