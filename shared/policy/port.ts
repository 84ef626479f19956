import * as z from 'zod';

/**
 * Policy port (seed roadmap-v1 step 05, `libpolicy`, grown up): every get and put of a
 * resource is decided by `evaluate({ actor, action, resources })`, deny by default. The
 * built-in evaluator (rules.ts) and the OPA wasm engine (issue: OPA policies) take the same
 * input and give the same decisions and reasons.
 */

/** Who acts. `kind` selects the rules; the URNs fill the rules' `{placeholders}`. */
export const ActorSchema = z.strictObject({
  kind: z.enum(['plan', 'assistant', 'tool', 'user', 'system', 'operator']),
  /** Identity: an Assistant URN, a user id, a function name, ... */
  id: z.string().min(1),
  /** Conversation URN the actor works in. */
  conversation: z.string().optional(),
  /** User Message URN being planned (plan actor). */
  message: z.string().optional(),
  /** Task URN the actor works on (assistant and tool actors). */
  task: z.string().optional(),
  /** Tool function name (tool actor). */
  tool: z.string().optional(),
});
export type Actor = z.infer<typeof ActorSchema>;

/** The operator actor: seeds the catalog (deploy, local start), ingests corpora, reads anything (CLI show). */
export const SYSTEM_ACTOR: Actor = { kind: 'system', id: 'operator' };

/**
 * Actions a policy decides; there is deliberately no rule that grants `delete`. `execute` is the
 * tool function running one call of a tool (resources: the `tool.Call`, then its `tool.Decision`
 * when there is one), decided with {@link PolicyInput.tool} and {@link PolicyInput.decision}.
 */
export const ActionSchema = z.enum(['get', 'put', 'list', 'delete', 'execute']);
export type Action = z.infer<typeof ActionSchema>;

/** Input to a decision (OPA's `input`). */
export interface PolicyInput {
  actor: Actor;
  action: Action;
  /** URNs the action touches (for `list`, the URN whose subtree is listed); all must be allowed. */
  resources: readonly string[];
  /** For `execute`: the catalog facts of the tool run (its `approval` field, absent when unset). */
  tool?: ExecuteTool;
  /** For `execute` with a decision: facts of the stored `tool.Decision` and its `tool.Approval`. */
  decision?: DecisionFacts;
}

/** The tool an `execute` runs, as its catalog entry has it. */
export interface ExecuteTool {
  /** Function name; must equal the actor's `tool`. */
  name: string;
  /** The catalog entry's `approval` (absent: the policy's default, rules.json `approval.always`). */
  approval?: 'always' | 'never';
}

/**
 * What the tool function read from storage about the decision it names in an `execute`: the
 * stored `tool.Decision` (`decision`, `by`, `meta.createdAt`) and its `tool.Approval` (`user`,
 * `expiresAt`). Times are RFC 3339 in UTC as `Date.toISOString()` writes them (the fraction
 * optional, 1-9 digits), compared as instants; any other string is denied (rules.ts `isUtcTime`).
 */
export interface DecisionFacts {
  outcome: 'approve' | 'deny';
  /** Who decided. */
  by: string;
  /** The conversation's user, who alone may decide. */
  user: string;
  decidedAt: string;
  expiresAt: string;
}

/** A decision: `reason` names the rule that allowed, or says why nothing did. */
export interface Decision {
  allow: boolean;
  reason: string;
}

/**
 * The port. Implementations must deny by default, deny an input of the wrong shape (a value of
 * the wrong JSON type anywhere the policy reads one: the same reasons in every engine) and never
 * throw.
 */
export interface Policy {
  /** Engine name for logs and benchmarks (`builtin`, `opa-wasm`). */
  readonly engine: string;
  evaluate(input: PolicyInput): Decision;
}
