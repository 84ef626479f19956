import { ConfigError } from '../../shared/errors.js';
import type { EventPattern as RoutePattern } from '../../shared/events/pattern.js';
import { keyWildcard, type Route } from '../../shared/events/routing.js';
import { MAX_RULE_COMPLEXITY, patternComplexity } from './rule-complexity.js';

/**
 * The EventBridge rules of the routing table's routes (shared/events/routing.ts) as CDK builds
 * them: patterns in CDK's shape, and a route split by shape when its pattern is too complex.
 */

/** Top-level fields of an EventBridge pattern and their names in CDK's `EventPattern`. */
const PATTERN_FIELDS: Readonly<Record<string, string>> = {
  version: 'version',
  id: 'id',
  'detail-type': 'detailType',
  source: 'source',
  account: 'account',
  time: 'time',
  region: 'region',
  resources: 'resources',
  detail: 'detail',
};

/**
 * A route's pattern as CDK's `events.EventPattern` (which renders `detailType` as `detail-type`);
 * every other level is passed through unchanged.
 * @throws ConfigError for a top-level field EventBridge events do not have
 */
export function toCdkEventPattern(pattern: RoutePattern): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(pattern)) {
    const name = PATTERN_FIELDS[field];
    if (!name) throw new ConfigError(`route pattern has an unknown top-level field "${field}"`);
    result[name] = value;
  }
  return result;
}

/** One EventBridge rule of a route: its construct id (without the `Rule` suffix), description and pattern. */
export interface RulePart {
  id: string;
  description: string;
  pattern: RoutePattern;
  /** The pattern's complexity as EventBridge computes it (infra/lib/rule-complexity.ts). */
  complexity: number;
}

/**
 * The rules of one route: the route's own pattern as one rule (id = the route's id) while its
 * complexity is at most {@link MAX_RULE_COMPLEXITY}; above that, one rule per shape (id = the
 * route's id + the shape in PascalCase, `*` as `Any`), each with the route's pattern narrowed to
 * that shape. The shapes of a route are disjoint, so an object still reaches the function at most
 * once, exactly as the local bus delivers it by the route's pattern (DESIGN.md principle 4).
 * @throws ConfigError when one shape alone is above the limit (EventBridge could refuse the rule)
 */
export function rulesOfRoute(route: Route): RulePart[] {
  const whole = patternComplexity(route.pattern);
  if (whole <= MAX_RULE_COMPLEXITY)
    return [{ id: route.id, description: route.description, pattern: route.pattern, complexity: whole }];
  return route.shapes.map((shape) => {
    const pattern = narrowToShape(route.pattern, shape);
    const complexity = patternComplexity(pattern);
    if (complexity > MAX_RULE_COMPLEXITY) {
      throw new ConfigError(
        `route ${route.id}: the shape ${shape} alone has rule complexity ${complexity}, above ${MAX_RULE_COMPLEXITY} ` +
          '(EventBridge may refuse the rule as too complex): use fewer `*` in the shape',
      );
    }
    const suffix = shape.replaceAll('*', 'Any-').split('-').filter(Boolean).join('');
    return {
      id: `${route.id}${suffix}`,
      description: `${route.description} (${shape})`,
      pattern,
      complexity,
    };
  });
}

/** The route's pattern with its object-key `wildcard`s narrowed to the one of `shape`. */
function narrowToShape(pattern: RoutePattern, shape: string): RoutePattern {
  const detail = pattern.detail as { object: Record<string, unknown> } & Record<string, unknown>;
  return {
    ...pattern,
    detail: { ...detail, object: { ...detail.object, key: [{ wildcard: keyWildcard(shape) }] } },
  } as RoutePattern;
}
