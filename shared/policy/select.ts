import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import bundledRules from '../../policies/rules.json' with { type: 'json' };
import { CldError, ConfigError } from '../errors.js';
import type { Policy } from './port.js';
import { RulesPolicy } from './rules.js';

/**
 * Chooses a function's policy engine at cold start (issue "OPA policies bundled per function").
 *
 * Rules data: `<policyDir>/rules.json` when `policyDir` is set and the file exists (the copy the
 * CDK bundling puts in each function's asset), else policies/rules.json as bundled into the code.
 *
 * Engine, in this order:
 * 1. `function` set and `<wasmDir ?? policyDir>/<function>.wasm` exists → `OpaWasmPolicy` (opa-wasm.ts)
 *    (entrypoint `cld/<function>/decision`) over the rules data;
 * 2. `function` set → the built-in {@link RulesPolicy} restricted to that function's rules;
 * 3. no `function` → the built-in over every rule (the embedded default, same as `local`).
 * A bundle that exists but does not load fails the cold start: it is never silently replaced.
 */

/** Where the policy comes from (env `CLD_POLICY_DIR`, `CLD_POLICY_WASM_DIR`, `CLD_FUNCTION`). */
export interface PolicyOptions {
  /** Directory with `rules.json` and, when built, `<function>.wasm` (Lambda: `/var/task/policies`). */
  policyDir?: string | undefined;
  /** Directory of compiled bundles, overriding `policyDir` for `.wasm` files (e.g. `policies/dist`). */
  wasmDir?: string | undefined;
  /** The function whose rules apply (`plan`, `assistant`, `tool`, `http`, `slack`, `teams`, `reply`, `local`). */
  function?: string | undefined;
}

/** The chosen engine and the files it was built from (for the cold-start log line). */
export interface PolicySelection {
  policy: Policy;
  /** `rules.json` used (a path, or `bundled`). */
  rules: string;
  /** The `.wasm` loaded, when the engine is `opa-wasm`. */
  wasm?: string;
}

/** The built-in evaluator over the bundled rules, for `fn` or (undefined) every rule. */
export function builtinPolicy(fn?: string): RulesPolicy {
  return new RulesPolicy(bundledRules, fn === undefined ? {} : { function: fn });
}

/**
 * Selects the policy as described above.
 * @throws ConfigError for unreadable or invalid rules data, an unknown function, or a bundle that
 *   does not load
 */
export async function selectPolicy(options: PolicyOptions = {}): Promise<PolicySelection> {
  const { rules, source } = await loadRules(options.policyDir);
  const fn = options.function;
  try {
    if (fn !== undefined) {
      const wasmDir = options.wasmDir ?? options.policyDir;
      const wasmPath = wasmDir === undefined ? undefined : join(wasmDir, `${fn}.wasm`);
      const wasm = wasmPath === undefined ? undefined : await readIfExists(wasmPath);
      if (wasmPath !== undefined && wasm !== undefined) {
        return {
          // Loaded only when a bundle exists: opa-wasm and its YAML builtins stay unevaluated
          // on the built-in path (esbuild wraps a dynamically imported module in a lazy init).
          policy: await (await import('./opa-wasm.js')).OpaWasmPolicy.load({ wasm, rules, function: fn }),
          rules: source,
          wasm: wasmPath,
        };
      }
      return { policy: new RulesPolicy(rules, { function: fn }), rules: source };
    }
    return { policy: new RulesPolicy(rules), rules: source };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (error instanceof CldError)
      throw new ConfigError(`policy ${source}: ${error.message}`, { cause: error });
    throw error;
  }
}

async function loadRules(policyDir: string | undefined): Promise<{ rules: unknown; source: string }> {
  if (policyDir === undefined) return { rules: bundledRules, source: 'bundled' };
  const path = join(policyDir, 'rules.json');
  const text = await readIfExists(path);
  if (text === undefined) return { rules: bundledRules, source: 'bundled' };
  try {
    return { rules: JSON.parse(text.toString('utf8')) as unknown, source: path };
  } catch (error) {
    throw new ConfigError(`${path} is not JSON`, { cause: error });
  }
}

async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
}
