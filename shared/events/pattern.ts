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

/** True when `event` matches `pattern`. */
export function matchesPattern(pattern: EventPattern, event: unknown): boolean {
  for (const [field, expected] of Object.entries(pattern)) {
    const value = isRecord(event) ? event[field] : undefined;
    if (Array.isArray(expected)) {
      if (!matchField(expected as readonly Matcher[], value)) return false;
    } else if (!matchesPattern(expected as EventPattern, value)) {
      return false;
    }
  }
  return true;
}

function matchField(matchers: readonly Matcher[], value: unknown): boolean {
  const values = Array.isArray(value) ? value : [value];
  return matchers.some((matcher) => {
    if (isRecord(matcher) && 'exists' in matcher) return (value !== undefined) === matcher.exists;
    return values.some((v) => v !== undefined && matchOne(matcher, v));
  });
}

function matchOne(matcher: Matcher, value: unknown): boolean {
  if (!isRecord(matcher)) return matcher === value;
  if ('prefix' in matcher) return typeof value === 'string' && value.startsWith(matcher.prefix);
  if ('suffix' in matcher) return typeof value === 'string' && value.endsWith(matcher.suffix);
  if ('wildcard' in matcher)
    return typeof value === 'string' && wildcardToRegExp(matcher.wildcard).test(value);
  if ('equals-ignore-case' in matcher) {
    return typeof value === 'string' && value.toLowerCase() === matcher['equals-ignore-case'].toLowerCase();
  }
  if ('anything-but' in matcher) {
    const but = matcher['anything-but'];
    if (isRecord(but) && 'prefix' in but) return typeof value === 'string' && !value.startsWith(but.prefix);
    const list = Array.isArray(but) ? but : [but];
    return !list.includes(value as string | number);
  }
  return false;
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
