import { describe, expect, it } from 'vitest';
import { BRIDGE_WEIGHT, type ExtractHit, extractiveAnswer } from '../../shared/llm/extract.js';
import { BRIDGED_HITS, bridgeOf, withBridges } from '../../shared/search/bridge.js';
import { API_BOOST, DEFAULT_SEARCH_LIMIT } from '../../shared/search/minisearch-index.js';
import { termsOf } from '../../shared/search/terms.js';

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

describe('which hits get a bridge', () => {
  const entries = { RetentionDays: ['How long, in days, the log contents will be retained.'] };
  const hit = (i: number) => ({
    urn: `cld:doc.Document.d${i}/doc.Chunk.c`,
    type: 'doc.Chunk',
    source: `docs/d${i}/README.md`,
    text: '```ts\nnew logs.LogGroup(this, "L", { retention: logs.RetentionDays.ONE_WEEK });\n```',
    score: 10 - i,
  });

  it('bridges the hits a search returns by default, and reads no entries for the others', async () => {
    expect(BRIDGED_HITS).toBe(DEFAULT_SEARCH_LIMIT);
    const asked: string[] = [];
    const hits = await withBridges(
      Array.from({ length: BRIDGED_HITS + 2 }, (_, i) => hit(i)),
      'How long are the contents kept?',
      (source) => {
        asked.push(source);
        return entries;
      },
    );
    expect(hits.map((h) => h.bridge?.[0]?.name)).toEqual([
      ...Array.from({ length: BRIDGED_HITS }, () => 'RetentionDays'),
      undefined,
      undefined,
    ]);
    expect(asked).toEqual(hits.slice(0, BRIDGED_HITS).map((h) => h.source));
  });

  it('bridges no name the prose negates, and one a clause after "but" affirms', () => {
    const glossary = {
      retention: ['The number of days log events are kept in CloudWatch Logs.'],
      dataProtectionPolicy: ['Data Protection Policy for this log group.'],
      RetentionDays: ['How long, in days, the log contents will be retained.'],
    };
    const terms = new Set(termsOf('How do I set how long a log group keeps its logs?'));
    const negated = {
      title: 'Log Group Class',
      text: 'Because of this, the Delivery log class does not support `dataProtectionPolicy` or `RetentionDays`; setting them fails.',
    };
    expect(bridgeOf(negated, terms, glossary)).toEqual([]);
    // The same names in code, or affirmed after "but", are bridged.
    const code = {
      title: 'Log Group Class',
      text: '```ts\nnew logs.LogGroup(this, "L", { retention: logs.RetentionDays.ONE_WEEK });\n```',
    };
    expect(bridgeOf(code, terms, glossary).map((b) => b.name)).toEqual(['RetentionDays']);
    const affirmed = {
      title: 'Log Groups/Streams',
      text: 'The default period if not supplied is 2 years, but it can be set to one of the values in the `RetentionDays` enum.',
    };
    expect(bridgeOf(affirmed, terms, glossary).map((b) => b.name)).toEqual(['RetentionDays']);
  });

  it("ends a negation's clause where Markdown does, and reads it without its code", () => {
    const glossary = { RetentionDays: ['How long, in days, the log contents will be retained.'] };
    const terms = new Set(termsOf('How do I set how long a log group keeps its logs?'));
    const names = (text: string) =>
      bridgeOf({ title: 'Log Groups', text }, terms, glossary).map((b) => b.name);
    // A list item or table row after one that says "not" (aws-stepfunctions' list of conditions,
    // aws-bedrockagentcore's tables of properties): no punctuation ends the earlier one.
    expect(
      names('* `Condition.isNotPresent` - matches if a path is not present\n* `RetentionDays` - the period'),
    ).toEqual(['RetentionDays']);
    expect(
      names('| `role` | A new role is created if not provided |\n| `retention` | `RetentionDays` |'),
    ).toEqual(['RetentionDays']);
    expect(names('Not for the Delivery class\n\nSet the period with `RetentionDays`.')).toEqual([
      'RetentionDays',
    ]);
    expect(names('## Not for the Delivery class\nSet the period with `RetentionDays`.')).toEqual([
      'RetentionDays',
    ]);
    // "not" in code negates nothing.
    expect(names('Combine `sfn.Condition.not(c)` with `RetentionDays` for the group.')).toEqual([
      'RetentionDays',
    ]);
    // Negated all the same: after "e.g.", with a typographic apostrophe, inside a double-backtick span.
    expect(names('The Delivery class does not support some properties, e.g. `RetentionDays`.')).toEqual([]);
    expect(names('The Delivery class doesn’t support `RetentionDays`.')).toEqual([]);
    expect(names('The Delivery class does not support ``x`RetentionDays`` at all.')).toEqual([]);
  });

  it('ends a conditional negation at its comma: what follows is affirmed', () => {
    const glossary = { RetentionDays: ['How long, in days, the log contents will be retained.'] };
    const terms = new Set(termsOf('How do I set how long a log group keeps its logs?'));
    const conditional = {
      title: 'Log Groups',
      text: 'If not set, it defaults to one of the `RetentionDays` values.',
    };
    expect(bridgeOf(conditional, terms, glossary).map((b) => b.name)).toEqual(['RetentionDays']);
    const negated = { title: 'Log Groups', text: 'This class does not support `RetentionDays`.' };
    expect(bridgeOf(negated, terms, glossary)).toEqual([]);
  });
});
