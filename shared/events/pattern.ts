/**
 * EventBridge event pattern matching, for the local bus (the cloud rules use the same
 * patterns). Implements the comparison operators this project's routing table uses, with
 * EventBridge semantics (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html):
 * exact strings/numbers/booleans/null, `prefix`, `suffix`, `wildcard` (`*` matches any run of
 * characters, including `/`), `anything-but` (values or a `prefix`), `exists`, and
 * `equals-ignore-case`. A pattern field matches when any of its array entries matches; all
 * fields of a pattern must match; arrays in the event match when any element matches.
 */

/** An EventBridge event pattern (the JSON a rule's `EventPattern` holds). */
export type EventPattern = { [field: string]: EventPattern | readonly Matcher[] };

/** One entry of a pattern field's array. */
export type Matcher =
  | string
  | number
  | boolean
  | null
  | { prefix: string }
  | { suffix: string }
  | { wildcard: string }
  | { 'equals-ignore-case': string }
  | { exists: boolean }
  | { 'anything-but': string | number | readonly (string | number)[] | { prefix: string } };

/** A compiled pattern (or pattern field): true when the value matches. */
type Predicate = (value: unknown) => boolean;

/**
 * Patterns compiled into predicates, by identity: a route's pattern is compiled once, at its
 * first event. A pattern must not be changed after it was first matched.
 */
const compiledPatterns = new WeakMap<EventPattern, Predicate>();

/** True when `event` matches `pattern` (compiled at the first call, see `compiledPatterns`). */
export function matchesPattern(pattern: EventPattern, event: unknown): boolean {
  let predicate = compiledPatterns.get(pattern);
  if (!predicate) {
    predicate = compileObject(pattern);
    compiledPatterns.set(pattern, predicate);
  }
  return predicate(event);
}

function compileObject(pattern: EventPattern): Predicate {
  const fields = Object.entries(pattern).map(([field, expected]): [string, Predicate] => [
    field,
    Array.isArray(expected)
      ? compileField(expected as readonly Matcher[])
      : compileObject(expected as EventPattern),
  ]);
  return (event) => {
    for (const [field, test] of fields) {
      if (!test(isRecord(event) ? event[field] : undefined)) return false;
    }
    return true;
  };
}

/** A field matches when any matcher does; `exists` looks at the field, the others at each value of it. */
function compileField(matchers: readonly Matcher[]): Predicate {
  const exists: boolean[] = [];
  const tests: Predicate[] = [];
  for (const matcher of matchers) {
    if (isRecord(matcher) && 'exists' in matcher) exists.push(matcher.exists);
    else tests.push(compileMatcher(matcher));
  }
  return (value) => {
    for (const wanted of exists) if ((value !== undefined) === wanted) return true;
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) {
      if (v === undefined) continue;
      for (const test of tests) if (test(v)) return true;
    }
    return false;
  };
}

function compileMatcher(matcher: Matcher): Predicate {
  if (!isRecord(matcher)) return (value) => matcher === value;
  if ('prefix' in matcher) {
    const { prefix } = matcher;
    return (value) => typeof value === 'string' && value.startsWith(prefix);
  }
  if ('suffix' in matcher) {
    const { suffix } = matcher;
    return (value) => typeof value === 'string' && value.endsWith(suffix);
  }
  if ('wildcard' in matcher) {
    const regexp = wildcardToRegExp(matcher.wildcard);
    return (value) => typeof value === 'string' && regexp.test(value);
  }
  if ('equals-ignore-case' in matcher) {
    const lower = matcher['equals-ignore-case'].toLowerCase();
    return (value) => typeof value === 'string' && value.toLowerCase() === lower;
  }
  if ('anything-but' in matcher) {
    const but = matcher['anything-but'];
    if (isRecord(but) && 'prefix' in but) {
      const { prefix } = but;
      return (value) => typeof value === 'string' && !value.startsWith(prefix);
    }
    const list = Array.isArray(but) ? but : [but];
    return (value) => !list.includes(value as string | number);
  }
  return () => false;
}

const wildcardCache = new Map<string, RegExp>();

function wildcardToRegExp(wildcard: string): RegExp {
  let regexp = wildcardCache.get(wildcard);
  if (!regexp) {
    const source = wildcard
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
      .join('.*');
    regexp = new RegExp(`^${source}$`, 'su');
    wildcardCache.set(wildcard, regexp);
  }
  return regexp;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
