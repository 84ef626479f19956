import { describe, expect, it } from 'vitest';
import {
  MAX_RULE_COMPLEXITY,
  patternComplexity,
  wildcardComplexity,
} from '../../infra/lib/rule-complexity.js';
import { rulesOfRoute } from '../../infra/lib/stack.js';
import { ConfigError } from '../../shared/errors.js';
import { keyWildcard, type Route, routingTable } from '../../shared/events/routing.js';

/**
 * The event-pattern complexity EventBridge computes (event-ruler's MachineComplexityEvaluator),
 * pinned on the figures measured with event-ruler itself for this project's patterns (issue 24):
 * the old three-shape AssistantOnTask rule scored 10, one-shape rules 3–4.
 */
describe('event-pattern complexity', () => {
  const key = (shapes: string[]) => shapes.map(keyWildcard);

  it('scores the three-shape assistant rule 10, as event-ruler measured it', () => {
    expect(
      wildcardComplexity(
        key([
          'Conversation-Message-*Task',
          'Conversation-Message-*Task-Message',
          'Conversation-Message-*Task-Task-Output',
        ]),
      ),
    ).toBe(10);
  });

  it.each([
    ['Conversation-Message-*Task', 3],
    ['Conversation-Message-*Task-Message', 3],
    ['Conversation-Message-*Task-Task-Output', 4],
    ['Conversation-Message-*Task-Call', 3],
    ['Conversation-Message', 2],
  ])('scores the one-shape pattern %s %i', (shape, expected) => {
    expect(wildcardComplexity(key([shape]))).toBe(expected);
  });

  it('scores no wildcard 0, and counts a star-free wildcard once', () => {
    expect(wildcardComplexity([])).toBe(0);
    expect(wildcardComplexity(['abc'])).toBe(1);
  });

  it('grows with the number of stars that can be active at once', () => {
    expect(wildcardComplexity(['a*'])).toBeLessThan(wildcardComplexity(['a*b*c*']));
  });

  it('treats an escaped star as a literal character', () => {
    expect(wildcardComplexity(['a\\*b'])).toBe(wildcardComplexity(['axb']));
  });

  it('takes the largest field of a pattern, nested fields included, and ignores other matchers', () => {
    expect(
      patternComplexity({
        source: ['aws.s3'],
        detail: { object: { key: [{ wildcard: 'a*b*c' }, { prefix: 'x' }] }, other: [{ wildcard: 'z' }] },
      }),
    ).toBe(wildcardComplexity(['a*b*c']));
  });
});

describe('rules of a route', () => {
  const routes = routingTable('bucket');

  it('keeps a route whose pattern is within the limit as one rule with the route id', () => {
    const plan = routes.find((r) => r.id === 'PlanOnConversationMessage') as Route;
    expect(rulesOfRoute(plan)).toEqual([
      { id: plan.id, description: plan.description, pattern: plan.pattern, complexity: 4 },
    ]);
  });

  it('splits a route above the limit into one rule per shape, each within it', () => {
    const assistant = routes.find((r) => r.id === 'AssistantOnTask') as Route;
    expect(patternComplexity(assistant.pattern)).toBeGreaterThan(MAX_RULE_COMPLEXITY);
    const parts = rulesOfRoute(assistant);
    expect(parts.map((p) => p.id)).toEqual([
      'AssistantOnTaskConversationMessageAnyTask',
      'AssistantOnTaskConversationMessageAnyTaskMessage',
      'AssistantOnTaskConversationMessageAnyTaskTaskOutput',
    ]);
    parts.forEach((part, i) => {
      expect(part.complexity).toBeLessThanOrEqual(MAX_RULE_COMPLEXITY);
      const detail = part.pattern.detail as { object: { key: unknown }; bucket: unknown };
      expect(detail.object.key).toEqual([{ wildcard: keyWildcard(assistant.shapes[i] as string) }]);
      expect(detail.bucket).toEqual({ name: ['bucket'] });
      expect(part.pattern.source).toEqual(assistant.pattern.source);
    });
  });

  it('refuses a shape that alone is above the limit', () => {
    const [first] = routes;
    const bad = { ...(first as Route), shapes: ['A-*B', 'C*-*D*-*E*-*F'] };
    bad.pattern = {
      ...bad.pattern,
      detail: {
        bucket: { name: ['bucket'] },
        object: { key: bad.shapes.map((s) => ({ wildcard: keyWildcard(s) })) },
      },
    };
    expect(() => rulesOfRoute(bad)).toThrow(ConfigError);
    expect(() => rulesOfRoute(bad)).toThrow(
      /shape C\*-\*D\*-\*E\*-\*F alone has rule complexity \d+, above 5/,
    );
  });
});
