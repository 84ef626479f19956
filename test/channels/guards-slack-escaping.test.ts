import { describe, expect, it } from 'vitest';
import { slackApprovalBlocks, slackDecidedBlocks } from '../../shared/channels/approvals.js';
import { slackText } from '../../shared/channels/slack.js';
import { approvalRequest, approvalView } from '../../shared/domain/approval.js';
import { withMeta } from '../../shared/resources/meta.js';
import type { ApprovalDecision } from '../../shared/resources/schemas.js';
import { conversation, message, NOW, task, toolCall } from '../unit/builders.js';

/**
 * Slack mrkdwn escaping where the bot posts text a user or a model wrote (issue 22, finding 10):
 * the approval notice and its decided form show the task's title, which comes from the plan (and
 * so from the user's words). Slack reads `<…>` as a control sequence (`<!channel>` pings
 * everyone, `<https://x|label>` is a disguised link) and `&` as the start of an escape, so the
 * title must reach Slack as `&lt;`, `&gt;`, `&amp;` (Slack's "Formatting text for app surfaces",
 * "Escaping text").
 */

const HOSTILE = 'Ping <!channel> & <@U0ADMIN> via <https://evil.example|the docs> &amp; <#C123>';
const ESCAPED =
  'Ping &lt;!channel&gt; &amp; &lt;@U0ADMIN&gt; via &lt;https://evil.example|the docs&gt; &amp;amp; &lt;#C123&gt;';

function request() {
  const c = conversation('slack-escaping', 'slack:T1:U1');
  const m = message(c.meta.id, 'message-1');
  const t = task(m.meta.id, 'task-0');
  const turn = withMeta({ type: 'common.Message', name: 'turn-1', parent: t.meta.id }, NOW).id;
  return approvalRequest(toolCall(t.meta.id, turn), HOSTILE, 'slack:T1:U1', 20 * 60_000, NOW);
}

/** Every mrkdwn text of a list of Block Kit blocks. */
function mrkdwnTexts(blocks: unknown[]): string[] {
  const texts: string[] = [];
  const visit = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (record.type === 'mrkdwn' && typeof record.text === 'string') texts.push(record.text);
      Object.values(record).forEach(visit);
    }
  };
  visit(blocks);
  return texts;
}

describe('Slack approval notices escape the task title', () => {
  it('escapes <, > and & in the notice with buttons', () => {
    const texts = mrkdwnTexts(slackApprovalBlocks(request()));
    const heading = texts.find((t) => t.includes('Approval needed')) as string;
    expect(heading).toContain(`_${ESCAPED}_`);
    for (const text of texts) {
      expect(text).not.toContain('<!channel>');
      expect(text).not.toContain('<https://evil.example');
      expect(text).not.toContain('<@U0ADMIN>');
    }
  });

  it('escapes <, > and & in the notice once decided', () => {
    const r = request();
    const decision: ApprovalDecision = {
      meta: withMeta({ type: 'tool.Decision', name: 'decision', parent: r.meta.id }, NOW),
      decision: 'approve',
      by: 'slack:T1:U1',
      channel: 'slack',
    };
    const texts = mrkdwnTexts(slackDecidedBlocks(approvalView(r, decision, NOW)));
    expect(texts[0]).toContain(`_${ESCAPED}_`);
    expect(texts.join('\n')).not.toContain('<!channel>');
    // The decider is mentioned on purpose, as Slack's own user mention.
    expect(texts[1]).toContain('Approved by <@U1>');
  });
});

describe('Slack text read from a message', () => {
  it('decodes Slack’s three escapes once, &amp; last, and drops mentions', () => {
    expect(slackText('a &lt;b&gt; &amp; c')).toBe('a <b> & c');
    // What the user typed literally as "&lt;" arrives as "&amp;lt;" and must stay "&lt;".
    expect(slackText('typed &amp;lt;tag&amp;gt; literally')).toBe('typed &lt;tag&gt; literally');
    expect(slackText('<@U0BOT> hello <!channel> <#C1|general> there')).toBe('hello there');
  });
});
