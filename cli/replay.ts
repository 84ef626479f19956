import { parseArgs } from 'node:util';
import { InvalidUrnError, ValidationError } from '../shared/errors.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import { describe, replayConversation } from '../shared/projections/replay.js';
import { modelFor } from '../shared/runtime/adapters/model.js';
import { createLocalRuntime } from '../shared/runtime/local.js';
import { EXIT } from './errors.js';
import { conversationUrnProblem } from './resources.js';
import type { CliSettings } from './settings.js';

/**
 * `cld replay <conversation-urn> [--rebuild]` (issue 5): recomputes the conversation's projections
 * (round counters, budget) from the stored resources alone and prints each one with its
 * difference from the projection store. Exit code (cli/errors.ts EXIT) 0 when they are equal
 * (after `--rebuild`: when the rebuilt store equals the replay), 1 when they differ, 2 on bad
 * input (usage, a malformed URN or one that is not a conversation's), 3 when no conversation is
 * stored at the URN. Runs on the embedded default's data directory, like the other commands.
 */
export async function replayCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  let positionals: string[];
  let rebuild: boolean;
  try {
    const parsed = parseArgs({ args, allowPositionals: true, options: { rebuild: { type: 'boolean' } } });
    positionals = parsed.positionals;
    rebuild = parsed.values.rebuild === true;
  } catch (error) {
    return badInput((error as Error).message);
  }
  if (positionals.length !== 1) return badInput('replay needs exactly one conversation URN');
  const conversation = positionals[0] as string;
  const problem = conversationUrnProblem(conversation);
  if (problem) return badInput(problem);
  const runtime = await createLocalRuntime({
    dataDir,
    model: modelFor(settings.env),
    limits: settings.limits,
  });
  if (!(await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Conversation', conversation))) {
    console.error(`cld: no conversation stored at ${conversation}`);
    return EXIT.NOT_FOUND;
  }
  let report: Awaited<ReturnType<typeof replayConversation>>;
  try {
    report = await replayConversation(
      runtime.deps.resources,
      runtime.projections,
      SYSTEM_ACTOR,
      conversation,
      {
        rebuild,
      },
    );
  } catch (error) {
    if (error instanceof ValidationError || error instanceof InvalidUrnError) return badInput(error.message);
    throw error;
  }
  const differing = new Set(report.differences.map((d) => d.name));
  console.log(
    `replay ${conversation}: ${report.resources} resources → ${report.replayed.length} projections (store: ${report.stored.length})`,
  );
  const width = Math.max(0, ...report.replayed.map((p) => p.name.length));
  for (const projection of report.replayed)
    console.log(
      `  ${differing.has(projection.name) ? '≠' : '='} ${projection.name.padEnd(width)}  ${describe(projection)}`,
    );
  for (const difference of report.differences)
    console.log(`  ${difference.kind}: ${difference.name}: ${difference.detail}`);
  if (report.rebuilt !== undefined) {
    const after = await replayConversation(
      runtime.deps.resources,
      runtime.projections,
      SYSTEM_ACTOR,
      conversation,
    );
    console.log(
      `rebuilt ${report.rebuilt} projections from storage; ${after.differences.length === 0 ? 'the store now equals the replay' : `${after.differences.length} difference(s) remain`}`,
    );
    return after.differences.length === 0 ? 0 : 1;
  }
  console.log(
    report.differences.length === 0
      ? 'projections equal the replay from storage'
      : `${report.differences.length} difference(s) between the projection store and the replay (--rebuild rewrites the store)`,
  );
  return report.differences.length === 0 ? 0 : 1;
}

function badInput(message: string): number {
  console.error(`cld: ${message}\nusage: cld replay <conversation-urn> [--rebuild]`);
  return EXIT.USAGE;
}
