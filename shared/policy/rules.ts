import * as z from 'zod';
import { GenerationalMemo } from '../cache/memo.js';
import { ConfigError, ValidationError } from '../errors.js';
import { divergentGlob, globMatch, globToRegExp } from './glob.js';
import type { Action, Actor, Decision, Policy, PolicyInput } from './port.js';

/**
 * Policy rules as data, engine-neutral: which actor kind may do which action on which URN
 * glob patterns, with the actor's own URNs substituted for `{conversation}`, `{message}`,
 * `{task}`; and which rules each function's bundle grants. The same JSON
 * (policies/rules.json) is compiled by {@link compileRules} into the `data` of the OPA wasm
 * bundles (`data.cld.index`, see policies/lib/cld.rego), so both engines decide from one source.
 */

/** Actor fields a pattern may start with, written `{name}`. */
export const PLACEHOLDERS = ['conversation', 'message', 'task'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

/**
 * The URN grammar of shared/urn.ts as one regular expression (RE2- and ECMAScript-compatible),
 * used by both engines: `cld:` then `/`-joined `<namespace>.<Name>.<16 hex>` elements with a
 * known namespace, and at most {@link MAX_URN_LENGTH} characters (the pattern admits ASCII only).
 * policies/lib/cld.rego holds the same string; test/policy/rego-source.test.ts checks both
 * agree with `parseUrn`.
 */
export const URN_PATTERN =
  '^cld:(common|plan|tool|doc)\\.[A-Z][A-Za-z0-9]*\\.[0-9a-f]{16}(/(common|plan|tool|doc)\\.[A-Z][A-Za-z0-9]*\\.[0-9a-f]{16})*$';

/**
 * Longest URN the policies accept: 1,024 bytes minus `.json`. A URN's storage key
 * (shared/urn.ts `keyOf`, `cld/<path>_<shape>.json`) is longer, and `parseUrn` bounds the key, so
 * this bound is the weaker one; ResourceIndex parses every URN before it asks the policy.
 */
export const MAX_URN_LENGTH = 1019;

/**
 * What each placeholder must be for a pattern that uses it to apply (anything else, or a
 * missing field, makes the pattern match nothing): a root Conversation, a Message directly under
 * one, a Task at any depth under such a Message (DESIGN.md "URNs"). Same strings in cld.rego.
 */
export const PLACEHOLDER_PATTERNS: Readonly<Record<Placeholder, string>> = {
  conversation: '^cld:common\\.Conversation\\.[0-9a-f]{16}$',
  message: '^cld:common\\.Conversation\\.[0-9a-f]{16}/common\\.Message\\.[0-9a-f]{16}$',
  task: '^cld:common\\.Conversation\\.[0-9a-f]{16}/common\\.Message\\.[0-9a-f]{16}(/plan\\.Task\\.[0-9a-f]{16})+$',
};

/**
 * Characters an actor id may not consist of only (an id of these alone is "empty"): Unicode's
 * White_Space characters (U+0009–U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028,
 * U+2029, U+202F, U+205F, U+3000) and the zero-width ones that print as nothing (U+180E,
 * U+200B–U+200D, U+2060, U+FEFF). policies/lib/cld.rego `blank` holds the same characters.
 */
export const BLANK_CHARACTERS =
  '\t\n\u000b\u000c\r \u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff';

const BLANK = new Set(BLANK_CHARACTERS);

/** True when `id` is empty or made of {@link BLANK_CHARACTERS} only. */
function isBlank(id: string): boolean {
  for (const char of id) if (!BLANK.has(char)) return false;
  return true;
}

const URN_REGEXP = new RegExp(URN_PATTERN);
const PLACEHOLDER_REGEXPS = Object.fromEntries(
  PLACEHOLDERS.map((name) => [name, new RegExp(PLACEHOLDER_PATTERNS[name])]),
) as Record<Placeholder, RegExp>;

const LEADING_PLACEHOLDER = /^\{(conversation|message|task)\}/;
const ANY_PLACEHOLDER = /\{(conversation|message|task)\}/;

/**
 * A rule's resource pattern: an OPA glob (`{a,b}` alternatives allowed), optionally led by one
 * `{placeholder}`; a placeholder anywhere else is rejected.
 */
const PatternSchema = z
  .string()
  .min(1)
  .refine((pattern) => !ANY_PLACEHOLDER.test(pattern.replace(LEADING_PLACEHOLDER, '')), {
    message: 'a {placeholder} (conversation, message or task) may only lead a pattern, once',
  });

/** One rule. */
export const RuleSchema = z.strictObject({
  id: z.string().regex(/^[a-z][a-z0-9-]*$/, 'a kebab-case rule id'),
  description: z.string(),
  actor: z.enum(['plan', 'assistant', 'tool', 'user', 'system', 'operator']),
  actions: z.array(z.enum(['get', 'put', 'list', 'execute'])).min(1),
  /** OPA `glob.match` patterns with `/` as delimiter; a leading `{placeholder}` from the actor. */
  resources: z.array(PatternSchema).min(1),
});
export type Rule = z.infer<typeof RuleSchema>;

/** The rules document: rules plus, per function (bundle), the ids of the rules it grants. */
export const RulesDocumentSchema = z
  .strictObject({
    version: z.literal(1),
    /** Function name (`plan`, `assistant`, `tool`, `http`, `slack`, `teams`, `reply`, `local`) → rule ids. */
    functions: z.record(z.string().regex(/^[a-z][a-z0-9-]*$/), z.array(z.string())).default({}),
    rules: z.array(RuleSchema),
    /** The policy's default for tools whose catalog entry sets no `approval` (see {@link approvalDenial}). */
    approval: z
      .strictObject({
        description: z.string(),
        /** Globs over tool names (`*` any run of characters): such a tool needs approval of each call. */
        always: z.array(z.string().regex(/^[A-Za-z0-9_*-]{1,64}$/, 'a tool name glob of A-Z a-z 0-9 _ - *')),
      })
      .default({ description: '', always: [] }),
  })
  .superRefine((document, context) => {
    const ids = new Set<string>();
    for (const rule of document.rules) {
      if (ids.has(rule.id)) context.addIssue({ code: 'custom', message: `duplicate rule id ${rule.id}` });
      ids.add(rule.id);
    }
    for (const [name, granted] of Object.entries(document.functions)) {
      for (const id of granted) {
        if (!ids.has(id))
          context.addIssue({ code: 'custom', message: `function ${name} grants unknown rule ${id}` });
      }
    }
  });
export type RulesDocument = z.infer<typeof RulesDocumentSchema>;

/** One `/`-separated segment of a compiled glob: a literal, or a literal followed by `*` (`star`). */
export interface GlobSegment {
  prefix: string;
  star: boolean;
}

/**
 * A glob compiled to string tests, for the wasm engine (OPA's wasm runtime recompiles every
 * glob.match pattern at each evaluation; policies/lib/cld.rego runs these instead):
 * - `prefix`: the glob is a literal followed by `**` (the value starts with `prefix`);
 * - `segments`: `/`-separated segments, each a literal or a literal followed by `*`, with at most
 *   one whole-segment `**` between `head` and `tail` (`deep`: it spans one or more segments, as
 *   `.*` between two `/` does in glob.ts and OPA's wasm runtime);
 * - `glob`: anything else, matched by `glob.match(glob, ["/"], value)`.
 * Same as `compile_glob` in policies/lib/cld.rego (`npm run build:policies` checks both agree).
 */
export type GlobMatcher =
  | { kind: 'prefix'; prefix: string }
  | { kind: 'segments'; head: GlobSegment[]; tail: GlobSegment[]; deep: boolean }
  | { kind: 'glob' };

/** A compiled pattern: the placeholder it starts with (or null), the glob after it and its matcher. */
export interface CompiledPattern {
  base: Placeholder | null;
  glob: string;
  matcher: GlobMatcher;
}

/** A compiled rule as the wasm bundles see it in `data.cld.index`. */
export interface CompiledRule {
  id: string;
  patterns: CompiledPattern[];
}

/**
 * Rules of one function indexed by `"<actor kind>:<action>"`, each list in document order
 * (the first matching rule names the decision).
 */
export type RuleIndex = Record<string, CompiledRule[]>;

/**
 * `data` for the OPA bundles: `{ cld: { index: { <function>: RuleIndex }, approval: { always } } }`
 * (`approval.always`: the rules document's default list of tools that need approval).
 */
export interface PolicyData {
  cld: { index: Record<string, RuleIndex>; approval: { always: string[] } };
}

/**
 * Parses a rules document.
 * @throws ValidationError naming what is wrong, including a glob of a shape OPA's Go evaluator
 *   matches differently from its wasm runtime (`divergentGlob` in glob.ts)
 */
export function parseRulesDocument(document: unknown): RulesDocument {
  const parsed = RulesDocumentSchema.safeParse(document);
  if (!parsed.success) throw new ValidationError(`invalid policy rules: ${z.prettifyError(parsed.error)}`);
  for (const rule of parsed.data.rules) {
    for (const pattern of rule.resources) {
      const { glob } = compilePattern(pattern);
      try {
        globToRegExp(glob);
      } catch (error) {
        throw new ValidationError(`rule ${rule.id} has an invalid glob: ${pattern}`, { cause: error });
      }
      const divergent = divergentGlob(glob);
      if (divergent) {
        throw new ValidationError(
          `rule ${rule.id} has a glob OPA's engines match differently (${divergent}): ${pattern}`,
        );
      }
    }
  }
  for (const glob of parsed.data.approval.always) {
    const divergent = divergentGlob(glob);
    if (divergent) {
      throw new ValidationError(
        `approval.always has a glob OPA's engines match differently (${divergent}): ${glob}`,
      );
    }
  }
  return parsed.data;
}

/** Splits a pattern into its leading placeholder and the glob after it, and compiles the glob. */
export function compilePattern(pattern: string): CompiledPattern {
  const match = LEADING_PLACEHOLDER.exec(pattern);
  const base = match ? (match[1] as Placeholder) : null;
  const glob = match ? pattern.slice(match[0].length) : pattern;
  return { base, glob, matcher: compileGlob(glob) };
}

/** Characters that make a glob segment more than a literal (`,` is one inside braces). */
const GLOB_META = /[*?[\]{}\\,]/;

/** The {@link GlobMatcher} of a glob. */
export function compileGlob(glob: string): GlobMatcher {
  if (glob.endsWith('**') && !GLOB_META.test(glob.slice(0, -2))) {
    return { kind: 'prefix', prefix: glob.slice(0, -2) };
  }
  const segments = glob.split('/');
  const deep = segments.flatMap((segment, i) => (segment === '**' ? [i] : []));
  if (deep.length > 1) return { kind: 'glob' };
  const at = deep[0];
  const head = at === undefined ? segments : segments.slice(0, at);
  const tail = at === undefined ? [] : segments.slice(at + 1);
  if (![...head, ...tail].every(isSimpleSegment)) return { kind: 'glob' };
  return {
    kind: 'segments',
    head: head.map(compileSegment),
    tail: tail.map(compileSegment),
    deep: at !== undefined,
  };
}

function isSimpleSegment(segment: string): boolean {
  return !GLOB_META.test(segment.endsWith('*') ? segment.slice(0, -1) : segment);
}

function compileSegment(segment: string): GlobSegment {
  return segment.endsWith('*')
    ? { prefix: segment.slice(0, -1), star: true }
    : { prefix: segment, star: false };
}

/**
 * Indexes the rules a function grants (all rules when `fn` is undefined) by actor kind and
 * action, in document order. Same layout as `lib.index_rules` in policies/lib/cld.rego.
 * @throws ConfigError when `fn` is not a function of the document
 */
export function indexRules(document: RulesDocument, fn?: string): RuleIndex {
  let granted: ReadonlySet<string> | undefined;
  if (fn !== undefined) {
    const ids = document.functions[fn];
    if (!ids) {
      throw new ConfigError(
        `no policy for function "${fn}": policies/rules.json defines ${Object.keys(document.functions).join(', ') || 'none'}`,
      );
    }
    granted = new Set(ids);
  }
  const index: RuleIndex = {};
  for (const rule of document.rules) {
    if (granted && !granted.has(rule.id)) continue;
    const compiled: CompiledRule = { id: rule.id, patterns: rule.resources.map(compilePattern) };
    for (const action of rule.actions) {
      const key = `${rule.actor}:${action}`;
      const list = index[key] ?? [];
      list.push(compiled);
      index[key] = list;
    }
  }
  return index;
}

/**
 * The `data` document of the OPA wasm bundles: every function's {@link RuleIndex}. Each entry
 * policy (policies/<function>.rego) reads only its own function's index.
 * @throws ValidationError for a malformed document
 */
export function compileRules(document: unknown): PolicyData {
  const parsed = parseRulesDocument(document);
  const index: Record<string, RuleIndex> = {};
  for (const fn of Object.keys(parsed.functions)) index[fn] = indexRules(parsed, fn);
  return { cld: { index, approval: { always: parsed.approval.always } } };
}

/** True when `value` is a URN by {@link URN_PATTERN} (what the policies accept as a resource). */
export function isPolicyUrn(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  if (policyUrns.get(value)) return true;
  if (value.length > MAX_URN_LENGTH || !URN_REGEXP.test(value)) return false;
  policyUrns.set(value, true);
  return true;
}

/** Strings {@link isPolicyUrn} accepted recently: every decision checks each URN it names. */
const policyUrns = new GenerationalMemo<string, true>(10_000);

interface MatchPattern {
  base: Placeholder | null;
  glob: string;
  regexp: RegExp;
}

interface MatchRule {
  id: string;
  patterns: MatchPattern[];
}

/**
 * Built-in evaluator of the rules in TypeScript, the reference for the Rego policies
 * (policies/lib/cld.rego): same checks, same order, same reasons. Rules are indexed by actor
 * kind and action, so a decision scans only the rules that can apply.
 *
 * Deny by default, checked in this order:
 * 1. the input's types ({@link inputDenial}: well-formed Unicode, an object, `actor is empty` —
 *    no actor, or an id that is not a string or of {@link BLANK_CHARACTERS} only —, string actor
 *    fields and action, an object tool), never coerced (issue 22);
 * 2. `request names no resources`;
 * 3. `no actor may delete resources`;
 * 4. for each resource in order: `malformed URN: <first 120 characters>` (for `list` too: a
 *    prefix such as `{C}/../{C2}` would otherwise match `{conversation}/**`), then
 *    `no rule allows <kind> <id> to <action> <urn>`;
 * 5. for `execute`, {@link approvalDenial}.
 * Otherwise `allowed by <rule id>`, the first rule (document order) matching the last resource.
 */
export class RulesPolicy implements Policy {
  readonly engine = 'builtin';
  /** The function whose rules apply (undefined: every rule of the document). */
  readonly function: string | undefined;
  private readonly index = new Map<string, MatchRule[]>();
  private readonly approvalAlways: readonly string[];

  /**
   * @param document the rules document (policies/rules.json)
   * @param options.function apply only the rules this function's bundle grants
   * @throws ValidationError when the document is malformed; ConfigError for an unknown function
   */
  constructor(document: unknown, options: { function?: string } = {}) {
    const parsed = parseRulesDocument(document);
    this.function = options.function;
    this.approvalAlways = parsed.approval.always;
    for (const [key, rules] of Object.entries(indexRules(parsed, options.function))) {
      this.index.set(
        key,
        rules.map((rule) => ({
          id: rule.id,
          patterns: rule.patterns.map((p) => ({ ...p, regexp: globToRegExp(p.glob) })),
        })),
      );
    }
  }

  /**
   * Decides `input`. Never throws: the input comes from callers as `PolicyInput`, but every value
   * is checked for its type first (a type-confused input is denied, never coerced: an `action` of
   * `["execute"]` is not `execute`), so a caller's mistake can only cost it access.
   */
  evaluate(input: PolicyInput): Decision {
    const malformed = inputDenial(input);
    if (malformed !== undefined) return deny(malformed);
    const { actor, action, resources } = input;
    if (!Array.isArray(resources) || resources.length === 0) return deny('request names no resources');
    if (action === 'delete') return deny('no actor may delete resources');
    const rules = this.index.get(`${actor.kind}:${action}`) ?? [];
    let lastRule = '';
    for (const resource of resources) {
      if (!isPolicyUrn(resource)) return deny(`malformed URN: ${preview(resource)}`);
      const rule = rules.find((candidate) => matches(candidate, actor, resource));
      if (!rule) return deny(`no rule allows ${actor.kind} ${actor.id} to ${action} ${resource}`);
      lastRule = rule.id;
    }
    if (action === 'execute') {
      const denial = approvalDenial(input, this.approvalAlways);
      if (denial !== undefined) return deny(denial);
    }
    return { allow: true, reason: `allowed by ${lastRule}` };
  }
}

/** Actor fields that must be strings when present (`kind` always). */
const OPTIONAL_ACTOR_FIELDS = ['conversation', 'message', 'task', 'tool'] as const;

/**
 * Why `input` is denied before any rule is read, or undefined when its types are sound. In order
 * (the same checks and reasons as `decision` in policies/lib/cld.rego): a string, value or object
 * key, anywhere in the input that is not well-formed Unicode ({@link isWellFormedText}); an input
 * that is not an object; no actor, or an actor id that is not a string or is blank; an actor
 * `kind`, or a present `conversation`, `message`, `task` or `tool`, that is not a string; an
 * `action` that is not a string; a present `tool` that is not an object. A field whose value is
 * `undefined` is absent (JSON drops it; null is present).
 */
export function inputDenial(input: unknown): string | undefined {
  if (!isWellFormedValue(input)) return 'malformed input: a string is not well-formed Unicode';
  if (!isObject(input)) return 'malformed input: not an object';
  const actor = input.actor;
  if (!isObject(actor) || typeof actor.id !== 'string' || isBlank(actor.id)) return 'actor is empty';
  if (typeof actor.kind !== 'string') return 'malformed input: actor.kind is not a string';
  for (const field of OPTIONAL_ACTOR_FIELDS) {
    const value = actor[field];
    if (value !== undefined && typeof value !== 'string')
      return `malformed input: actor.${field} is not a string`;
  }
  if (typeof input.action !== 'string') return 'malformed input: action is not a string';
  if (input.tool !== undefined && !isObject(input.tool)) return 'malformed input: tool is not an object';
  return undefined;
}

/** A JSON object: not null, not an array. */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * False when a string is not well-formed Unicode: it holds a lone UTF-16 surrogate, or U+FFFD,
 * the replacement character OPA's JSON decoding (Go) leaves in place of a lone surrogate or of
 * bytes that are not UTF-8. Rejecting both gives one answer in every engine: the Go evaluator
 * sees U+FFFD, the wasm adapter replaces lone surrogates with it (shared/policy/opa-wasm.ts).
 */
export function isWellFormedText(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed() && !text.includes('\ufffd');
}

/** {@link isWellFormedText} for every string (value and object key) in a JSON value, iteratively. */
function isWellFormedValue(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === 'string') {
      if (!isWellFormedText(next)) return false;
    } else if (Array.isArray(next)) {
      for (const item of next) stack.push(item);
    } else if (typeof next === 'object' && next !== null) {
      for (const [key, item] of Object.entries(next)) {
        if (!isWellFormedText(key)) return false;
        stack.push(item);
      }
    }
  }
  return true;
}

/** The reason an `execute` of tool `name` is denied for want of a decision (the tool step asks the user then). */
export function needsApprovalReason(name: string): string {
  return `tool ${name} needs the approval of the conversation's user for each call`;
}

/**
 * True when a call of `tool` needs the approval of the conversation's user: its catalog entry has
 * an `approval` other than `never` (any value, null included: fail safe), or has none and its name
 * matches a glob of `always` (the policy's default for tools with side effects, rules.json
 * `approval.always`) with `/` as the only delimiter (a `*` crosses `.`), or holds a `/`. Same as
 * `approval_required` in cld.rego.
 */
export function approvalRequired(
  tool: { name: string; approval?: string | null | undefined },
  always: readonly string[],
): boolean {
  if (tool.approval !== undefined) return tool.approval !== 'never';
  // A `*` does not cross `/`: a name holding one needs approval whatever the globs say (catalog and
  // registry names never have one).
  if (tool.name.includes('/')) return true;
  return always.some((glob) => globMatch(glob, tool.name));
}

/**
 * Why an `execute` the rules allowed is still denied, or undefined (then it is allowed). Expects
 * an input {@link inputDenial} passed. Checked in this order (the same as `approval_denial` in
 * policies/lib/cld.rego, same reasons): more than two resources; no `tool` name; a `tool` other
 * than the actor's; then, for a tool that needs approval ({@link approvalRequired}): no decision
 * named ({@link needsApprovalReason}), a decision not under the call, no decision facts (not an
 * object), a denial, a decision by someone other than the conversation's user, a decision or
 * expiry time that is not RFC 3339 UTC ({@link isUtcTime}), a decision made after the request
 * expired (compared as instants).
 */
export function approvalDenial(input: PolicyInput, always: readonly string[]): string | undefined {
  const { actor, resources, tool, decision } = input;
  if (resources.length > 2) return 'execute names a call and at most one decision';
  if (!tool || typeof tool.name !== 'string') return 'execute names no tool';
  if (actor.tool !== tool.name) return `actor ${actor.id} does not run tool ${tool.name}`;
  if (!approvalRequired(tool, always)) return undefined;
  const [call, named] = resources as [string, string | undefined];
  if (named === undefined) return needsApprovalReason(tool.name);
  if (!named.startsWith(`${call}/`)) return `${named} is not a decision on ${call}`;
  if (!isObject(decision)) return `no facts of decision ${named}`;
  if (decision.outcome !== 'approve') return `the conversation's user denied ${call}`;
  const { by, user, decidedAt, expiresAt } = decision;
  if (typeof by !== 'string' || typeof user !== 'string' || by !== user)
    return `decision by ${text(by)}, not by the conversation's user ${text(user)}`;
  if (!isUtcTime(decidedAt) || !isUtcTime(expiresAt))
    return `decision at ${text(decidedAt)} or expiry ${text(expiresAt)} is not an RFC 3339 UTC time`;
  if (instantOf(decidedAt) > instantOf(expiresAt))
    return `decision at ${decidedAt}, after the request expired at ${expiresAt}`;
  return undefined;
}

/** A string as it is; anything else as `undefined` (what cld.rego's `text` prints). */
function text(value: unknown): string {
  return typeof value === 'string' ? value : 'undefined';
}

const UTC_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/;

/**
 * True for an RFC 3339 date-time in UTC as `Date.toISOString()` writes it, the fraction optional
 * and 1-9 digits: `YYYY-MM-DDTHH:MM:SS[.fffffffff]Z` (RFC 3339 section 5.6, upper-case `T` and
 * `Z`, no offset), a real calendar day, hours 00-23, minutes and seconds 00-59 (no leap second).
 * Same as `utc_time` in policies/lib/cld.rego.
 */
export function isUtcTime(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const match = UTC_TIME.exec(value);
  if (!match) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}

/** An {@link isUtcTime} string whose string order is its time order: the fraction padded to 9 digits. */
function instantOf(time: string): string {
  const fraction = time.length === 20 ? '' : time.slice(20, -1);
  return `${time.slice(0, 19)}${fraction.padEnd(9, '0')}`;
}

function matches(rule: MatchRule, actor: Actor, resource: string): boolean {
  for (const pattern of rule.patterns) {
    if (pattern.base === null) {
      if (pattern.regexp.test(resource)) return true;
      continue;
    }
    const base = placeholderOf(actor, pattern.base);
    if (base === undefined) continue;
    // A placeholder value is a URN, which holds no glob metacharacter: the pattern is the literal
    // base followed by the glob, so match the base as a prefix and the glob on the rest.
    if (pattern.glob === '') {
      if (resource === base) return true;
    } else if (resource.startsWith(base) && pattern.regexp.test(resource.slice(base.length))) {
      return true;
    }
  }
  return false;
}

/** True when `value` has the shape of placeholder `name` ({@link PLACEHOLDER_PATTERNS}). */
function isPlaceholder(name: Placeholder, value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_URN_LENGTH && PLACEHOLDER_REGEXPS[name].test(value);
}

/**
 * The value of the actor's placeholder `name` when it applies, else undefined: the field has its
 * shape and, for `message` and `task`, lies under the actor's `conversation` (an actor claims one
 * conversation; `{kind: assistant, conversation: C, task: <a task of C2>}` gets no `{task}` and
 * writes nowhere). Same as `placeholder` in policies/lib/cld.rego.
 */
function placeholderOf(actor: Actor, name: Placeholder): string | undefined {
  const value = actor[name];
  if (!isPlaceholder(name, value)) return undefined;
  if (name === 'conversation') return value;
  const conversation = actor.conversation;
  return isPlaceholder('conversation', conversation) && value.startsWith(`${conversation}/`)
    ? value
    : undefined;
}

/**
 * The first 120 characters (code points) of a string; for anything else its type (`not a string
 * (number)`): JSON renderings of numbers and key orders differ between engines, a type does not.
 * Same as `preview` in cld.rego (its `type_name`).
 */
function preview(value: unknown): string {
  if (typeof value !== 'string') return `not a string (${typeName(value)})`;
  return value.length <= 120 ? value : Array.from(value).slice(0, 120).join('');
}

/** OPA's `type_name` of a JSON value. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

function deny(reason: string): Decision {
  return { allow: false, reason };
}

/** Convenience for tests and handlers: the action and resources of a decision request. */
export function request(actor: Actor, action: Action, resources: readonly string[]): PolicyInput {
  return { actor, action, resources };
}
