import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import * as z from 'zod';
import { inputBytes, OpaWasmPolicy } from '../../shared/policy/opa-wasm.js';
import type { Actor, Policy, PolicyInput } from '../../shared/policy/port.js';
import { compileGlob, RulesPolicy } from '../../shared/policy/rules.js';
import { childUrn } from '../../shared/urn.js';

/** The repository root. */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** policies/rules.json as parsed JSON. */
export const RULES: unknown = JSON.parse(readFileSync(join(REPO, 'policies/rules.json'), 'utf8'));

/** The function names of policies/rules.json. */
export const FUNCTIONS = Object.keys((RULES as { functions: Record<string, string[]> }).functions);

const CaseSchema = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9-]+$/),
    function: z.string(),
    why: z.string().min(1),
    // Cases include deliberately broken and type-confused inputs (issue 22): an actor that is not
    // an object or has a kind that is an array, an action that is an array, a tool that is a
    // string, resources of other types. The engines must deny each, with the same reason.
    actor: z.unknown().optional(),
    action: z.unknown().optional(),
    resources: z.unknown().optional(),
    /** For `execute`: the tool's catalog facts (shared/policy/port.ts `ExecuteTool`). */
    tool: z.unknown().optional(),
    /** For `execute` with a decision: the decision's facts (`DecisionFacts`). */
    decision: z.unknown().optional(),
    /** The whole input, for cases whose input is not an object; then no other input field. */
    input: z.unknown().optional(),
    allow: z.boolean(),
    reason: z.string().min(1),
  })
  .refine(
    (c) =>
      'input' in c
        ? ['actor', 'action', 'resources', 'tool', 'decision'].every((k) => !(k in c))
        : 'actor' in c || 'action' in c || 'resources' in c,
    { message: 'a case has `input` alone, or its fields (actor, action, resources, tool, decision)' },
  );
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

/**
 * A case's policy input: `input` when the case has it, else an object of the fields it has (a
 * field it lacks is absent, as in JSON). Typed as `PolicyInput` because that is what callers
 * pass; the table's inputs are deliberately not always one.
 */
export function inputOf(c: Case): PolicyInput {
  if ('input' in c) return c.input as PolicyInput;
  const input: Record<string, unknown> = {};
  for (const key of ['actor', 'action', 'resources', 'tool', 'decision'] as const) {
    if (key in c) input[key] = c[key];
  }
  return input as unknown as PolicyInput;
}

/** A case's actor when it is a well-typed one (an object with string kind and id), else undefined. */
export function actorOf(c: Case): Actor | undefined {
  const actor = c.actor as { kind?: unknown; id?: unknown } | undefined;
  return actor && typeof actor === 'object' && typeof actor.kind === 'string' && typeof actor.id === 'string'
    ? (actor as Actor)
    : undefined;
}

/** The string resources of a case (none when its resources are not an array). */
export function stringResources(c: Case): string[] {
  return Array.isArray(c.resources) ? c.resources.filter((r): r is string => typeof r === 'string') : [];
}

/**
 * Where compiled bundles are looked for: CLD_POLICY_WASM_DIR (e.g. bundles just rebuilt elsewhere),
 * else the committed policies/dist. Every function must have its bundle there: the wasm cases are
 * never skipped (test/policy/bundles-fresh.test.ts checks the committed ones are current).
 */
export const WASM_DIR = process.env.CLD_POLICY_WASM_DIR ?? join(REPO, 'policies/dist');

/** Functions whose `<function>.wasm` exists in {@link WASM_DIR}. */
export const WASM_FUNCTIONS = FUNCTIONS.filter((fn) => existsSync(join(WASM_DIR, `${fn}.wasm`)));

/** The test-only probe bundle (policies/lib/probe.rego) in {@link WASM_DIR}. */
export interface Probe {
  /** glob.match as OPA's wasm runtime answers it, and the glob's compiled matcher as the policies run it. */
  glob(pattern: string, value: string): { builtin: boolean; compiled: boolean };
  /** Whether `value` is a URN by the policies' grammar (lib.valid_urn). */
  urn(value: unknown): boolean;
}

/** Loads {@link Probe} from `<WASM_DIR>/probe.wasm`. @throws when it is missing or not OPA wasm */
export async function loadProbe(): Promise<Probe> {
  const loaded = await loadPolicy(await readFile(join(WASM_DIR, 'probe.wasm')));
  loaded.setData({});
  const result = (input: object, entrypoint: string): unknown => {
    // As the functions' adapter hands it over (a lone surrogate becomes U+FFFD, as OPA's Go decodes it).
    const set = loaded.evaluate(inputBytes(input), entrypoint) as { result: unknown }[];
    if (set.length !== 1) throw new Error(`probe ${entrypoint} gave ${JSON.stringify(set)}`);
    return set[0]?.result;
  };
  return {
    glob: (pattern, value) =>
      result({ pattern, value, matcher: compileGlob(pattern) }, 'cld/probe/glob_row') as {
        builtin: boolean;
        compiled: boolean;
      },
    urn: (value) => result({ value }, 'cld/probe/urn_row') as boolean,
  };
}

/**
 * Strings to check the policies' URN grammar on (isPolicyUrn, the probe's lib.valid_urn) against
 * parseUrn (shared/urn.ts): the table's URNs and near misses.
 */
export function urnSamples(): string[] {
  const C = URNS.C as string;
  return [
    ...Object.values(URNS),
    ...TABLE.cases.flatMap(stringResources),
    childUrn(undefined, 'common.Conversation', 'x'),
    childUrn(childUrn(undefined, 'doc.Document', 'readme.md'), 'doc.Chunk', '0'),
    `${C}/tool.Call.0123456789abcdef`,
    `${C}/Common.Message.0123456789abcdef`,
    `${C}/common.message.0123456789abcdef`,
    `${C}/common.Message.0123456789abcde`,
    `${C}/common.Message.0123456789abcdef0`,
    `${C}/common.Message.0123456789abcdeg`,
    `${C}/common.Message.0123456789ABCDEF`,
    `${C}/common.Mess-age.0123456789abcdef`,
    `${C}/common.M.0123456789abcdef`,
    `${C}/common.4Message.0123456789abcdef`,
    `${C}/common..0123456789abcdef`,
    `${C}/common.Message.extra.0123456789abcdef`,
    `${C}/common.Message0123456789abcdef`,
    `${C}/./common.Message.0123456789abcdef`,
    `${C}/`,
    `${C}//common.Message.0123456789abcdef`,
    'cld:',
    'cld:/common.Message.0123456789abcdef',
    'cld:common.Conversation.0123456789abcdef/',
    'CLD:common.Conversation.0123456789abcdef',
    'urn:common.Conversation.0123456789abcdef',
    'cld:unknown.Thing.0123456789abcdef',
    ` ${C}`,
    `${C}\n`,
    `${C}/common.Message.0123456789abcdef\u0000`,
    `${C}/common.Méssage.0123456789abcdef`,
    `${C}/common.Message.０123456789abcdef`,
  ];
}

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
