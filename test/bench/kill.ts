/**
 * `npm run bench:kill [-- --kills 24 --per-start 6 --asks 4]`: the process-death runs of issue 12
 * at bench size (test/recovery/kill-harness.ts), printed as the README's table. The load average
 * is printed with it: the times depend on what else runs on the machine.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { bundleCli, runAskInterrupts, runServeKills } from '../recovery/kill-harness.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '24' },
    'per-start': { type: 'string', default: '6' },
    asks: { type: 'string', default: '4' },
    seed: { type: 'string', default: '2026' },
  },
});
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const seed = Number(values.seed);
await bundleCli();
const started = Date.now();
const serve = await runServeKills({
  kills: Number(values.kills),
  perStart: Number(values['per-start']),
  seed,
  killAfterMs: [0, 1_500],
  recoverTimeoutMs: 180_000,
  print: (line) => console.error(line),
});
const ask = await runAskInterrupts({
  interrupts: Number(values.asks),
  seed,
  afterMs: [0, 1_500],
  print: (line) => console.error(line),
});
const rerun = [...ask.rerunMs].sort((a, b) => a - b);
console.log(`load average after the runs: ${load()}; ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
console.log(
  '| run | kills | conversations | answered | failed | stalled | lost | projections = replay | time to recover |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---|---:|');
console.log(
  `| \`serve\`, SIGKILL under load (${values['per-start']} conversations posted per start) | ${serve.kills} | ${serve.conversations} | ${serve.answered} | ${serve.failed.length} | ${serve.stalled} | ${serve.lost.length} | ${serve.projectionDifferences.length === 0 ? 'yes' : `no (${serve.projectionDifferences.length})`} | ${(serve.recoverMs / 1000).toFixed(1)} s for the ${serve.unfinishedAtLastStart} left unfinished |`,
);
console.log(
  `| \`ask\`, SIGINT then the same command again | ${ask.interrupts} | ${ask.answered + ask.failed + ask.lost.length} | ${ask.answered} | ${ask.failed} | 0 | ${ask.lost.length} | ${ask.projectionDifferences.length === 0 ? 'yes' : `no (${ask.projectionDifferences.length})`} | second run ${(rerun[Math.floor(rerun.length / 2)] ?? 0) / 1000} s median (${ask.midRun} re-drove an unfinished run) |`,
);
for (const failure of serve.failed) console.log(`failed: ${failure.id}: ${failure.reason}`);
for (const lost of [...serve.lost, ...ask.lost]) console.log(`lost: ${lost}`);
for (const difference of [...serve.projectionDifferences, ...ask.projectionDifferences])
  console.log(`projection difference: ${difference.conversation} ${difference.detail}`);
process.exitCode =
  serve.lost.length + ask.lost.length + serve.stalled + serve.projectionDifferences.length > 0 ? 1 : 0;
