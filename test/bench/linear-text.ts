import { loadavg } from 'node:os';
import { countTokens } from '../../shared/context/tokens.js';
import { splitParts } from '../../shared/llm/offline.js';
import { PATHOLOGICAL_TEXTS } from '../unit/pathological-texts.js';

/**
 * `npm run bench:text`: wall time of the text splitters a user's message goes through (the
 * planner's `splitParts`, the token counter `countTokens`) on 256 KB of each input that made the
 * old code quadratic (issue 11, item 7; moved out of test/unit/linear-text.test.ts by issue 23:
 * no wall-clock assertion in a test). Quadratic code takes minutes on these (the old `splitParts`
 * 0.8 s on 16 KB, the old `countTokens` 100 s on a 16,000-letter word); linear code milliseconds.
 * Prints one line per input with the load average, and exits 1 when one takes longer than
 * {@link BOUND_MS} ("countTokens counts 256 KB within 1.5 s"), so a regression to quadratic time
 * still shows as a failure here, where a loaded machine is read off the printed load.
 */
const BOUND_MS = 1_500;

function timed(fn: () => unknown): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

countTokens('warm up the encoder');
let over = 0;
console.log(`load average ${loadavg()[0]?.toFixed(1)}; bound ${BOUND_MS} ms per 256 KB`);
for (const [name, text] of PATHOLOGICAL_TEXTS) {
  const split = timed(() => splitParts(text));
  const counted = timed(() => countTokens(text));
  for (const [what, ms] of [
    ['splitParts', split],
    ['countTokens', counted],
  ] as const) {
    const failed = ms >= BOUND_MS;
    if (failed) over++;
    console.log(
      `${what.padEnd(12)} ${name.padEnd(30)} ${ms.toFixed(0).padStart(6)} ms${failed ? '  OVER' : ''}`,
    );
  }
}
process.exitCode = over > 0 ? 1 : 0;
