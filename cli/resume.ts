import { parseArgs } from 'node:util';
import { conversationProgress } from '../shared/domain/progress.js';
import { sweeperActor } from '../shared/domain/sweep.js';
import { isEnded } from '../shared/domain/turn.js';
import { modelFor } from '../shared/runtime/adapters/model.js';
import { createLocalRuntime } from '../shared/runtime/local.js';
import { resumeLocal, settleLocal } from '../shared/runtime/local-recovery.js';
import { EXIT } from './errors.js';
import { conversationUrnProblem } from './resources.js';
import type { CliSettings } from './settings.js';

/**
 * `cld resume [<conversation-urn>]` (issue 12): picks up what an interrupted run left pending —
 * removes temporary files of interrupted writes, repairs the projections and re-emits
 * `RESOURCE_PUT` for every resource of an unfinished message whose effect is missing
 * (shared/domain/sweep.ts) — for every open conversation, or the one named; then runs the work to
 * the end and prints each conversation's status. Runs with `CLD_LIMITS` and `CLD_TOOL_APPROVAL`
 * as `ask` does. Exit code (cli/errors.ts EXIT) 0 when every resumed message is answered (a
 * partial answer or one with an error included), 1 when one is still open, 2 on bad input, 3 when the named
 * conversation is not stored.
 */
export async function resumeCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  let positionals: string[];
  try {
    positionals = parseArgs({ args, allowPositionals: true, options: {} }).positionals;
  } catch (error) {
    return badInput((error as Error).message);
  }
  if (positionals.length > 1) return badInput('resume takes at most one conversation URN');
  const conversation = positionals[0];
  if (conversation !== undefined) {
    const problem = conversationUrnProblem(conversation);
    if (problem) return badInput(problem);
  }
  const started = Date.now();
  const runtime = await createLocalRuntime({
    dataDir,
    model: modelFor(settings.env),
    limits: settings.limits,
    toolApproval: settings.toolApproval,
  });
  if (
    conversation !== undefined &&
    !(await runtime.deps.resources.find(sweeperActor(conversation), 'common.Conversation', conversation))
  ) {
    console.error(`cld: no conversation stored at ${conversation}`);
    return EXIT.NOT_FOUND;
  }
  const report = await resumeLocal(runtime, {
    dataDir,
    ...(conversation ? { conversations: [conversation] } : {}),
    print: (line) => console.log(line),
  });
  if (report.outcomes.length === 0) {
    console.log('nothing to resume: no open conversation');
    return EXIT.OK;
  }
  await settleLocal(runtime, {
    conversations: report.outcomes.map((o) => o.conversation),
    print: (line) => console.log(line),
  });
  let open = 0;
  for (const outcome of report.outcomes) {
    if (outcome.action === 'missing') continue;
    const { resources } = runtime.deps;
    const actor = sweeperActor(outcome.conversation);
    const root = await resources.find(actor, 'common.Conversation', outcome.conversation);
    const below = await resources.list(actor, outcome.conversation);
    const progress = conversationProgress(outcome.conversation, root ? [root, ...below] : below, {
      now: new Date(),
    });
    const unanswered = progress.turns.filter((t) => !isEnded(t.status));
    open += unanswered.length;
    console.log(
      `${outcome.conversation}: ${progress.status}${unanswered.length ? ` (waiting for ${unanswered.flatMap((t) => t.waitingFor).join('; ')})` : ''}`,
    );
  }
  console.log(
    `resumed ${report.outcomes.length} conversation(s) in ${((Date.now() - started) / 1000).toFixed(1)} s; ${open} message(s) still open`,
  );
  return open === 0 ? EXIT.OK : EXIT.FAILED;
}

function badInput(message: string): number {
  console.error(`cld: ${message}\nusage: cld resume [<conversation-urn>]`);
  return EXIT.USAGE;
}
