import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Decision } from '../../shared/policy/port.js';
import { compileRules } from '../../shared/policy/rules.js';
import { type Case, FUNCTIONS, inputOf, REPO, RULES, TABLE } from './table.js';

/**
 * Input generation for the differential fuzz of the policy engines (test/policy/fuzz.test.ts,
 * issue 22): seeded, so a failing run is repeated with its printed seed. Each input starts from a
 * decision-table case (so many are allowed and reach the deep checks: rules, placeholders, the
 * approval gate) and gets one to three mutations: a value of another JSON type where the policy
 * expects a string, object or array (type confusion); a lone surrogate, U+FFFD, a surrogate pair
 * or other non-ASCII text put into a string (Unicode); a glob metacharacter or `.`/`/` put into a
 * tool name or URN (glob); a tricky decision time (RFC 3339 or nearly); a key dropped. Some are
 * random JSON values from scratch.
 */

/** A small seeded PRNG (mulberry32): uniform 32-bit floats in [0, 1). */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One generated input: the function whose policy decides it, and what was done to it. */
export interface FuzzInput {
  function: string;
  input: unknown;
  /** Mutation labels (`type:actor.kind`, `unicode:resources.0`, `glob:tool.name`, ...). */
  mutations: string[];
  /**
   * True when a field every decision depends on has a wrong JSON type or is missing (the input,
   * actor, its kind and id; its conversation, message, task or tool when present; the action, the
   * resources or one of them; the tool when present; for `execute` the tool's name): every engine
   * must deny such an input ({@link typeConfused}).
   */
  typeConfused: boolean;
}

type Path = (string | number)[];

/** Fields whose wrong type must always deny (see {@link FuzzInput.typeConfused}). */
const GUARDED = new Set([
  '',
  'actor',
  'actor.kind',
  'actor.id',
  'actor.conversation',
  'actor.message',
  'actor.task',
  'actor.tool',
  'action',
  'resources',
  'tool',
]);

const UNICODE = [
  '\ud800',
  '\udfff',
  '\udc00x',
  'x\ud83d',
  '\ufffd',
  '\u{1f600}',
  '\uffff',
  'é',
  '\u0301',
  '０',
  '\u200b',
  '\u00a0',
  '\u202e',
  '\u0000',
  'İ',
  'ß',
  '\u{10ffff}',
];

const GLOB = ['*', '**', '?', '[', ']', '[!a]', '{', '}', '{a,b}', ',', '\\', '.', '/', '..', '-', '_'];

const TIMES = [
  '2026-01-01T00:00:00.000Z',
  '2026-01-01T00:10:00.000Z',
  '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:00.5Z',
  '2026-01-01T00:00:00.123456789Z',
  '2026-01-01T00:00:00.1234567890Z',
  '2026-01-01T00:00:00.Z',
  '2026-01-01T00:00:00+00:00',
  '2026-01-01T01:00:00+01:00',
  '2026-01-01t00:00:00z',
  '2026-01-01 00:00:00Z',
  '2026-02-29T00:00:00Z',
  '2028-02-29T00:00:00Z',
  '2100-02-29T00:00:00Z',
  '2000-02-29T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T23:59:60Z',
  '２026-01-01T00:00:00Z',
  '2026-01-01T00:00:00.000Z\u0000',
  '',
  '\uffff',
  '\u{1f600}',
  '9999-12-31T23:59:59.999999999Z',
  '0000-01-01T00:00:00Z',
];

/** The base inputs: every table case, as (function, input). */
function bases(): { function: string; input: unknown }[] {
  return TABLE.cases.map((c: Case) => ({ function: c.function, input: structuredClone(inputOf(c)) }));
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** A random JSON value of depth at most `depth`. */
function randomValue(random: () => number, depth: number): unknown {
  const kind = Math.floor(random() * (depth > 0 ? 8 : 6));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return pick(random, [0, 1, -1, 7, 1.5, 1e21, 2 ** 53, -0.25]);
    case 3:
      return pick(random, ['', 'execute', 'put', 'get', 'user', 'tool', 'write_note', 'never', ...UNICODE]);
    case 4:
      return pick(random, [[], {}]);
    case 5:
      return pick(random, GLOB);
    case 6:
      return Array.from({ length: 1 + Math.floor(random() * 3) }, () => randomValue(random, depth - 1));
    default: {
      const object: Record<string, unknown> = {};
      for (const key of [
        'actor',
        'kind',
        'id',
        'action',
        'resources',
        'tool',
        'name',
        'approval',
        'decision',
      ]) {
        if (random() < 0.3) object[key] = randomValue(random, depth - 1);
      }
      return object;
    }
  }
}

/** Every path to a value in `value` (the root is `[]`), objects and arrays included. */
function paths(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) paths(item, [...prefix, i], out);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) paths(item, [...prefix, key], out);
  }
  return out;
}

function get(value: unknown, path: Path): unknown {
  let current = value;
  for (const key of path) current = (current as Record<string | number, unknown> | undefined)?.[key];
  return current;
}

/** Sets (or, with `remove`, deletes) the value at a non-empty path; own properties only. */
function set(root: unknown, path: Path, value: unknown, remove = false): void {
  const parent = get(root, path.slice(0, -1)) as Record<string | number, unknown>;
  const key = path[path.length - 1] as string | number;
  if (remove) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else {
    Object.defineProperty(parent, key, { value, enumerable: true, writable: true, configurable: true });
  }
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A value of another JSON type than `value`'s, often wrapping it (`"execute"` → `["execute"]`). */
function confuse(random: () => number, value: unknown): unknown {
  const candidates = [[value], null, true, 7, typeof value === 'string' ? { value } : String(value), {}, []];
  const other = candidates.filter((c) => jsonType(c) !== jsonType(value));
  return pick(random, other);
}

/** Inserts `piece` into string `s` at a random place (or replaces it). */
function splice(random: () => number, s: string, piece: string): string {
  if (random() < 0.15) return piece;
  const at = Math.floor(random() * (s.length + 1));
  return `${s.slice(0, at)}${piece}${s.slice(at)}`;
}

function label(path: Path): string {
  return path.join('.');
}

/**
 * `count` inputs from `seed`. Deterministic: the same seed gives the same inputs.
 */
export function generate(seed: number, count: number): FuzzInput[] {
  const random = prng(seed);
  const pool = bases();
  const out: FuzzInput[] = [];
  while (out.length < count) {
    if (random() < 0.08) {
      const value = randomValue(random, 3);
      out.push({
        function: pick(random, FUNCTIONS),
        input: value,
        mutations: ['random'],
        typeConfused: typeConfused(value),
      });
      continue;
    }
    const base = pick(random, pool);
    const input = structuredClone(base.input);
    const entry: FuzzInput = {
      function: random() < 0.9 ? base.function : pick(random, FUNCTIONS),
      input,
      mutations: [],
      typeConfused: false,
    };
    const rounds = 1 + Math.floor(random() * 3);
    for (let round = 0; round < rounds; round++) mutate(random, entry);
    entry.typeConfused = typeConfused(entry.input);
    out.push(entry);
  }
  return out;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * True when a field every decision depends on has the wrong JSON type in `input` (see
 * {@link FuzzInput.typeConfused}); a missing required field counts as wrong.
 */
export function typeConfused(input: unknown): boolean {
  if (!isObject(input)) return true;
  const { actor, action, resources, tool } = input;
  if (!isObject(actor) || typeof actor.id !== 'string' || typeof actor.kind !== 'string') return true;
  for (const field of ['conversation', 'message', 'task', 'tool']) {
    if (field in actor && typeof actor[field] !== 'string') return true;
  }
  if (typeof action !== 'string') return true;
  if (!Array.isArray(resources) || resources.some((r) => typeof r !== 'string')) return true;
  if ('tool' in input && !isObject(tool)) return true;
  return action === 'execute' && isObject(tool) && typeof tool.name !== 'string';
}

function mutate(random: () => number, entry: FuzzInput): void {
  const all = paths(entry.input);
  const strings = all.filter((p) => typeof get(entry.input, p) === 'string');
  const kind = random();
  const input = entry.input as Record<string, unknown>;
  const put = (path: Path, value: unknown) => {
    if (path.length === 0) entry.input = value;
    else set(entry.input, path, value);
  };
  if (kind < 0.3) {
    // Type confusion, mostly on the fields the entry checks guard.
    const guarded = all.filter((p) => GUARDED.has(label(p)) || (p[0] === 'resources' && p.length === 2));
    const path = random() < 0.8 && guarded.length > 0 ? pick(random, guarded) : pick(random, all);
    const before = get(entry.input, path);
    const after = confuse(random, before);
    put(path, after);
    entry.mutations.push(`type:${label(path)}`);
  } else if (kind < 0.5 && strings.length > 0) {
    const path = pick(random, strings);
    put(path, splice(random, get(entry.input, path) as string, pick(random, UNICODE)));
    entry.mutations.push(`unicode:${label(path)}`);
  } else if (kind < 0.58 && all.length > 1) {
    // A key with non-ASCII text, or a lone surrogate, in an object.
    const objects = all.filter((p) => {
      const v = get(entry.input, p);
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    });
    if (objects.length > 0) {
      const path = pick(random, objects);
      set(entry.input, [...path, `k${pick(random, UNICODE)}`], randomValue(random, 1));
      entry.mutations.push(`unicode-key:${label(path)}`);
    }
  } else if (kind < 0.75 && input && typeof input === 'object' && !Array.isArray(input)) {
    // Glob metacharacters in tool names (approval globs) and URNs (rule globs).
    const tool = input.tool as Record<string, unknown> | undefined;
    const actor = input.actor as Record<string, unknown> | undefined;
    const piece = pick(random, GLOB);
    if (random() < 0.6 && tool && typeof tool === 'object' && typeof tool.name === 'string') {
      const name = splice(
        random,
        random() < 0.5 ? pick(random, ['write_note', 'search', 'send_x']) : tool.name,
        piece,
      );
      tool.name = name;
      if (actor && typeof actor === 'object' && random() < 0.85) actor.tool = name;
      entry.mutations.push('glob:tool.name');
    } else {
      const urns = strings.filter(
        (p) => p[0] === 'resources' || ['conversation', 'message', 'task'].includes(String(p[1])),
      );
      if (urns.length > 0) {
        const path = pick(random, urns);
        put(path, splice(random, get(entry.input, path) as string, piece));
        entry.mutations.push(`glob:${label(path)}`);
      }
    }
  } else if (kind < 0.9 && input && typeof input === 'object' && !Array.isArray(input)) {
    // Decision facts: tricky times, and approval values.
    const decision = input.decision as Record<string, unknown> | undefined;
    if (decision && typeof decision === 'object' && !Array.isArray(decision)) {
      const field = random() < 0.5 ? 'decidedAt' : 'expiresAt';
      decision[field] = pick(random, TIMES);
      entry.mutations.push(`time:decision.${field}`);
    } else {
      const tool = input.tool as Record<string, unknown> | undefined;
      if (tool && typeof tool === 'object' && !Array.isArray(tool)) {
        tool.approval = pick(random, ['never', 'always', null, 'NEVER', 'never ', '', 0, false]);
        entry.mutations.push('approval:tool.approval');
      }
    }
  } else if (all.length > 1) {
    const path = pick(random, all.slice(1));
    set(entry.input, path, undefined, true);
    entry.mutations.push(`drop:${label(path)}`);
  }
}

/** True when `opa` (>= 0.61) runs from PATH. */
export function opaOnPath(): boolean {
  const result = spawnSync('opa', ['version'], { encoding: 'utf8' });
  return result.status === 0 && /Version:\s*v?(0\.(6[1-9]|[7-9]\d)|[1-9]\d*\.\d+)\./.test(result.stdout);
}

/**
 * Decides every input with OPA's Go evaluator in one `opa eval` (batch: one process, one compile,
 * each input under `with input as`), from the Rego sources and the data the bundles get
 * (`compileRules`). An input is handed over as JSON, as the OPA server receives one (a lone
 * surrogate decodes to U+FFFD).
 * @throws Error when opa fails
 */
export function decideWithOpa(inputs: readonly FuzzInput[]): Decision[] {
  const work = mkdtempSync(join(tmpdir(), 'cld-fuzz-'));
  try {
    const data = join(work, 'data.json');
    writeFileSync(
      data,
      JSON.stringify({
        ...compileRules(RULES),
        fuzzinputs: inputs.map((i) => ({ function: i.function, input: i.input ?? null })),
      }),
    );
    // Each input goes through its function's entry policy under `with input as` inside a function
    // (the way policies/cases_test.rego runs the table): with the `with` in a comprehension of the
    // query itself, OPA 0.61 gave the default decision for every input.
    const batch = join(work, 'batch.rego');
    writeFileSync(
      batch,
      'package fuzzbatch\n\nimport rego.v1\n\n' +
        'decide(c) := d if {\n\tinp := c.input\n\td := data.cld[c.function].decision with input as inp\n}\n\n' +
        'decisions := [decide(c) | some c in data.fuzzinputs]\n',
    );
    const files = [
      join(REPO, 'policies/lib/cld.rego'),
      ...FUNCTIONS.map((fn) => join(REPO, `policies/${fn}.rego`)),
      batch,
    ];
    const query = 'x := data.fuzzbatch.decisions';
    const result = spawnSync(
      'opa',
      ['eval', '--format', 'json', ...files.flatMap((f) => ['-d', f]), '-d', data, query],
      { encoding: 'utf8', maxBuffer: 256 << 20 },
    );
    if (result.status !== 0) throw new Error(`opa eval failed: ${result.stderr || result.stdout}`);
    const parsed = JSON.parse(result.stdout) as { result: { bindings: { x: Decision[] } }[] };
    return parsed.result[0]?.bindings.x ?? [];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
