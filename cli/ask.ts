import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import logUpdate from 'log-update';
import { outcomeOf } from '../shared/domain/outcome.js';
import { ValidationError } from '../shared/errors.js';
import type { AnyResource, Message } from '../shared/resources/schemas.js';
import { embedderFor, mcpFor, modelFor } from '../shared/runtime/compose.js';
import { addUserMessage, type StartedConversation } from '../shared/runtime/conversation.js';
import { createLocalRuntime } from '../shared/runtime/local.js';
import { resumeLocal, settleLocal } from '../shared/runtime/local-recovery.js';
import type { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { isWithin } from '../shared/urn.js';
import { CliFailure, EXIT } from './errors.js';
import { readMessage } from './message.js';
import { runIngest, subtree } from './resources.js';
import type { CliSettings } from './settings.js';
import { causalOrder, describeNew, renderTree } from './tree.js';

/** Exit code of a run stopped by SIGINT (128 + signal 2), as shells report it. */
export const INTERRUPTED_EXIT_CODE = 130;

/**
 * Exit code of an answer that is partial (shared/domain/outcome.ts): printed in full, some parts
 * answered and the others named under "Not answered:" with why (cli/errors.ts `EXIT.PARTIAL`).
 */
export const PARTIAL_EXIT_CODE = EXIT.PARTIAL;

/**
 * `cld ask [--docs <dir>]... [--conversation <name>] [--file <path> | - | "<message>"]`: ingests
 * `--docs`, adds the message to the conversation (a new one, or the named one under its next
 * free `message-<n>`), runs the embedded default until the bus is idle, and prints the answer.
 *
 * Output: on a terminal the task tree redrawn live; piped, one line per new resource in causal
 * order (creation time, then parent before child, call before result). Then the answer, its
 * sources once (those the answer text does not list already), the conversation URN and counts.
 * Ctrl-C (SIGINT) stops the run at once with exit code {@link INTERRUPTED_EXIT_CODE}; what was
 * stored stays. Exit 1 when no answer came or the answer carries an error;
 * {@link PARTIAL_EXIT_CODE} (4) when the answer is partial (some parts not answered).
 * @throws UsageError, ValidationError, LimitExceededError (see readMessage), CliFailure
 */
export async function askCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  const { env } = settings;
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      docs: { type: 'string', multiple: true },
      conversation: { type: 'string' },
      file: { type: 'string' },
    },
  });
  const content = await readMessage({ positionals, file: values.file });
  const started = Date.now();
  const model = modelFor(env);
  const mcp = await mcpFor(env);
  const runtime = await createLocalRuntime({
    dataDir,
    model,
    embedder: await embedderFor(env),
    // CLD_LIMITS and CLD_TOOL_APPROVAL, as serve and the functions apply them (issue 23).
    limits: settings.limits,
    toolApproval: settings.toolApproval,
    ...(mcp ? { mcp } : {}),
  });
  console.log(`model: ${model.name}   data: ${dataDir}`);
  if (values.docs?.length) {
    await runIngest(runtime.deps, values.docs);
    await runtime.bus.idle();
  } else if ((runtime.deps.search as MiniSearchIndex).size === 0) {
    throw new ValidationError('nothing has been ingested yet: pass --docs <folder>');
  }
  // What an earlier, interrupted run left pending (an interrupted message of this conversation too).
  await resumeLocal(runtime, { dataDir, print: (line) => console.log(line) });

  const askStarted = Date.now();
  const routedBefore = runtime.bus.stats.routed;
  const asked = await addUserMessage(
    runtime.deps.resources,
    {
      user: `cli:${userInfo().username}`,
      channel: { kind: 'cli' },
      content,
      conversationName: values.conversation ?? crypto.randomUUID(),
    },
    { openConversations: runtime.openConversations },
  );
  const stopOnInterrupt = () => {
    if (process.stdout.isTTY) logUpdate.done();
    console.error(`cld: interrupted; what was stored so far stays under ${asked.conversation}`);
    process.exit(INTERRUPTED_EXIT_CODE);
  };
  process.once('SIGINT', stopOnInterrupt);

  const tty = process.stdout.isTTY === true;
  const printed = new Set<string>();
  const render = async () => {
    const resources = ofThisMessage(await subtree(runtime, asked.conversation), asked);
    if (tty) logUpdate(renderTree(resources, asked.conversation).join('\n'));
    else
      for (const resource of causalOrder(resources.filter((r) => !printed.has(r.meta.id)))) {
        printed.add(resource.meta.id);
        console.log(describeNew(resource, resources));
      }
    return resources;
  };
  const timer = setInterval(() => void render().catch(() => undefined), tty ? 150 : 250);
  // Idle with a message unanswered means work was lost (an earlier run's events): re-drive it.
  await settleLocal(runtime, { conversations: [asked.conversation] });
  clearInterval(timer);
  const resources = await render();
  if (tty) logUpdate.done();
  process.removeListener('SIGINT', stopOnInterrupt);

  const answer = resources.find((r) => r.meta.id === asked.answer) as Message | undefined;
  const letters = runtime.bus.deadLetters;
  const letter = letters[0];
  if (letter)
    console.error(
      `dead-lettered: ${letter.target} ${letter.event.detail.object.key}: ${letter.error.message}`,
    );
  if (!answer)
    throw new CliFailure(`no answer was produced for ${asked.message} (${letters.length} dead letters)`);
  console.log(`\n${answer.content}\n`);
  const unlisted = (answer.citations ?? []).filter((urn) => !answer.content.includes(urn));
  if (unlisted.length) console.log(`Sources:\n${unlisted.map((urn) => `- ${urn}`).join('\n')}\n`);
  console.log(`conversation: ${asked.conversation} (${asked.messageName})`);
  console.log(
    `${resources.length} resources, ${runtime.bus.stats.routed - routedBefore} events routed, ask ${((Date.now() - askStarted) / 1000).toFixed(2)} s (total ${((Date.now() - started) / 1000).toFixed(2)} s)`,
  );
  if (answer.error) throw new CliFailure(`the request failed: ${answer.error.message}`);
  if (outcomeOf(answer) === 'partial') {
    const titles = (answer.unanswered ?? []).map((p) => p.title).join('; ');
    console.error(`cld: partial answer: not answered: ${titles}`);
    return PARTIAL_EXIT_CODE;
  }
  return 0;
}

/** The conversation itself, this message's subtree and its answer: not earlier messages of the conversation. */
function ofThisMessage(resources: readonly AnyResource[], asked: StartedConversation): AnyResource[] {
  return resources.filter(
    (r) =>
      r.meta.id === asked.conversation || r.meta.id === asked.answer || isWithin(r.meta.id, asked.message),
  );
}
