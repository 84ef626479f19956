import { startConversation } from '../../shared/domain/conversation.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import type { ApprovalRequest, Conversation } from '../../shared/resources/schemas.js';
import type { LocalRuntime } from '../../shared/runtime/local.js';

/**
 * Starts a conversation of `user` named `name` on `runtime` (a local runtime whose `search` needs
 * approval, with the offline model) with a question that makes a `search` call, waits for the
 * bus to go idle, and returns the conversation with the approval requests it waits on.
 */
export async function startWaitingForApproval(
  runtime: LocalRuntime,
  user: string,
  name: string,
): Promise<{ conversation: Conversation; requests: ApprovalRequest[] }> {
  const started = await startConversation(runtime.deps.resources, {
    user,
    channel: { kind: 'cli' },
    content: 'How do I send S3 object events to EventBridge?',
    conversationName: name,
  });
  await runtime.bus.idle();
  const conversation = await runtime.deps.resources.getAs(
    SYSTEM_ACTOR,
    'common.Conversation',
    started.conversation,
  );
  const requests = (await runtime.deps.resources.list(SYSTEM_ACTOR, started.conversation, {
    type: 'tool.Approval',
  })) as ApprovalRequest[];
  return { conversation, requests };
}
