import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { divergentGlob, globMatch } from '../../shared/policy/glob.js';
import type { Actor, Policy } from '../../shared/policy/port.js';
import { compileRules, isPolicyUrn, MAX_URN_LENGTH, RulesPolicy } from '../../shared/policy/rules.js';
import { isUrn } from '../../shared/urn.js';
import {
  actorOf,
  BUILTIN,
  type Case,
  type Engine,
  FUNCTIONS,
  inputOf,
  loadProbe,
  OPA_WASM,
  type Probe,
  REPO,
  RULES,
  stringResources,
  TABLE,
  URNS,
  urnSamples,
  WASM_DIR,
  WASM_FUNCTIONS,
} from './table.js';

/** Runs every case of the table through one engine, one policy per function. */
function runTable(engine: Engine, functions: readonly string[]): void {
  const policies = new Map<string, Policy>();
  const cases = TABLE.cases.filter((c) => functions.includes(c.function));

  it.each(cases.map((c) => [c.function, c.id, c] as const))('%s: %s', async (fn, _id, c: Case) => {
    let policy = policies.get(fn);
    if (!policy) {
      policy = await engine.policyFor(fn);
      policies.set(fn, policy);
    }

    const decision = policy.evaluate(inputOf(c));

    expect(decision).toEqual({ allow: c.allow, reason: c.reason });
  });
}

describe('the decision table policies/cases.json', () => {
  it('has unique case ids, known functions, and both allow and deny cases for every function', () => {
    const ids = TABLE.cases.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const c of TABLE.cases) expect(FUNCTIONS, c.id).toContain(c.function);
    for (const fn of FUNCTIONS) {
      const cases = TABLE.cases.filter((c) => c.function === fn);
      expect(
        cases.some((c) => c.allow),
        `${fn} has an allow case`,
      ).toBe(true);
      expect(
        cases.some((c) => !c.allow),
        `${fn} has a deny case`,
      ).toBe(true);
    }
  });

  it('names every rule in an allow case of every function that grants it', () => {
    const { functions } = RULES as { functions: Record<string, string[]> };
    const missing = Object.entries(functions).flatMap(([fn, ids]) =>
      ids
        .filter((id) => !TABLE.cases.some((c) => c.function === fn && c.reason === `allowed by ${id}`))
        .map((id) => `${fn}/${id}`),
    );
    expect(missing).toEqual([]);
  });

  it('is counted right in the security and policies page (docs/security.md)', () => {
    const readme = readFileSync(join(REPO, 'docs', 'security.md'), 'utf8');
    const stated =
      /The decision table, `policies\/cases\.json`: ([\d,]+) cases over the (\d+) functions/.exec(readme);

    expect(stated?.slice(1).map((n) => Number(n.replace(/,/g, '')))).toEqual([
      TABLE.cases.length,
      FUNCTIONS.length,
    ]);
  });

  it('uses only well-formed fixture URNs', () => {
    for (const [name, urn] of Object.entries(URNS)) expect(isUrn(urn), name).toBe(true);
  });

  it('covers the guarantees of the issue with deny cases', () => {
    const reasons = TABLE.cases.filter((c) => !c.allow).map((c) => c.reason);
    expect(reasons).toContain('no actor may delete resources');
    expect(reasons).toContain('request names no resources');
    expect(reasons).toContain('actor is empty');
    expect(reasons.some((r) => r.startsWith('malformed URN: '))).toBe(true);
    // Every cross-conversation case is a deny.
    const crossing = TABLE.cases.filter((c) =>
      stringResources(c).some((r) => r.startsWith(URNS.C2 as string)),
    );
    expect(crossing.length).toBeGreaterThan(10);
    expect(crossing.filter((c) => c.allow && actorOf(c)?.kind !== 'system').map((c) => c.id)).toEqual([]);
  });
});

describe('glob rows of the table (OPA glob.match semantics, "/" delimiter)', () => {
  const rows = TABLE.globs.map((g) => [g.pattern, g.value, g.match, g.why] as const);
  let probe: Probe;
  beforeAll(async () => {
    probe = await loadProbe();
  });

  it.each(rows)('built-in: %s against %s is %s (%s)', (pattern, value, match) => {
    expect(globMatch(pattern, value)).toBe(match);
  });

  it.each(
    rows,
  )('wasm (policies/dist/probe.wasm): glob.match and the compiled matcher: %s against %s is %s (%s)', (pattern, value, match) => {
    expect(probe.glob(pattern, value)).toEqual({ builtin: match, compiled: match });
  });

  it("marks the rows where OPA's Go evaluator differs, each a shape rules may not use", () => {
    const divergent = TABLE.globs.filter((g) => g.topdown !== undefined);
    expect(divergent.map((g) => g.pattern)).toEqual(['cld:a/**/z', 'x**x']);
    for (const g of divergent) {
      expect(g.topdown).toBe(!g.match);
      expect(divergentGlob(g.pattern), g.pattern).toBeDefined();
    }
  });

  it('compiles every rule glob of policies/rules.json to string tests (no glob.match on the hot path)', () => {
    const compiled = compileRules(RULES).cld.index;
    const kinds = new Map<string, string>();
    for (const index of Object.values(compiled)) {
      for (const rules of Object.values(index)) {
        for (const rule of rules) for (const p of rule.patterns) kinds.set(p.glob, p.matcher.kind);
      }
    }
    expect([...kinds].filter(([, kind]) => kind === 'glob')).toEqual([]);
    expect(kinds.get('cld:**')).toBe('prefix');
  });
});

describe("URN rows: the policies' grammar equals parseUrn", () => {
  let probe: Probe;
  beforeAll(async () => {
    probe = await loadProbe();
  });
  const samples = urnSamples();

  // parseUrn bounds the storage key (`cld/<path>_<shape>.json`, longer than the URN: shared/urn.ts
  // keyOf), the policies the URN's length (MAX_URN_LENGTH): below both bounds they agree; a URN
  // the policies accept may still have a key over 1,024 bytes, which parseUrn (and so
  // ResourceIndex, before it asks the policy) rejects.
  const keyFits = (sample: unknown) =>
    typeof sample !== 'string' || 2 * sample.length + '_.json'.length <= 1024;

  it.each(
    samples.map((s) => [JSON.stringify(s).slice(0, 90), s]),
  )('built-in and wasm: %s', (_label, sample) => {
    const policies = [isPolicyUrn(sample), probe.urn(sample)];
    if (isUrn(sample)) expect(policies).toEqual([true, true]);
    if (keyFits(sample)) expect(policies).toEqual([isUrn(sample), isUrn(sample)]);
    else expect(policies[0]).toBe(policies[1]);
  });

  it('has both URNs and non-URNs among the samples', () => {
    expect(samples.filter((s) => isUrn(s)).length).toBeGreaterThan(20);
    expect(samples.filter((s) => !isUrn(s)).length).toBeGreaterThan(20);
  });

  it('bounds the length where the storage key would exceed 1,024 bytes, on both engines', () => {
    let urn = URNS.C as string;
    while (urn.length + 2 * 27 <= MAX_URN_LENGTH) urn += '/plan.Task.0123456789abcdef';
    const pad = MAX_URN_LENGTH - urn.length - '/plan.Task.0123456789abcdef'.length;
    const longest = `${urn}/plan.Task${'x'.repeat(pad)}.0123456789abcdef`;
    expect(longest.length).toBe(MAX_URN_LENGTH);
    const tooLong = longest.replace('/plan.Taskx', '/plan.Taskxx');
    expect([isPolicyUrn(longest), probe.urn(longest)]).toEqual([true, true]);
    expect([isPolicyUrn(tooLong), probe.urn(tooLong)]).toEqual([false, false]);
    expect(probe.urn(42)).toBe(false);
  });
});

describe('builtin engine: every case', () => {
  runTable(BUILTIN, FUNCTIONS);
});

describe(`opa-wasm engine (${WASM_DIR}): every case of every function`, () => {
  it('has a bundle for every function (the committed policies/dist unless CLD_POLICY_WASM_DIR is set)', () => {
    expect(WASM_FUNCTIONS).toEqual(FUNCTIONS);
  });
  runTable(OPA_WASM, FUNCTIONS);
});

describe('properties over the table inputs', () => {
  const urns = [...new Set([...Object.values(URNS), ...TABLE.cases.flatMap(stringResources)])];
  const all = new RulesPolicy(RULES);
  const local = new RulesPolicy(RULES, { function: 'local' });

  it('the unrestricted built-in and the local bundle decide every case alike', () => {
    for (const c of TABLE.cases) expect(local.evaluate(inputOf(c)), c.id).toEqual(all.evaluate(inputOf(c)));
  });

  it("a tool reads nothing its task's assistant could not", () => {
    const tool = new RulesPolicy(RULES, { function: 'tool' });
    const assistant = new RulesPolicy(RULES, { function: 'assistant' });
    const scope = { conversation: URNS.C as string, task: URNS.T as string };
    let allowed = 0;
    for (const name of ['search', 'read']) {
      const toolActor: Actor = { kind: 'tool', id: `tool:${name}`, tool: name, ...scope };
      const assistantActor: Actor = { kind: 'assistant', id: 'function:assistant', ...scope };
      for (const urn of urns) {
        for (const action of ['get', 'list'] as const) {
          if (!tool.evaluate({ actor: toolActor, action, resources: [urn] }).allow) continue;
          allowed += 1;
          expect(assistant.evaluate({ actor: assistantActor, action, resources: [urn] }).allow, urn).toBe(
            true,
          );
        }
      }
    }
    expect(allowed).toBeGreaterThan(10);
  });

  it.each(['reply'])('the %s bundle never lets anyone write', (fn) => {
    const policy = new RulesPolicy(RULES, { function: fn });
    const actors = TABLE.cases.flatMap((c) => actorOf(c) ?? []);
    for (const actor of actors) {
      for (const urn of urns) {
        const decision = policy.evaluate({ actor, action: 'put', resources: [urn] });
        expect(decision.allow, `${actor.kind} ${urn}`).toBe(false);
      }
    }
  });

  it.each(
    FUNCTIONS.filter((fn) => fn !== 'local'),
  )('the %s bundle gives the operator no access at all (the catalog is seeded at deploy)', (fn) => {
    const policy = new RulesPolicy(RULES, { function: fn });
    const system: Actor = { kind: 'system', id: 'operator' };
    const catalog = urns.filter((u) => /^cld:common\.(Assistant|Tool)\.[0-9a-f]{16}$/.test(u));
    expect(catalog.length).toBeGreaterThan(1);
    for (const urn of urns.filter(isUrn)) {
      for (const action of ['get', 'list', 'put'] as const) {
        expect(policy.evaluate({ actor: system, action, resources: [urn] }).allow, `${action} ${urn}`).toBe(
          false,
        );
      }
    }
  });

  it.each([
    BUILTIN,
    OPA_WASM,
  ])('$name: denies every cross-conversation request of every non-operator actor in every function', async (engine) => {
    const theirs = urns.filter((u) => u.startsWith(`${URNS.C2}`));
    expect(theirs.length).toBeGreaterThan(3);
    // Distinct actors only: the table repeats many, and each costs functions × URNs × 4 decisions.
    const actors = [
      ...new Map(
        TABLE.cases
          .flatMap((c) => actorOf(c) ?? [])
          .filter((a) => a.kind !== 'system' && a.conversation !== URNS.C2)
          .map((a) => [JSON.stringify(a), a]),
      ).values(),
    ];
    expect(actors.some((a) => a.task?.startsWith(`${URNS.C2}/`))).toBe(true);
    for (const fn of FUNCTIONS) {
      const policy = await engine.policyFor(fn);
      for (const actor of actors) {
        for (const urn of theirs) {
          for (const action of ['get', 'list', 'put', 'delete'] as const) {
            const decision = policy.evaluate({ actor, action, resources: [urn] });
            expect(decision.allow, `${fn} ${actor.kind} ${action} ${urn}`).toBe(false);
          }
        }
      }
    }
  });
});
