import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import logUpdate from 'log-update';
import { approvalsOf, decideApproval } from '../shared/domain/approval.js';
import { NAMES } from '../shared/domain/common.js';
import { addUserMessage, type StartedConversation } from '../shared/domain/conversation.js';
import { outcomeOf } from '../shared/domain/outcome.js';
import { conversationProgress } from '../shared/domain/progress.js';
import { isEnded } from '../shared/domain/turn.js';
import { NotFoundError, ValidationError } from '../shared/errors.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import type { ResourceIndex } from '../shared/resources/resource-index.js';
import type { AnyResource, Conversation, Message } from '../shared/resources/schemas.js';
import { embedderFor, modelFor } from '../shared/runtime/adapters/model.js';
import { mcpFor } from '../shared/runtime/adapters/tools.js';
import { createLocalRuntime, type LocalRuntime } from '../shared/runtime/local.js';
import { resumeLocal, settleLocal } from '../shared/runtime/local-recovery.js';
import type { MiniSearchIndex } from '../shared/search/minisearch-index.js';
import { childUrn, isWithin } from '../shared/urn.js';
import { answerForTerminal } from './answer.js';
import { approvalLines, cliUser, decideLines } from './approvals.js';
import { CliFailure, EXIT } from './errors.js';
import { readMessage } from './message.js';
import { conversationUrnProblem, runIngest, subtree } from './resources.js';
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
 * `cld ask [--docs <dir>]... [--conversation <urn-or-name> [--new]] [--file <path> | - | "<message>"]`:
 * ingests `--docs`, adds the message to the conversation (a new one; the one whose URN the CLI
 * printed; or the named one, which must exist unless `--new`) under its next free `message-<n>`,
 * runs the embedded default until the bus is idle, and prints the answer.
 *
 * Output: on a terminal the task tree redrawn live; piped, one line per new resource in causal
 * order (creation time, then parent before child, call before result). Then the answer, its
 * sources once (those the answer text does not list already), the conversation URN, the
 * `continue with:` line and counts. A tool call waiting for approval is shown (tool, input, asking
 * task, request URN): on a terminal the user decides y/N (shared/domain/approval.ts
 * `decideApproval`) and the run goes on; piped, exit code 5 (EXIT.APPROVAL_NEEDED) with the
 * `cld approvals approve|deny` lines. An unanswered message of the user's other open
 * conversations (an interrupted `ask`) is offered y/N on a terminal, named with its `cld resume`
 * line when piped; one of the conversation named is picked up (the same message again: its
 * answer, no duplicate). Ctrl-C (SIGINT) stops the run at once with exit code
 * {@link INTERRUPTED_EXIT_CODE}; what was stored stays. Exit 1 when no answer came or the answer
 * carries an error; {@link PARTIAL_EXIT_CODE} (4) when the answer is partial (some parts not answered).
 * @throws UsageError, ValidationError, LimitExceededError (see readMessage), CliFailure;
 *   NotFoundError (exit 3) for a conversation URN or name (without `--new`) not stored
 */
export async function askCommand(args: string[], dataDir: string, settings: CliSettings): Promise<number> {
  const { env } = settings;
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      docs: { type: 'string', multiple: true },
      conversation: { type: 'string' },
      new: { type: 'boolean' },
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
  const conversationName = await conversationNameOf(
    runtime.deps.resources,
    values.conversation,
    values.new === true,
  );
  if (values.docs?.length) {
    await runIngest(runtime.deps, values.docs);
    await runtime.bus.idle();
  } else if ((runtime.deps.search as MiniSearchIndex).size === 0) {
    throw new ValidationError('nothing has been ingested yet: pass --docs <folder>');
  }
  // What an earlier, interrupted run of this user left unanswered (issue 23): the conversation
  // named with --conversation is picked up; any other is offered, not resumed behind the user's
  // back — on a terminal y/N, then its answer; piped, the `cld resume` line.
  const named = values.conversation === undefined ? undefined : conversationUrnOf(conversationName);
  const print = (line: string) => console.log(line);
  const offered = (await unfinishedOf(runtime, cliUser())).filter((turn) => turn.conversation !== named);
  const resumed = (await runtime.openConversations.list())
    .map((open) => open.conversation)
    .filter((urn) => !offered.some((turn) => turn.conversation === urn));
  await resumeLocal(runtime, { dataDir, conversations: resumed, print });
  const repeated = named ? await unfinishedTurn(runtime, named, content) : undefined;
  if (repeated) return showResumed(runtime, repeated, started);
  for (const turn of offered) {
    if (turn.waitsForApproval) {
      console.log(
        `conversation ${turn.conversation} waits for your approval of a tool call: cld approvals list ${turn.conversation}`,
      );
      continue;
    }
    const line = `conversation ${turn.conversation} was interrupted before its answer to "${turn.content.slice(0, 80)}"`;
    if (!interactive()) {
      console.log(`${line}; to finish it: cld resume ${turn.conversation}`);
      continue;
    }
    if (!(await confirm(`${line}. Resume it? [y/N] `))) continue;
    await resumeLocal(runtime, { dataDir, conversations: [turn.conversation], print });
    // The same question again: its answer is the one to show, not a duplicate's.
    if (turn.content === content) return showResumed(runtime, turn, started);
    await settleLocal(runtime, { conversations: [turn.conversation] });
    console.log(`answered: cld show ${turn.conversation}`);
  }

  const askStarted = Date.now();
  const routedBefore = runtime.bus.stats.routed;
  const asked = await addUserMessage(
    runtime.deps.resources,
    {
      user: cliUser(),
      channel: { kind: 'cli' },
      content,
      conversationName,
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
  let resources: AnyResource[];
  let answer: Message | undefined;
  for (;;) {
    const timer = setInterval(() => void render().catch(() => undefined), tty ? 150 : 250);
    // Idle with a message unanswered means work was lost (an earlier run's events): re-drive it.
    await settleLocal(runtime, { conversations: [asked.conversation] });
    clearInterval(timer);
    resources = await render();
    if (tty) logUpdate.done();
    answer = resources.find((r) => r.meta.id === asked.answer) as Message | undefined;
    if (answer) break;
    // No answer: a tool call that needs approval may be what it waits for (issue 23).
    const waiting = approvalsOf(resources, new Date()).filter((view) => view.status === 'pending');
    if (waiting.length === 0) break;
    for (const view of waiting) console.log(approvalLines(view).join('\n'));
    if (!interactive()) {
      process.removeListener('SIGINT', stopOnInterrupt);
      for (const view of waiting) console.log(decideLines(view.urn).join('\n'));
      console.log(`conversation: ${asked.conversation}`);
      console.error(`cld: waiting for approval of ${waiting.length} tool call(s): decide with cld approvals`);
      return EXIT.APPROVAL_NEEDED;
    }
    const conversation = resources.find((r) => r.meta.id === asked.conversation) as Conversation;
    for (const view of waiting) {
      const approve = await confirm(`approve ${view.tool}? [y/N] `);
      await decideApproval(runtime.deps.resources, {
        user: cliUser(),
        channel: 'cli',
        conversation,
        request: view.urn,
        decision: approve ? 'approve' : 'deny',
        now: new Date(),
      });
    }
  }
  process.removeListener('SIGINT', stopOnInterrupt);

  const letters = runtime.bus.deadLetters;
  const letter = letters[0];
  if (letter)
    console.error(
      `dead-lettered: ${letter.target} ${letter.event.detail.object.key}: ${letter.error.message}`,
    );
  if (!answer)
    throw new CliFailure(`no answer was produced for ${asked.message} (${letters.length} dead letters)`);
  console.log(`\n${answerForTerminal(answer)}\n`);
  console.log(`conversation: ${asked.conversation} (${asked.messageName})`);
  console.log(`continue with: ${invocation()} ask --conversation ${asked.conversation} "…"`);
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

/** True when the user can answer a question: standard input and output are terminals. */
function interactive(): boolean {
  return process.stdin.isTTY === true && process.stdout.isTTY === true;
}

/** Asks a y/N question on the terminal; true only for an answer starting with y or Y. */
async function confirm(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y/i.test((await terminal.question(question)).trim());
  } finally {
    terminal.close();
  }
}

/**
 * The conversation name `ask` adds the message to (issue 23): a new random one without
 * `--conversation`; for a conversation URN (what the CLI prints), the stored conversation's name;
 * for a name, that name — when it exists, or with `--new`.
 * @throws ValidationError for a URN that is not a conversation's; NotFoundError (exit code 3) for
 *   a URN with no conversation stored, or a name without one and without `--new`
 */
export async function conversationNameOf(
  resources: ResourceIndex,
  given: string | undefined,
  allowNew: boolean,
): Promise<string> {
  if (given === undefined) return crypto.randomUUID();
  if (given.startsWith('cld:')) {
    const problem = conversationUrnProblem(given);
    if (problem) throw new ValidationError(problem);
    const stored = await resources.find(SYSTEM_ACTOR, 'common.Conversation', given);
    if (!stored)
      throw new NotFoundError(
        `no conversation stored at ${given}; to start one, give a name: --conversation <name> --new`,
      );
    return stored.meta.name;
  }
  const urn = childUrn(undefined, 'common.Conversation', given);
  if (!allowNew && !(await resources.find(SYSTEM_ACTOR, 'common.Conversation', urn)))
    throw new NotFoundError(`no conversation named "${given}" (${urn}); add --new to start it`);
  return given;
}

/** URN of the conversation named `name` (shared/resources/meta.ts: parent + type + name). */
function conversationUrnOf(name: string): string {
  return childUrn(undefined, 'common.Conversation', name);
}

/** The unanswered user message of `conversation` whose text is `content`, if there is one. */
async function unfinishedTurn(
  runtime: LocalRuntime,
  conversation: string,
  content: string,
): Promise<UnfinishedTurn | undefined> {
  return (await unfinishedOf(runtime, cliUser(), [conversation])).find((turn) => turn.content === content);
}

/**
 * Runs a resumed message's work to the end and prints its answer as a new one's is printed.
 * @returns exit code 0 (cli/errors.ts EXIT)
 * @throws CliFailure when there is still no answer, or the answer carries an error
 */
async function showResumed(runtime: LocalRuntime, turn: UnfinishedTurn, started: number): Promise<number> {
  await settleLocal(runtime, { conversations: [turn.conversation] });
  const answer = await runtime.deps.resources.find(SYSTEM_ACTOR, 'common.Message', turn.answer);
  if (!answer)
    throw new CliFailure(`no answer was produced for ${turn.message}: cld show ${turn.conversation}`);
  console.log(`\n${answer.content}\n`);
  console.log(`conversation: ${turn.conversation} (resumed)`);
  console.log(`continue with: ${invocation()} ask --conversation ${turn.conversation} "…"`);
  console.log(`total ${((Date.now() - started) / 1000).toFixed(2)} s`);
  if (answer.error) throw new CliFailure(`the request failed: ${answer.error.message}`);
  return EXIT.OK;
}

/** A user message of an open conversation that has no answer yet. */
interface UnfinishedTurn {
  conversation: string;
  /** URN of the user message. */
  message: string;
  content: string;
  /** URN of the answer it waits for. */
  answer: string;
  /** True when it waits for the user's decision on an approval request (nothing to resume). */
  waitsForApproval: boolean;
}

/**
 * The unanswered messages of `user`'s open conversations (the open-conversations projection), or
 * of `conversations`, newest first: what an interrupted `ask` left (or one waiting for an approval).
 */
async function unfinishedOf(
  runtime: LocalRuntime,
  user: string,
  conversations?: readonly string[],
): Promise<UnfinishedTurn[]> {
  const { resources } = runtime.deps;
  const turns: (UnfinishedTurn & { at: string })[] = [];
  const urns = conversations ?? (await runtime.openConversations.list()).map((open) => open.conversation);
  for (const conversation of urns) {
    const open = { conversation };
    const root = (await resources.find(SYSTEM_ACTOR, 'common.Conversation', open.conversation)) as
      | Conversation
      | undefined;
    if (root?.actor !== user) continue;
    const below = await resources.list(SYSTEM_ACTOR, open.conversation);
    const progress = conversationProgress(open.conversation, [root, ...below], { now: new Date() });
    for (const turn of progress.turns) {
      if (isEnded(turn.status)) continue;
      const message = below.find((r) => r.meta.id === turn.message) as Message | undefined;
      if (!message) continue;
      turns.push({
        conversation: open.conversation,
        message: message.meta.id,
        content: message.content,
        waitsForApproval: turn.waitingFor.some((line) => line.startsWith("the user's approval")),
        answer: childUrn(open.conversation, 'common.Message', NAMES.answer(message.meta.id)),
        at: message.meta.createdAt ?? '',
      });
    }
  }
  return turns.sort((a, b) => b.at.localeCompare(a.at));
}

/** The conversation itself, this message's subtree and its answer: not earlier messages of the conversation. */
function ofThisMessage(resources: readonly AnyResource[], asked: StartedConversation): AnyResource[] {
  return resources.filter(
    (r) =>
      r.meta.id === asked.conversation || r.meta.id === asked.answer || isWithin(r.meta.id, asked.message),
  );
}

/**
 * How the user ran `cld`, for the commands it suggests: `npm start --` under `npm start` (the
 * README's way), `npx cld` under `npx`, else `cld` (the installed bin).
 */
export function invocation(env: NodeJS.ProcessEnv = process.env): string {
  if (env.npm_lifecycle_event === 'start') return 'npm start --';
  if (env.npm_command === 'exec') return 'npx cld';
  return 'cld';
}
