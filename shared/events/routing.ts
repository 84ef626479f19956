import { KEY_PREFIX, KEY_SUFFIX, keyOf, parseUrn, SHAPE_SEPARATOR } from '../urn.js';
import { REDRIVE_DETAIL_TYPE, REDRIVE_SOURCE } from './envelope.js';
import { type EventPattern, type Matcher, matchesPattern } from './pattern.js';

/**
 * The routing table: which step function reacts to which resources, declared once
 * (DESIGN.md principle 4). The CDK stack turns each route into an EventBridge rule with
 * exactly `pattern`; the local bus routes by the same patterns and nothing else, as EventBridge
 * does, so local deliveries are Lambda invocations.
 *
 * A route lists the `shapes` of the resources it is for: globs over the shape in the resource's
 * key (shared/urn.ts `shapeOf`, e.g. `Conversation-Message-Task-Output`), `*` matching any run of
 * characters as EventBridge's `wildcard` does. Each shape becomes one `wildcard` on the object key,
 * `cld/*_<shape>.json`: a key has one `_`, before its shape, so the pattern matches exactly
 * the keys whose shape the glob matches. test/unit/events.test.ts pins the targets of each kind
 * of resource and that no object reaches a step twice (every type path of up to 4 elements);
 * test/infra/template.test.ts counts the deliveries of whole conversations through the
 * synthesized rules. The step's handler middleware drops an event whose key matches none of its
 * routes' patterns (another rule's event, a hand-made one), in AWS and locally alike.
 */

/** Step functions that routes target. */
export type StepName = 'plan' | 'assistant' | 'tool' | 'reply';

/** One route. */
export interface Route {
  /** Stable id; the CDK rule's construct id. */
  id: string;
  target: StepName;
  description: string;
  /** The EventBridge event pattern: one `wildcard` on `detail.object.key` per shape. */
  pattern: EventPattern;
  /** Globs over the key's shape (`*`: any run of characters); the event is for this route when one matches. */
  shapes: readonly string[];
}

/** The `wildcard` on object keys that matches the keys of resources of shape `shape` (a glob). */
export function keyWildcard(shape: string): string {
  return `${KEY_PREFIX}*${SHAPE_SEPARATOR}${shape}${KEY_SUFFIX}`;
}

/**
 * Resources created under the key `wildcard`s of `shapes` in `bucket`: S3's "Object Created"
 * event, or the same resource re-emitted by the sweeper (source `cld`, detail type
 * `RESOURCE_PUT`, shared/events/envelope.ts), whose detail names the bucket and key the same way.
 */
function objectCreated(bucket: string, shapes: readonly string[]): EventPattern {
  return {
    source: ['aws.s3', REDRIVE_SOURCE],
    'detail-type': ['Object Created', REDRIVE_DETAIL_TYPE],
    detail: {
      bucket: { name: [bucket] },
      object: { key: shapes.map((shape) => ({ wildcard: keyWildcard(shape) })) },
    },
  };
}

/**
 * The routing table for a bucket. Per target, the routes' shapes are disjoint (an object reaches
 * a step at most once), and each shape is a resource the step acts on:
 * - plan: a Message under a Conversation (a user Message starts planning; the final answer has
 *   the same shape and is ignored) and a root task's output;
 * - assistant: a Task (a leaf starts the inner loop), a Message under a Task (a tool result
 *   continues it; a turn, the only other such Message, is ignored) and a subtask's output
 *   (supervision);
 * - tool: a `tool.Call`, and the `tool.Decision` on its approval request (shared/domain/approval.ts);
 * - reply: a Message under a Conversation (the final answer is delivered; a user Message is
 *   ignored), the output of a task of depth 1 or 2 (the Slack progress message lists those), and
 *   an approval request under a call (the user is asked on the conversation's channel).
 * @param bucket resources bucket name (a CDK token in the stack, the local bucket name locally)
 */
export function routingTable(bucket: string): Route[] {
  const route = (id: string, target: StepName, description: string, shapes: readonly string[]): Route => ({
    id,
    target,
    description,
    pattern: objectCreated(bucket, shapes),
    shapes,
  });
  return [
    route(
      'PlanOnConversationMessage',
      'plan',
      'A user Message starts planning; a root task output may complete the answer.',
      ['Conversation-Message', 'Conversation-Message-Task-Output'],
    ),
    route(
      'AssistantOnTask',
      'assistant',
      'A Task starts the inner loop (leaf); a tool result continues it; a subtask output is supervised.',
      [
        'Conversation-Message-*Task',
        'Conversation-Message-*Task-Message',
        'Conversation-Message-*Task-Task-Output',
      ],
    ),
    route('ToolOnToolCall', 'tool', 'A persisted tool call is executed by the tool function.', [
      'Conversation-Message-*Task-Call',
    ]),
    route(
      'ToolOnDecision',
      'tool',
      "The user's decision on a call's approval request resumes the call: the tool function runs it, or answers it DENIED.",
      ['Conversation-Message-*Task-Call-Approval-Decision'],
    ),
    route(
      'ReplyOnConversationMessage',
      'reply',
      'The final assistant Message under a conversation is delivered to its channel (Slack, Teams); a user Message is ignored by the step.',
      ['Conversation-Message'],
    ),
    route(
      'ReplyOnTaskOutput',
      'reply',
      'The output of a task of depth 1 or 2 updates the Slack progress message of its conversation.',
      // The progress message lists tasks down to depth 2 (shared/channels/reply.ts PROGRESS_DEPTH).
      ['Conversation-Message-Task-Output', 'Conversation-Message-Task-Task-Output'],
    ),
    route(
      'ReplyOnApprovalRequest',
      'reply',
      "An approval request under a tool call (any task depth) asks the conversation's user on its channel: Slack buttons, a Teams message naming the replies.",
      ['Conversation-Message-*Task-Call-Approval'],
    ),
  ];
}

/** The type path of a URN, e.g. `common.Conversation/common.Message/plan.Task`. @throws InvalidUrnError */
export function typePathOf(urn: string): string {
  return parseUrn(urn)
    .elements.map((element) => element.type)
    .join('/');
}

/**
 * True when the route's pattern matches the key of the resource at `urn` (its object-key
 * `wildcard`s, as EventBridge matches them; the bucket is not compared).
 * @throws InvalidUrnError
 */
export function routeAccepts(route: Route, urn: string): boolean {
  let keyPattern = keyPatterns.get(route);
  if (!keyPattern) {
    keyPattern = { key: (route.pattern.detail as { object: { key: readonly Matcher[] } }).object.key };
    keyPatterns.set(route, keyPattern);
  }
  return matchesPattern(keyPattern, { key: keyOf(urn) });
}

/** The object-key part of each route's pattern, made once per route (matched compiled). */
const keyPatterns = new WeakMap<Route, EventPattern>();
