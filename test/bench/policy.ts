import { parseArgs } from 'node:util';
import type { Policy, PolicyInput } from '../../shared/policy/port.js';
import { BUILTIN, type Engine, inputOf, OPA_WASM, TABLE, WASM_DIR, WASM_FUNCTIONS } from '../policy/table.js';

/**
 * `npm run bench:policy [-- --iterations N]`: decisions per second and p50/p99 latency of each
 * policy engine over the inputs of the decision table (policies/cases.json), each input
 * evaluated by its own function's policy. The built-in evaluator always; the OPA wasm engine
 * over the bundles in CLD_POLICY_WASM_DIR (default: the committed policies/dist). Goals (issue "OPA
 * policies ..."): built-in ≤ 5 µs and wasm ≤ 50 µs per decision at p50. Reported, not asserted.
 *
 * Method: a warm-up pass, then `iterations` decisions round-robin over the table, each timed
 * with `process.hrtime.bigint()` (the ~50 ns timer cost is included in the latencies); the
 * throughput is measured separately over the same number of untimed decisions.
 */

interface Sample {
  policy: Policy;
  input: PolicyInput;
  allow: boolean;
}

interface Row {
  engine: string;
  subset: string;
  decisions: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
}

async function samplesFor(engine: Engine, functions: readonly string[]): Promise<Sample[]> {
  const policies = new Map<string, Policy>();
  for (const fn of functions) policies.set(fn, await engine.policyFor(fn));
  return TABLE.cases
    .filter((c) => policies.has(c.function))
    .map((c) => ({ policy: policies.get(c.function) as Policy, input: inputOf(c), allow: c.allow }));
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

function measure(engine: string, subset: string, samples: readonly Sample[], iterations: number): Row {
  let sink = 0;
  for (let i = 0; i < Math.min(iterations, 20_000); i++) {
    const s = samples[i % samples.length] as Sample;
    if (s.policy.evaluate(s.input).allow) sink++;
  }
  const latencies = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const s = samples[i % samples.length] as Sample;
    const start = process.hrtime.bigint();
    const decision = s.policy.evaluate(s.input);
    latencies[i] = Number(process.hrtime.bigint() - start) / 1000;
    if (decision.allow !== s.allow)
      throw new Error(`${engine}: wrong decision for ${JSON.stringify(s.input)}`);
  }
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const s = samples[i % samples.length] as Sample;
    if (s.policy.evaluate(s.input).allow) sink++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  latencies.sort();
  if (sink < 0) throw new Error('unreachable');
  return {
    engine,
    subset,
    decisions: iterations,
    perSecond: iterations / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] as number,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { iterations: { type: 'string', default: '200000' } } });
  const iterations = Number(values.iterations);
  if (!Number.isInteger(iterations) || iterations < 1000)
    throw new Error('--iterations must be an integer ≥ 1000');
  const engines: [Engine, readonly string[]][] = [
    [BUILTIN, [...new Set(TABLE.cases.map((c) => c.function))]],
  ];
  if (WASM_FUNCTIONS.length > 0) engines.push([OPA_WASM, WASM_FUNCTIONS]);

  const rows: Row[] = [];
  for (const [engine, functions] of engines) {
    const samples = await samplesFor(engine, functions);
    rows.push(measure(engine.name, `all ${samples.length} table inputs`, samples, iterations));
    rows.push(
      measure(
        engine.name,
        'allowed inputs',
        samples.filter((s) => s.allow),
        iterations,
      ),
    );
    rows.push(
      measure(
        engine.name,
        'denied inputs',
        samples.filter((s) => !s.allow),
        iterations,
      ),
    );
  }

  console.log(`policy decisions, node ${process.version}, ${iterations} decisions per row`);
  if (WASM_FUNCTIONS.length === 0) {
    console.log(
      `opa-wasm: no bundles in ${WASM_DIR} (build them with npm run build:policies where opa is installed)`,
    );
  }
  console.log('| engine | inputs | decisions/s | p50 µs | p99 µs | max µs |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.engine} | ${row.subset} | ${Math.round(row.perSecond).toLocaleString('en-US')} | ${row.p50.toFixed(2)} | ${row.p99.toFixed(2)} | ${row.max.toFixed(0)} |`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
