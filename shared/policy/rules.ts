import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { isUrn } from '../urn.js';
import { globMatch, globToRegExp } from './glob.js';
import type { Action, Actor, Decision, Policy, PolicyInput } from './port.js';

/**
 * Policy rules as data, engine-neutral: which actor kind may do which action on which URN
 * glob patterns, with the actor's own URNs substituted for `{conversation}`, `{message}`,
 * `{task}`. The same JSON is the `data` of the OPA policies (policies/rules.json).
 */
export const RuleSchema = z.strictObject({
  id: z.string().min(1),
  description: z.string(),
  actor: z.enum(['plan', 'assistant', 'tool', 'user', 'system']),
  actions: z.array(z.enum(['get', 'put', 'list'])).min(1),
  /** OPA `glob.match` patterns with `/` as delimiter; `{placeholders}` from the actor. */
  resources: z.array(z.string().min(1)).min(1),
});
export type Rule = z.infer<typeof RuleSchema>;

/** The rules document. */
export const RulesDocumentSchema = z.strictObject({ version: z.literal(1), rules: z.array(RuleSchema) });
export type RulesDocument = z.infer<typeof RulesDocumentSchema>;

const PLACEHOLDER = /\{(conversation|message|task)\}/g;

/**
 * Built-in evaluator of the rules in TypeScript. Rules are indexed by actor kind and action,
 * so a decision scans only the rules that can apply. Deny by default: an empty actor id, no
 * resources, a malformed URN, `delete`, or a resource no rule covers is denied with a reason.
 */
export class RulesPolicy implements Policy {
  readonly engine = 'builtin';
  private readonly index = new Map<string, Rule[]>();

  /** @throws ValidationError when the rules document is malformed. */
  constructor(document: unknown) {
    const parsed = RulesDocumentSchema.safeParse(document);
    if (!parsed.success) throw new ValidationError(`invalid policy rules: ${z.prettifyError(parsed.error)}`);
    for (const rule of parsed.data.rules) {
      for (const pattern of rule.resources) {
        try {
          globToRegExp(pattern.replace(PLACEHOLDER, 'cld:common.Conversation.0000000000000000'));
        } catch (error) {
          throw new ValidationError(`rule ${rule.id} has an invalid glob: ${pattern}`, { cause: error });
        }
      }
      for (const action of rule.actions) {
        const key = `${rule.actor}:${action}`;
        const list = this.index.get(key) ?? [];
        list.push(rule);
        this.index.set(key, list);
      }
    }
  }

  evaluate(input: PolicyInput): Decision {
    const { actor, action, resources } = input;
    if (!actor || actor.id.trim() === '') return deny('actor is empty');
    if (resources.length === 0) return deny('request names no resources');
    if (action === 'delete') return deny('no actor may delete resources');
    const rules = this.index.get(`${actor.kind}:${action}`) ?? [];
    let lastRule = '';
    for (const resource of resources) {
      // `list` names the URN whose subtree is listed: a non-URN prefix such as `{C}/../{C2}`
      // would otherwise match `{conversation}/**`, so every action gets a parsed URN.
      if (!isUrn(resource)) return deny(`malformed URN: ${String(resource).slice(0, 120)}`);
      const rule = rules.find((candidate) => matches(candidate, actor, resource));
      if (!rule) return deny(`no rule allows ${actor.kind} ${actor.id} to ${action} ${resource}`);
      lastRule = rule.id;
    }
    return { allow: true, reason: `allowed by ${lastRule}` };
  }
}

function matches(rule: Rule, actor: Actor, resource: string): boolean {
  return rule.resources.some((pattern) => {
    const resolved = substitute(pattern, actor);
    return resolved !== undefined && globMatch(resolved, resource);
  });
}

/** Substitutes the actor's URNs; a placeholder the actor lacks makes the pattern inapplicable. */
function substitute(pattern: string, actor: Actor): string | undefined {
  let missing = false;
  const resolved = pattern.replace(PLACEHOLDER, (_, name: 'conversation' | 'message' | 'task') => {
    const value = actor[name];
    if (!value || !isUrn(value)) {
      missing = true;
      return '';
    }
    return escapeGlob(value);
  });
  return missing ? undefined : resolved;
}

function escapeGlob(value: string): string {
  return value.replace(/[*?[\]{}\\]/g, '\\$&');
}

function deny(reason: string): Decision {
  return { allow: false, reason };
}

/** Convenience for tests and handlers: the action and resources of a decision request. */
export function request(actor: Actor, action: Action, resources: readonly string[]): PolicyInput {
  return { actor, action, resources };
}
