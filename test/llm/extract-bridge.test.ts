import { describe, expect, it } from 'vitest';
import { BRIDGE_WEIGHT, type ExtractHit, extractiveAnswer } from '../../shared/llm/extract.js';
import { API_BOOST } from '../../shared/search/minisearch-index.js';

/** The answer's first code block. */
function firstCode(answer: string): string {
  return /```[^\n]*\n([\s\S]*?)```/.exec(answer)?.[1] ?? '';
}

const fence = (code: string) => ['```ts', code, '```'].join('\n');

describe("offline answers: the hit's bridge (issue 21, eighth round)", () => {
  const question = 'How do I set how long a log group keeps its logs?';
  const retention = {
    urn: 'cld:doc.Document.logs/doc.Chunk.retention',
    title: 'Log Groups',
    text: [
      'Make a log group:',
      '',
      fence("new logs.LogGroup(this, 'LogGroup');"),
      '',
      'Or give it a policy:',
      '',
      fence("new logs.LogGroup(this, 'LogGroup', { retention: logs.RetentionDays.ONE_WEEK });"),
    ].join('\n'),
  };
  const other: ExtractHit = {
    urn: 'cld:doc.Document.logs/doc.Chunk.streams',
    title: 'Streams',
    text: 'A log stream belongs to one log group.',
  };

  it('leads with the code that spells a bridged name: its summary holds the words the code lacks', () => {
    const bridge = [
      { name: 'RetentionDays', summary: 'How long, in days, the log contents will be retained.' },
    ];
    const bridged = extractiveAnswer(question, [{ ...retention, bridge }, other]);
    expect(firstCode(bridged)).toContain('RetentionDays.ONE_WEEK');
    // Without the bridge, the two blocks tie on the question's own words: the first one leads.
    const plain = extractiveAnswer(question, [retention, other]);
    expect(firstCode(plain)).not.toContain('RetentionDays');
  });

  it('counts a bridged term at the weight the index gives the api field', () => {
    expect(BRIDGE_WEIGHT).toBe(API_BOOST);
  });
});
