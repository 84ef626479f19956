import { parseArgs } from 'node:util';
import {
  docsWorkload,
  problemsOf,
  type RunOutcome,
  referenceRuns,
  runScenario,
  SCENARIOS,
  SIZES,
  type SizeName,
  syntheticWorkload,
  tableOf,
  type Workload,
} from './harness.js';

/**
 * `npm run bench:faults` (`tsx test/faults/run.ts --size large`): runs every fault scenario on
 * both workloads and prints the table of the README's reliability section (markdown). Exit code
 * 1 when any run breaks a guarantee (the problems are in the table), 2 on bad arguments.
 */
async function main(): Promise<number> {
  let size: SizeName;
  let only: string | undefined;
  try {
    const { values } = parseArgs({
      options: { size: { type: 'string', default: 'default' }, workload: { type: 'string' } },
    });
    if (!(values.size in SIZES)) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}`);
    size = values.size as SizeName;
    only = values.workload;
    if (only && only !== 'docs' && only !== 'synthetic')
      throw new Error('--workload must be docs or synthetic');
  } catch (error) {
    console.error(`faults: ${(error as Error).message}`);
    return 2;
  }
  const workloads: Workload[] = [];
  if (!only || only === 'docs') workloads.push(await docsWorkload());
  if (!only || only === 'synthetic') workloads.push(syntheticWorkload(SIZES[size].shape));
  const rows: { run: RunOutcome; reference: RunOutcome; problems: string[] }[] = [];
  for (const workload of workloads) {
    console.error(`${workload.name}: ${workload.label}`);
    const { clean, poisoned } = await referenceRuns(workload);
    for (const scenario of SCENARIOS) {
      const run =
        scenario.name === 'clean'
          ? clean
          : scenario.name === 'poison'
            ? poisoned
            : await runScenario(workload, scenario, clean.poison ?? poisoned.poison);
      const reference = scenario.poison ? poisoned : clean;
      const problems = run === reference ? problemsOf(run, run) : problemsOf(run, reference);
      rows.push({ run, reference, problems });
      console.error(
        `  ${scenario.name}: ${(run.ms / 1000).toFixed(1)} s, ${problems.length ? problems.join('; ') : 'ok'}`,
      );
    }
    await workload.dispose();
  }
  console.log(tableOf(rows));
  return rows.some((r) => r.problems.length) ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
