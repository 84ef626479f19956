import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, PolicyDeniedError } from '../../shared/errors.js';
import { inputBytes, type LoadedPolicyLike, OpaWasmPolicy } from '../../shared/policy/opa-wasm.js';
import type { Actor } from '../../shared/policy/port.js';
import { SYSTEM_ACTOR } from '../../shared/policy/port.js';
import { compileRules, type RulesPolicy } from '../../shared/policy/rules.js';
import { builtinPolicy, selectPolicy } from '../../shared/policy/select.js';
import { withMeta } from '../../shared/resources/meta.js';
import { composeFromEnv } from '../../shared/runtime/compose.js';
import { parseEnv } from '../../shared/runtime/settings.js';
import { FUNCTIONS, RULES, URNS } from './table.js';

const C = URNS.C as string;
const ANSWER = URNS.ANSWER as string;
const reply: Actor = { kind: 'user', id: 'function:reply', conversation: C };
const system: Actor = { kind: 'system', id: 'operator' };
/** The smallest valid WebAssembly module: magic and version, no sections (not an OPA policy). */
const EMPTY_WASM = Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'cld-policy-'));
}

describe('OpaWasmPolicy.load (real @open-policy-agent/opa-wasm)', () => {
  it('fails the cold start with ConfigError for bytes that are not WebAssembly', async () => {
    const loading = OpaWasmPolicy.load({ wasm: Buffer.from('not wasm'), rules: RULES, function: 'plan' });

    await expect(loading).rejects.toThrow(ConfigError);
    await expect(loading).rejects.toThrow(/policy bundle of plan is not an OPA wasm module/);
  });

  it('fails with ConfigError for a valid WebAssembly module that is not an OPA policy', async () => {
    await expect(OpaWasmPolicy.load({ wasm: EMPTY_WASM, rules: RULES, function: 'plan' })).rejects.toThrow(
      ConfigError,
    );
  });
});

/**
 * The adapter's handling of opa-wasm's `LoadedPolicy` results, including results a compiled
 * policy never gives: a hand-written object with the documented `LoadedPolicy` surface
 * (entrypoints, setData, evaluate returning a result set) stands in for a compiled module here;
 * the decision table runs on the committed bundles (policies/dist) in decision-table.test.ts.
 */
describe('OpaWasmPolicy result mapping', () => {
  function loaded(evaluate: (input: unknown, entrypoint?: number | string) => unknown) {
    const calls: { data: unknown[]; inputs: unknown[]; entrypoints: unknown[] } = {
      data: [],
      inputs: [],
      entrypoints: [],
    };
    const policy: LoadedPolicyLike = {
      entrypoints: { 'cld/other/decision': 0, 'cld/reply/decision': 1 },
      setData: (data) => {
        calls.data.push(data);
      },
      evaluate: (input, entrypoint) => {
        calls.inputs.push(input);
        calls.entrypoints.push(entrypoint);
        return evaluate(input, entrypoint);
      },
    };
    return { policy, calls };
  }
  const input = { actor: reply, action: 'get' as const, resources: [ANSWER] };

  it("sets the compiled rules once and evaluates the function's entrypoint with the input", () => {
    const { policy, calls } = loaded(() => [{ result: { allow: true, reason: 'allowed by x' } }]);
    const data = compileRules(RULES);

    const wasm = OpaWasmPolicy.fromLoaded(policy, data, 'reply');
    const decision = wasm.evaluate(input);

    expect(decision).toEqual({ allow: true, reason: 'allowed by x' });
    expect(calls.data).toEqual([data]);
    // The input as JSON bytes (inputBytes), as OPA's server would receive it.
    expect(calls.inputs.map((bytes) => JSON.parse(new TextDecoder().decode(bytes as ArrayBuffer)))).toEqual([
      input,
    ]);
    expect(calls.entrypoints).toEqual([1]);
    expect([wasm.engine, wasm.function]).toEqual(['opa-wasm', 'reply']);
  });

  it("refuses a bundle without the function's entrypoint, naming the ones it has", () => {
    const { policy } = loaded(() => []);

    expect(() => OpaWasmPolicy.fromLoaded(policy, compileRules(RULES), 'plan')).toThrow(
      /no entrypoint cld\/plan\/decision \(it has cld\/other\/decision, cld\/reply\/decision\)/,
    );
  });

  it.each([
    ['an empty result set (decision undefined)', () => [], 'policy evaluation gave no decision'],
    [
      'a result that is not a decision',
      () => [{ result: { allow: 'yes' } }],
      'policy evaluation gave no decision',
    ],
    ['null (an evaluation error in ABI 1.1)', () => null, 'policy evaluation gave no decision'],
    [
      'a thrown string (opa-wasm throws strings)',
      () => {
        throw 'failed to parse json value';
      },
      'policy evaluation failed: failed to parse json value',
    ],
    [
      'a thrown Error',
      () => {
        throw new RangeError('out of memory');
      },
      'policy evaluation failed: out of memory',
    ],
  ])('denies instead of throwing on %s', (_label, evaluate, reason) => {
    const { policy } = loaded(evaluate);

    expect(OpaWasmPolicy.fromLoaded(policy, compileRules(RULES), 'reply').evaluate(input)).toEqual({
      allow: false,
      reason,
    });
  });
});

describe('inputBytes: the input as the wasm runtime gets it', () => {
  const decode = (bytes: ArrayBuffer | undefined) => (bytes ? new TextDecoder().decode(bytes) : undefined);

  it('is the JSON of the input, falsy inputs included (opa-wasm would read them as no input)', () => {
    expect(decode(inputBytes({ a: ['é', 1] }))).toBe('{"a":["é",1]}');
    expect([null, false, 0, ''].map((value) => decode(inputBytes(value)))).toEqual([
      'null',
      'false',
      '0',
      '""',
    ]);
    expect(inputBytes(undefined)).toBeUndefined();
  });

  it("replaces lone surrogates, in values and keys, with U+FFFD as Go's encoding/json decodes them; pairs stay", () => {
    const text = decode(inputBytes({ 'k\udc00': ['x\ud800', '\u{1f600}', 'a\\ud800'] }));

    expect(text).toBe('{"k\ufffd":["x\ufffd","\u{1f600}","a\\\\ud800"]}');
    expect(JSON.parse(text as string)).toEqual({ 'k\ufffd': ['x\ufffd', '\u{1f600}', 'a\\ud800'] });
  });
});

describe('selectPolicy: which engine a function gets', () => {
  it('without a function: the built-in over every rule (the embedded default)', async () => {
    const { policy, rules } = await selectPolicy();

    expect([policy.engine, rules]).toEqual(['builtin', 'bundled']);
    expect(policy.evaluate({ actor: system, action: 'get', resources: [C] })).toEqual({
      allow: true,
      reason: 'allowed by system-read-all',
    });
  });

  it('with a function and no bundle: the built-in restricted to that function', async () => {
    const { policy } = await selectPolicy({ function: 'reply', policyDir: await tempDir() });

    expect(policy.engine).toBe('builtin');
    expect((policy as RulesPolicy).function).toBe('reply');
    expect(policy.evaluate({ actor: reply, action: 'get', resources: [ANSWER] }).allow).toBe(true);
    expect(policy.evaluate({ actor: reply, action: 'put', resources: [ANSWER] })).toEqual({
      allow: false,
      reason: `no rule allows user function:reply to put ${ANSWER}`,
    });
  });

  it('reads rules.json from the policy directory when it is there', async () => {
    const dir = await tempDir();
    const narrowed = JSON.parse(JSON.stringify(RULES)) as { functions: Record<string, string[]> };
    narrowed.functions.reply = ['system-catalog'];
    await writeFile(join(dir, 'rules.json'), JSON.stringify(narrowed));

    const { policy, rules } = await selectPolicy({ function: 'reply', policyDir: dir });

    expect(rules).toBe(join(dir, 'rules.json'));
    expect(policy.evaluate({ actor: reply, action: 'get', resources: [ANSWER] }).allow).toBe(false);
  });

  it('loads <function>.wasm when present, and fails rather than falling back when it does not load', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'plan.wasm'), EMPTY_WASM);

    await expect(selectPolicy({ function: 'plan', policyDir: dir })).rejects.toThrow(ConfigError);
    // Another function of the same directory has no bundle: built-in.
    expect((await selectPolicy({ function: 'tool', policyDir: dir })).policy.engine).toBe('builtin');
  });

  it('looks for bundles in wasmDir instead of policyDir when both are given', async () => {
    const policyDir = await tempDir();
    const wasmDir = await tempDir();
    await writeFile(join(policyDir, 'plan.wasm'), EMPTY_WASM);

    expect((await selectPolicy({ function: 'plan', policyDir, wasmDir })).policy.engine).toBe('builtin');
    await writeFile(join(wasmDir, 'plan.wasm'), Buffer.from('garbage'));
    await expect(selectPolicy({ function: 'plan', policyDir, wasmDir })).rejects.toThrow(
      /not an OPA wasm module/,
    );
  });

  it.each([
    ['an unknown function', { function: 'nope' }, /no policy for function "nope"/],
  ])('fails with ConfigError for %s', async (_label, options, message) => {
    const selecting = selectPolicy(options);
    await expect(selecting).rejects.toThrow(ConfigError);
    await expect(selecting).rejects.toThrow(message);
  });

  it.each([
    ['rules.json that is not JSON', '{"version": 1,', /rules\.json is not JSON/],
    ['rules.json that is not a rules document', '{"version": 2, "rules": []}', /invalid policy rules/],
  ])('fails with ConfigError for %s', async (_label, text, message) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'rules.json'), text);

    const selecting = selectPolicy({ function: 'plan', policyDir: dir });

    await expect(selecting).rejects.toThrow(ConfigError);
    await expect(selecting).rejects.toThrow(message);
  });

  it('builtinPolicy(fn) is the bundled rules of fn', () => {
    expect(builtinPolicy('reply').evaluate({ actor: reply, action: 'put', resources: [C] }).allow).toBe(
      false,
    );
    expect(builtinPolicy().evaluate({ actor: reply, action: 'put', resources: [C] }).allow).toBe(true);
  });
});

describe('composeFromEnv with CLD_FUNCTION / CLD_POLICY_DIR / CLD_POLICY_WASM_DIR', () => {
  it('rejects a malformed CLD_FUNCTION at init, naming it', () => {
    expect(() => parseEnv({ CLD_FUNCTION: 'Plan!' })).toThrow(ConfigError);
    expect(() => parseEnv({ CLD_FUNCTION: 'Plan!' })).toThrow(/CLD_FUNCTION/);
  });

  it.each(
    FUNCTIONS,
  )('starts the %s function; only the local bundle lets the operator seed the catalog', async (fn) => {
    const dataDir = await tempDir();

    const deps = await composeFromEnv({
      CLD_DATA_DIR: dataDir,
      CLD_FUNCTION: fn,
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    });
    const tool = deps.catalog.tools[0];
    expect(tool).toBeDefined();
    const seeding = deps.resources.put(SYSTEM_ACTOR, tool as NonNullable<typeof tool>);

    if (fn === 'local') expect((await seeding).created).toBe(true);
    else await expect(seeding).rejects.toThrow(`no rule allows system operator to put ${tool?.meta.id}`);
  });

  it("gates every access with the selected function's policy and puts its reason in the error", async () => {
    const dataDir = await tempDir();
    const policyDir = join(dataDir, 'policies');
    await mkdir(policyDir);
    const deps = await composeFromEnv({
      CLD_DATA_DIR: dataDir,
      CLD_FUNCTION: 'reply',
      CLD_POLICY_DIR: policyDir,
      POWERTOOLS_LOG_LEVEL: 'SILENT',
    });
    const message = {
      meta: withMeta({ type: 'common.Message', name: 'hello', parent: C }),
      role: 'user' as const,
      content: 'hi',
    };

    const error = await deps.resources.put(reply, message).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PolicyDeniedError);
    const reason = `no rule allows user function:reply to put ${message.meta.id}`;
    expect((error as PolicyDeniedError).message).toBe(`policy denied put: ${reason}`);
    expect((error as PolicyDeniedError).toJSON().details).toMatchObject({
      reason,
      kind: 'user',
      action: 'put',
    });
  });
});
