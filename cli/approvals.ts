import { userInfo } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type ApprovalView, approvalsOf, decideApproval } from '../shared/domain/approval.js';
import { NotFoundError } from '../shared/errors.js';
import { SYSTEM_ACTOR } from '../shared/policy/port.js';
import type { ResourceIndex } from '../shared/resources/resource-index.js';
import type { Conversation } from '../shared/resources/schemas.js';
import { FilesystemStorage } from '../shared/storage/filesystem.js';
import { parseUrn, rootOf, urnOfKey } from '../shared/urn.js';
import { UsageError } from './errors.js';
import type { CliSettings } from './settings.js';
import { readOnlyResources, subtreeOf } from './subtree.js';

/** The CLI's user id: the `actor` of the conversations `cld ask` starts. */
export function cliUser(): string {
  return `cli:${userInfo().username}`;
}

/** The lines that show one approval request: what waits, for which task, and how to decide. */
export function approvalLines(view: ApprovalView): string[] {
  return [
    `approval ${view.status}: ${view.tool} ${JSON.stringify(view.input)}`,
    `  asked by task: ${view.task}`,
    `  request: ${view.urn}`,
    ...(view.status === 'pending' ? [`  expires: ${view.expiresAt}`] : []),
  ];
}

/** The commands that decide a pending request, as printed for a user without a terminal. */
export function decideLines(urn: string): string[] {
  return [`  approve: cld approvals approve ${urn}`, `  deny:    cld approvals deny ${urn}`];
}

/** The approval requests under the stored conversations (or `conversation`), newest first. */
export async function listApprovals(
  resources: ResourceIndex,
  dataDir: string,
  conversation?: string,
): Promise<ApprovalView[]> {
  const conversations = conversation ? [conversation] : await storedConversations(dataDir);
  const now = new Date();
  const views: ApprovalView[] = [];
  for (const urn of conversations) views.push(...approvalsOf(await subtreeOf(resources, urn), now));
  return views;
}

/** URNs of the conversations stored under `dataDir` (a listing of `cld/` without recursion). */
async function storedConversations(dataDir: string): Promise<string[]> {
  const keys = await new FilesystemStorage(join(dataDir, 'resources')).findByPrefix(
    'cld/common.Conversation.',
    {
      delimiter: '/',
    },
  );
  return keys.map(urnOfKey).filter((urn): urn is string => urn !== undefined);
}

/**
 * `cld approvals list [--all] [<conversation-urn>]` and `cld approvals approve|deny <request-urn>
 * [--reason <text>]` (issue 23): the approval requests of tool calls that need approval
 * (shared/domain/approval.ts) — `list` shows the pending ones (`--all`: decided and expired too)
 * with tool, input, asking task and request URN; `approve`/`deny` records the decision of the
 * CLI's user (`cli:<login>`, the user of the conversations `cld ask` starts) through
 * {@link decideApproval}, the function the HTTP route, Slack and Teams use, then runs the
 * conversation's work to the end and prints its answer.
 * Exit codes (cli/errors.ts EXIT): 0 done; 1 the decision was refused (expired, decided
 * otherwise, message ended); 2 bad usage; 3 no such request in one of the user's conversations.
 * @throws UsageError, InvalidUrnError, NotFoundError, ApprovalExpiredError, ApprovalDecidedError,
 *   MessageEndedError
 */
export async function approvalsCommand(
  args: string[],
  dataDir: string,
  settings: CliSettings,
): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { reason: { type: 'string' }, all: { type: 'boolean' } },
  });
  if (sub === 'list') {
    if (positionals.length > 1) throw new UsageError('approvals list takes at most one conversation URN');
    const conversation = positionals[0];
    if (conversation !== undefined) parseUrn(conversation);
    const views = (await listApprovals(readOnlyResources(dataDir), dataDir, conversation)).filter(
      (view) => values.all || view.status === 'pending',
    );
    if (views.length === 0) console.log(values.all ? 'no approval requests' : 'no approval is waiting');
    for (const view of views)
      console.log(
        [...approvalLines(view), ...(view.status === 'pending' ? decideLines(view.urn) : [])].join('\n'),
      );
    return 0;
  }
  if (sub !== 'approve' && sub !== 'deny') throw new UsageError('approvals needs list, approve or deny');
  if (positionals.length !== 1) throw new UsageError(`approvals ${sub} needs exactly one request URN`);
  const request = positionals[0] as string;
  const conversationUrn = rootOf(parseUrn(request).urn);
  const [{ createLocalRuntime }, { settleLocal }, { modelFor, embedderFor }] = await Promise.all([
    import('../shared/runtime/local.js'),
    import('../shared/runtime/local-recovery.js'),
    import('../shared/runtime/adapters/model.js'),
  ]);
  const runtime = await createLocalRuntime({
    dataDir,
    model: modelFor(settings.env),
    embedder: await embedderFor(settings.env),
    limits: settings.limits,
    toolApproval: settings.toolApproval,
  });
  const conversation = (await runtime.deps.resources.find(
    SYSTEM_ACTOR,
    'common.Conversation',
    conversationUrn,
  )) as Conversation | undefined;
  if (!conversation) throw new NotFoundError(`no approval request stored at ${request}`);
  const { view, created } = await decideApproval(runtime.deps.resources, {
    user: cliUser(),
    channel: 'cli',
    conversation,
    request,
    decision: sub === 'approve' ? 'approve' : 'deny',
    reason: values.reason,
    now: new Date(),
  });
  console.log(`${created ? 'recorded' : 'already recorded'}: ${view.status} ${view.tool} (${view.urn})`);
  await settleLocal(runtime, { conversations: [conversationUrn] });
  await printAnswers(runtime.deps.resources, conversationUrn);
  return 0;
}

/** Prints the answers of a conversation, oldest first (what `cld show <conversation>` ends with). */
export async function printAnswers(resources: ResourceIndex, conversation: string): Promise<void> {
  const { causalOrder } = await import('./tree.js');
  const answers = causalOrder(await subtreeOf(resources, conversation)).filter(
    (r) => r.meta.type === 'common.Message' && (r as { inReplyTo?: string }).inReplyTo !== undefined,
  );
  for (const answer of answers) console.log(`\n${(answer as { content: string }).content}`);
  console.log(`\nconversation: ${conversation}`);
}
