/**
 * The complexity of an EventBridge event pattern, computed the way AWS's `event-ruler` library
 * (which EventBridge's rule matching is built on) computes it in
 * `software.amazon.event.ruler.MachineComplexityEvaluator` (github.com/aws/event-ruler): for every
 * field, the `wildcard` values are compiled into one byte machine (a trie whose literal prefixes are
 * shared, a `*` a state that loops on every byte); the complexity is the largest number of
 * wildcard-pattern prefixes that one input value can be matching at once, i.e. over every set of
 * machine states some input reaches, the sum over those states of the wildcard patterns reachable
 * from each state. The rule's complexity is the largest over its fields; fields without
 * `wildcard`s score 0.
 *
 * EventBridge refuses `PutRule` with "Event pattern is not valid. Reason: Rule is too complex"
 * above an undisclosed limit; a public report brackets it between 9 (accepted) and 12 (rejected).
 * The stack fails synth above {@link MAX_RULE_COMPLEXITY}, which leaves a margin.
 *
 * This is a port of the evaluator's definition onto a simpler automaton, not of its code: the
 * figures match the ones measured with event-ruler for this project's patterns (issue 24: the old
 * three-shape `AssistantOnTask` rule scored 10, one-shape rules 3–4), which
 * test/infra/rule-complexity.test.ts pins.
 */

import type { EventPattern, Matcher } from '../../shared/events/pattern.js';

/** The complexity above which the stack refuses to synthesize a rule (issue 24: ≤ 5 keeps a margin under 9). */
export const MAX_RULE_COMPLEXITY = 5;

/** Evaluation stops at this value (event-ruler caps it the same way to bound the work). */
const CAP = 100;

/** A trie node over pattern tokens: a literal character, or `*` (any run of characters). */
interface Node {
  id: number;
  star: boolean;
  /** Literal children by character. */
  next: Map<string, Node>;
  /** The `*` child (entered without consuming a character). */
  starChild: Node | undefined;
  /** Wildcard patterns reachable from this node (indices). */
  reachable: Set<number>;
}

/** Tokens of an EventBridge `wildcard` value: `*` any run; `\*` and `\\` literal characters. */
function tokens(wildcard: string): (string | typeof STAR)[] {
  const out: (string | typeof STAR)[] = [];
  for (let i = 0; i < wildcard.length; i++) {
    const char = wildcard[i] as string;
    if (char === '\\' && i + 1 < wildcard.length) {
      out.push(wildcard[++i] as string);
    } else if (char === '*') {
      // Consecutive stars are one state, as in event-ruler (it rejects them outright).
      if (out[out.length - 1] !== STAR) out.push(STAR);
    } else out.push(char);
  }
  return out;
}

const STAR = Symbol('star');

/**
 * The complexity of one field's `wildcard` values (see the module docstring), capped at 100.
 * @param wildcards the `wildcard` strings of one pattern field, e.g. `['cld/*_Conversation-Message.json']`
 * @returns 0 for none; otherwise at least 1
 */
export function wildcardComplexity(wildcards: readonly string[]): number {
  if (wildcards.length === 0) return 0;
  let count = 0;
  const make = (star: boolean): Node => ({
    id: count++,
    star,
    next: new Map(),
    starChild: undefined,
    reachable: new Set(),
  });
  const root = make(false);
  const alphabet = new Set<string>();
  wildcards.forEach((wildcard, index) => {
    let node = root;
    node.reachable.add(index);
    for (const token of tokens(wildcard)) {
      if (token === STAR) {
        node.starChild ??= make(true);
        node = node.starChild;
      } else {
        alphabet.add(token);
        let child = node.next.get(token);
        if (!child) {
          child = make(false);
          node.next.set(token, child);
        }
        node = child;
      }
      node.reachable.add(index);
    }
  });
  // A character no pattern names: it can only be consumed by `*` states.
  const other = '\u0000';
  const closure = (nodes: Iterable<Node>): Node[] => {
    const seen = new Map<number, Node>();
    const stack = [...nodes];
    while (stack.length > 0) {
      const node = stack.pop() as Node;
      if (seen.has(node.id)) continue;
      seen.set(node.id, node);
      if (node.starChild) stack.push(node.starChild);
    }
    return [...seen.values()].sort((a, b) => a.id - b.id);
  };
  const step = (states: readonly Node[], char: string): Node[] => {
    const next: Node[] = [];
    for (const state of states) {
      if (state.star) next.push(state);
      const child = state.next.get(char);
      if (child) next.push(child);
    }
    return closure(next);
  };
  const keyOf = (states: readonly Node[]) => states.map((s) => s.id).join(',');
  const start = closure([root]);
  const seen = new Set<string>([keyOf(start)]);
  const queue: Node[][] = [start];
  let max = 0;
  const characters = [...alphabet, other];
  while (queue.length > 0) {
    const states = queue.shift() as Node[];
    for (const char of characters) {
      const next = step(states, char);
      if (next.length === 0) continue;
      const key = keyOf(next);
      if (seen.has(key)) continue;
      seen.add(key);
      let size = 0;
      for (const state of next) size += state.reachable.size;
      if (size >= CAP) return CAP;
      max = Math.max(max, size);
      queue.push(next);
    }
  }
  return max;
}

/**
 * The complexity of an event pattern: the largest {@link wildcardComplexity} over its fields
 * (nested objects included).
 * @param pattern an EventBridge event pattern as a rule's `EventPattern` holds it
 */
export function patternComplexity(pattern: EventPattern): number {
  let max = 0;
  for (const value of Object.values(pattern)) {
    if (Array.isArray(value)) {
      const wildcards = (value as readonly Matcher[]).flatMap((matcher) =>
        typeof matcher === 'object' && matcher !== null && 'wildcard' in matcher ? [matcher.wildcard] : [],
      );
      max = Math.max(max, wildcardComplexity(wildcards));
    } else if (typeof value === 'object' && value !== null) {
      max = Math.max(max, patternComplexity(value as EventPattern));
    }
  }
  return max;
}
