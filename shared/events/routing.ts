import { globMatch } from '../policy/glob.js';
import { parseUrn } from '../urn.js';
import { REDRIVE_DETAIL_TYPE, REDRIVE_SOURCE } from './envelope.js';
import type { EventPattern } from './pattern.js';

/**
 * The routing table: which step function reacts to which resources, declared once
 * (DESIGN.md principle 4). The CDK stack turns each route into an EventBridge rule with
 * exactly `pattern`; the local bus matches the same patterns.
 *
 * EventBridge `wildcard` lets `*` span `/`, so a key pattern cannot say "the last element is a
 * Task". Each route therefore also lists `shapes`: OPA-style globs over the resource's type
 * path (`common.Conversation/common.Message/plan.Task`); `**plan.Task` means a Task at any depth. The shared handler middleware drops an
 * event whose URN has none of the route's shapes, in AWS and locally alike.
 */

/** Step functions that routes target. */
export type StepName = 'plan' | 'assistant' | 'tool' | 'reply';

/** One route. */
export interface Route {
  /** Stable id; the CDK rule's construct id. */
  id: string;
  target: StepName;
  description: string;
  /** The EventBridge event pattern. */
  pattern: EventPattern;
  /** Globs over the resource's type path; the event is for this route when one matches. */
  shapes: readonly string[];
}

const CONVERSATION = 'cld:common.Conversation.';

/**
 * A resource created under `keyWildcard` in `bucket`: S3's "Object Created" event, or the same
 * resource re-emitted by the sweeper (source `cld`, detail type `RESOURCE_PUT`,
 * shared/events/envelope.ts), whose detail names the bucket and key the same way.
 */
function objectCreated(bucket: string, keyWildcard: string): EventPattern {
  return {
    source: ['aws.s3', REDRIVE_SOURCE],
    'detail-type': ['Object Created', REDRIVE_DETAIL_TYPE],
    detail: { bucket: { name: [bucket] }, object: { key: [{ wildcard: keyWildcard }] } },
  };
}

/**
 * The routing table for a bucket.
 * @param bucket resources bucket name (a CDK token in the stack, the local bucket name locally)
 */
export function routingTable(bucket: string): Route[] {
  return [
    {
      id: 'PlanOnConversationMessage',
      target: 'plan',
      description: 'A user Message starts planning; a root task output may complete the answer.',
      pattern: objectCreated(bucket, `${CONVERSATION}*/common.Message.*.json`),
      shapes: [
        'common.Conversation/common.Message',
        'common.Conversation/common.Message/plan.Task/common.Message',
      ],
    },
    {
      id: 'AssistantOnTask',
      target: 'assistant',
      description:
        'A Task starts the inner loop (leaf); a tool result continues it; a subtask output is supervised.',
      pattern: objectCreated(bucket, `${CONVERSATION}*/plan.Task.*.json`),
      shapes: [
        'common.Conversation/common.Message/**plan.Task',
        'common.Conversation/common.Message/**plan.Task/common.Message',
      ],
    },
    {
      id: 'ToolOnToolCall',
      target: 'tool',
      description: 'A persisted tool call is executed by the tool function.',
      pattern: objectCreated(bucket, `${CONVERSATION}*/tool.Call.*.json`),
      shapes: ['common.Conversation/common.Message/**plan.Task/tool.Call'],
    },
    {
      id: 'ReplyOnConversationMessage',
      target: 'reply',
      description:
        'The final assistant Message under a conversation is delivered to its channel (Slack, Teams); other conversation Messages are ignored by the step.',
      pattern: objectCreated(bucket, `${CONVERSATION}*/common.Message.*.json`),
      shapes: ['common.Conversation/common.Message'],
    },
    {
      id: 'ReplyOnTaskOutput',
      target: 'reply',
      description:
        'A task output updates the Slack progress message of its conversation; other task Messages are ignored by the step.',
      pattern: objectCreated(bucket, `${CONVERSATION}*/plan.Task.*/common.Message.*.json`),
      shapes: ['common.Conversation/common.Message/**plan.Task/common.Message'],
    },
  ];
}

/** The type path of a URN, e.g. `common.Conversation/common.Message/plan.Task`. @throws InvalidUrnError */
export function typePathOf(urn: string): string {
  return parseUrn(urn)
    .elements.map((element) => element.type)
    .join('/');
}

/** True when the resource at `urn` has one of the route's shapes. */
export function routeAccepts(route: Route, urn: string): boolean {
  const path = typePathOf(urn);
  return route.shapes.some((shape) => globMatch(shape, path));
}
