import { loadPolicy } from '@open-policy-agent/opa-wasm';
import * as z from 'zod';
import { ConfigError } from '../errors.js';
import type { Decision, Policy, PolicyInput } from './port.js';
import { compileRules } from './rules.js';

/**
 * The OPA engine of the `Policy` port: a function's Rego policy (policies/<function>.rego with
 * policies/lib/cld.rego) compiled by `opa build -t wasm -e cld/<function>/decision` and run with
 * `@open-policy-agent/opa-wasm` (README: `loadPolicy`, `setData`, `evaluate`). Loaded once per
 * cold start; `data` is policies/rules.json compiled by {@link compileRules} (rules indexed by
 * function, actor kind and action). Same input, decisions and reasons as the built-in
 * evaluator (shared/policy/rules.ts); test/policy/decision-table.test.ts runs the decision table
 * against both when bundles are present.
 */

/** What the adapter uses of opa-wasm's `LoadedPolicy`. */
export interface LoadedPolicyLike {
  /** Entrypoint name (`cld/plan/decision`) → id. */
  readonly entrypoints: Record<string, number>;
  /** OPA result set: `[{ result }]` when the entrypoint is defined, `[]` when not. */
  evaluate(input: unknown, entrypoint?: number | string): unknown;
  setData(data: object): void;
}

/** The WebAssembly JS API of Node (the project's tsconfig has no DOM/WebAssembly lib types). */
const wasmApi = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<object>;
      Module: { exports(module: object): { name: string }[] };
    };
  }
).WebAssembly;

/** Exports every module `opa build -t wasm` writes has (OPA Wasm ABI 1.x) and opa-wasm relies on. */
const OPA_EXPORTS = ['opa_wasm_abi_version', 'entrypoints', 'builtins', 'opa_eval_ctx_new', 'opa_json_parse'];

const ResultSetSchema = z
  .array(z.object({ result: z.strictObject({ allow: z.boolean(), reason: z.string() }) }))
  .min(1);

/** An OPA wasm policy of one function. */
export class OpaWasmPolicy implements Policy {
  readonly engine = 'opa-wasm';

  /** The function whose policy this is (`plan`, `assistant`, ...). */
  readonly function: string;

  private constructor(
    private readonly loaded: LoadedPolicyLike,
    private readonly entrypoint: number,
    fn: string,
  ) {
    this.function = fn;
  }

  /**
   * Loads a compiled policy and its data.
   * @param options.wasm the bytes of `policy.wasm` (policies/dist/<function>.wasm)
   * @param options.rules the rules document (policies/rules.json)
   * @param options.function the function whose entrypoint `cld/<function>/decision` is evaluated
   * @throws ConfigError when the bytes are not an OPA wasm module, the module has no entrypoint
   *   for the function, or the rules have no entry for it; ValidationError for malformed rules
   */
  static async load(options: { wasm: Uint8Array; rules: unknown; function: string }): Promise<OpaWasmPolicy> {
    const data = compileRules(options.rules);
    let loaded: LoadedPolicyLike;
    try {
      const module = await wasmApi.compile(options.wasm);
      const exported = new Set(wasmApi.Module.exports(module).map((e) => e.name));
      const missing = OPA_EXPORTS.filter((name) => !exported.has(name));
      if (missing.length > 0) throw new Error(`it does not export ${missing.join(', ')}`);
      loaded = (await loadPolicy(module as Parameters<typeof loadPolicy>[0])) as unknown as LoadedPolicyLike;
    } catch (error) {
      throw new ConfigError(
        `policy bundle of ${options.function} is not an OPA wasm module: ${message(error)}`,
        {
          cause: error,
        },
      );
    }
    return OpaWasmPolicy.fromLoaded(loaded, data, options.function);
  }

  /**
   * Wraps an already loaded policy (what {@link load} does after `loadPolicy`) and sets its data.
   * @param data the compiled rules ({@link compileRules})
   * @throws ConfigError as {@link load}
   */
  static fromLoaded(
    loaded: LoadedPolicyLike,
    data: ReturnType<typeof compileRules>,
    fn: string,
  ): OpaWasmPolicy {
    const name = `cld/${fn}/decision`;
    const entrypoint = loaded.entrypoints[name];
    if (typeof entrypoint !== 'number') {
      throw new ConfigError(
        `policy bundle has no entrypoint ${name} (it has ${Object.keys(loaded.entrypoints).join(', ') || 'none'})`,
      );
    }
    if (!data.cld.index[fn]) throw new ConfigError(`policies/rules.json has no rules for function "${fn}"`);
    loaded.setData(data);
    return new OpaWasmPolicy(loaded, entrypoint, fn);
  }

  /**
   * Evaluates the entrypoint. Never throws: an evaluation error or a result that is not
   * `{ allow, reason }` is a deny whose reason says so.
   *
   * The input goes to the wasm runtime as JSON bytes ({@link inputBytes}), as OPA's server would
   * receive it: a lone UTF-16 surrogate becomes U+FFFD (the policy then denies it, as OPA's Go
   * evaluator does), and a falsy input (`null`, `false`, `0`, `""`) is that value, not "no input"
   * (opa-wasm's `evaluate` skips a falsy input).
   */
  evaluate(input: PolicyInput): Decision {
    let resultSet: unknown;
    try {
      resultSet = this.loaded.evaluate(inputBytes(input), this.entrypoint);
    } catch (error) {
      return { allow: false, reason: `policy evaluation failed: ${message(error)}` };
    }
    const parsed = ResultSetSchema.safeParse(resultSet);
    if (!parsed.success) return { allow: false, reason: 'policy evaluation gave no decision' };
    const { allow, reason } = (parsed.data[0] as { result: Decision }).result;
    return { allow, reason };
  }
}

const encoder = new TextEncoder();

/**
 * `input` as the UTF-8 JSON text the wasm runtime parses (opa-wasm takes an ArrayBuffer as the
 * input's JSON as it is, OPA Wasm ABI 1.2), with every lone UTF-16 surrogate, in values and keys,
 * replaced by U+FFFD as Go's encoding/json decodes one (`JSON.stringify` would write it as a
 * `\udxxx` escape, which the wasm runtime's JSON parser refuses). Undefined for an undefined input.
 */
export function inputBytes(input: unknown): ArrayBuffer | undefined {
  let json = JSON.stringify(input) as string | undefined;
  if (json === undefined) return undefined;
  // JSON.stringify escapes a lone surrogate as \udxxx; a literal "\\ud" also matches (harmless).
  if (json.includes('\\ud')) json = JSON.stringify(wellFormed(input));
  const bytes = encoder.encode(json);
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
    ? (bytes.buffer as ArrayBuffer)
    : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
}

/** A copy of a JSON value with lone surrogates in its strings and keys replaced by U+FFFD. */
function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return toWellFormed(value);
  if (Array.isArray(value)) return value.map(wellFormed);
  if (typeof value === 'object' && value !== null) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(copy, toWellFormed(key), {
        value: wellFormed(item),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return copy;
  }
  return value;
}

function toWellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed();
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
