import { randomInt } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Decision, Policy, PolicyInput } from '../../shared/policy/port.js';
import { RulesPolicy } from '../../shared/policy/rules.js';
import { decideWithOpa, type FuzzInput, generate, opaOnPath } from './fuzz.js';
import { FUNCTIONS, OPA_WASM, RULES } from './table.js';

/**
 * Differential fuzz of the three policy engines (issue 22): OPA's wasm runtime on the committed
 * bundles (what the functions run in AWS), the built-in evaluator (shared/policy/rules.ts), and
 * OPA's Go evaluator (`opa eval`, one batch) when `opa` is on PATH (CI has none). 20,000 inputs
 * per run from a random seed, printed: repeat a run with `CLD_POLICY_FUZZ_SEED=<seed>`. Any
 * disagreement (decision or reason), any allow the built-in denies, and any allow of an input
 * whose guarded fields have the wrong JSON type fails the test, naming the inputs.
 */

const SEED = Number(process.env.CLD_POLICY_FUZZ_SEED ?? randomInt(2 ** 31));
const COUNT = 20_000;
const HAS_OPA = opaOnPath();

/** What a run found wrong, the first few with their inputs. */
function report(inputs: readonly FuzzInput[], wrong: number[], decide: (i: number) => unknown): string[] {
  return wrong.slice(0, 5).map((i) => JSON.stringify({ ...inputs[i], decisions: decide(i) }).slice(0, 1200));
}

describe(`policy engines on ${COUNT} generated inputs (seed ${SEED})`, () => {
  let inputs: FuzzInput[];
  let builtin: Decision[];
  const policies = new Map<string, Policy>();

  beforeAll(() => {
    console.log(
      `policy fuzz: seed ${SEED}, ${COUNT} inputs (repeat: CLD_POLICY_FUZZ_SEED=${SEED} npx vitest run test/policy/fuzz.test.ts)`,
    );
    inputs = generate(SEED, COUNT);
    const engines = new Map(FUNCTIONS.map((fn) => [fn, new RulesPolicy(RULES, { function: fn })]));
    builtin = inputs.map((i) => (engines.get(i.function) as Policy).evaluate(i.input as PolicyInput));
  });

  it('generates type-confused, Unicode and glob-metacharacter inputs, and enough allowed ones to reach the deep checks', () => {
    const share = (test: (i: FuzzInput) => boolean) => inputs.filter(test).length / inputs.length;
    const mutated = (prefix: string) => (i: FuzzInput) => i.mutations.some((m) => m.startsWith(prefix));

    expect(inputs).toHaveLength(COUNT);
    expect(share((i) => i.typeConfused)).toBeGreaterThan(0.15);
    expect(share(mutated('unicode'))).toBeGreaterThan(0.15);
    expect(share(mutated('glob'))).toBeGreaterThan(0.08);
    expect(share(mutated('time'))).toBeGreaterThan(0.004);
    expect(
      share((i) => i.input === null || typeof i.input !== 'object' || Array.isArray(i.input)),
    ).toBeGreaterThan(0.005);
    const allowed = builtin.filter((d) => d.allow).length / builtin.length;
    expect(allowed).toBeGreaterThan(0.025);
    const reasons = new Set(builtin.map((d) => d.reason.replace(/:.*/, '')));
    expect(reasons.size).toBeGreaterThan(15);
  });

  it('the built-in evaluator allows no type-confused input', () => {
    const wrong = inputs.flatMap((i, n) => (i.typeConfused && builtin[n]?.allow ? [n] : []));

    expect(report(inputs, wrong, (n) => builtin[n])).toEqual([]);
  });

  it('the committed wasm bundles decide every input as the built-in does (decision and reason)', async () => {
    for (const fn of FUNCTIONS) policies.set(fn, await OPA_WASM.policyFor(fn));
    const cpu = process.cpuUsage();
    const wasm = inputs.map((i) => (policies.get(i.function) as Policy).evaluate(i.input as PolicyInput));
    const used = process.cpuUsage(cpu);
    console.log(
      `policy fuzz: wasm decided ${COUNT} inputs in ${((used.user + used.system) / 1e6).toFixed(2)} s CPU`,
    );

    const wrong = inputs.flatMap((_, n) =>
      wasm[n]?.allow !== builtin[n]?.allow || wasm[n]?.reason !== builtin[n]?.reason ? [n] : [],
    );
    expect(report(inputs, wrong, (n) => ({ wasm: wasm[n], builtin: builtin[n] }))).toEqual([]);
  });

  // CI has no opa (see README, "Building the policies"); where it is installed this runs too.
  it.runIf(HAS_OPA)(
    "OPA's Go evaluator (opa eval, one batch) decides every input as the built-in does",
    () => {
      const go = decideWithOpa(inputs);

      expect(go).toHaveLength(COUNT);
      const wrong = inputs.flatMap((_, n) =>
        go[n]?.allow !== builtin[n]?.allow || go[n]?.reason !== builtin[n]?.reason ? [n] : [],
      );
      expect(report(inputs, wrong, (n) => ({ go: go[n], builtin: builtin[n] }))).toEqual([]);
    },
    // One opa process: about 10 s of CPU for 20,000 inputs; a loaded 2-core machine gives it a share.
    300_000,
  );
});
