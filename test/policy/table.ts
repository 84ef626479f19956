import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { OpaWasmPolicy } from '../../shared/policy/opa-wasm.js';
import type { Action, Actor, Policy, PolicyInput } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';

/** The repository root. */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** policies/rules.json as parsed JSON. */
export const RULES: unknown = JSON.parse(readFileSync(join(REPO, 'policies/rules.json'), 'utf8'));

/** The function names of policies/rules.json. */
export const FUNCTIONS = Object.keys((RULES as { functions: Record<string, string[]> }).functions);

const CaseSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]+$/),
  function: z.string(),
  why: z.string().min(1),
  // Cases include deliberately broken actors (empty id, missing or malformed placeholders).
  actor: z.looseObject({ kind: z.string(), id: z.string() }),
  action: z.enum(['get', 'put', 'list', 'delete']),
  // Cases include a non-string resource on purpose.
  resources: z.array(z.unknown()),
  allow: z.boolean(),
  reason: z.string().min(1),
});
export type Case = z.infer<typeof CaseSchema>;

const TableSchema = z.strictObject({
  fixtures: z.strictObject({ description: z.string(), urns: z.record(z.string(), z.string()) }),
  cases: z.array(CaseSchema).min(1),
  globs: z.array(
    z.strictObject({
      pattern: z.string(),
      value: z.string(),
      /** What the compiled wasm policies and shared/policy/glob.ts answer. */
      match: z.boolean(),
      /** What OPA's Go evaluator (opa eval/test, the OPA server) answers, where it differs. */
      topdown: z.boolean().optional(),
      why: z.string(),
    }),
  ),
});

/** policies/cases.json, validated: the decision table both engines (and the Rego tests) must satisfy. */
export const TABLE = TableSchema.parse(JSON.parse(readFileSync(join(REPO, 'policies/cases.json'), 'utf8')));

/** The fixture URNs by name (C, M, T, C2, ...). */
export const URNS = TABLE.fixtures.urns;

/** A case's policy input. */
export function inputOf(c: Case): PolicyInput {
  return {
    actor: c.actor as unknown as Actor,
    action: c.action as Action,
    resources: c.resources as string[],
  };
}

/** Where compiled bundles are looked for: CLD_POLICY_WASM_DIR, else policies/dist. */
export const WASM_DIR = process.env.CLD_POLICY_WASM_DIR ?? join(REPO, 'policies/dist');

/** Functions whose `<function>.wasm` exists in {@link WASM_DIR}. */
export const WASM_FUNCTIONS = FUNCTIONS.filter((fn) => existsSync(join(WASM_DIR, `${fn}.wasm`)));

/** An engine under test: builds the policy of one function. */
export interface Engine {
  name: string;
  policyFor(fn: string): Promise<Policy>;
}

/** The built-in evaluator, always available. */
export const BUILTIN: Engine = {
  name: 'builtin',
  policyFor: async (fn) => new RulesPolicy(RULES, { function: fn }),
};

/** The OPA wasm engine over the bundles in {@link WASM_DIR}. */
export const OPA_WASM: Engine = {
  name: 'opa-wasm',
  policyFor: async (fn) =>
    OpaWasmPolicy.load({ wasm: await readFile(join(WASM_DIR, `${fn}.wasm`)), rules: RULES, function: fn }),
};
