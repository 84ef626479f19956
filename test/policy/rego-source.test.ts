import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { divergentGlob } from '../../shared/policy/glob.js';
import {
  BLANK_CHARACTERS,
  compileGlob,
  compilePattern,
  compileRules,
  indexRules,
  isPolicyUrn,
  MAX_URN_LENGTH,
  parseRulesDocument,
  URN_PATTERN,
} from '../../shared/policy/rules.js';
import { isUrn } from '../../shared/urn.js';
import { FUNCTIONS, REPO, RULES, URNS, urnSamples } from './table.js';

/**
 * Tests run without OPA, so these checks pin the Rego sources to the TypeScript reference where
 * they must agree textually (URN namespaces, length bound, blanks, reasons, one entry policy per
 * function), and check the shared index layout. The Rego tests (policies/*_test.rego) run the
 * same decision table wherever `opa test policies/` can run (npm run build:policies runs them).
 */

const LIB = readFileSync(join(REPO, 'policies/lib/cld.rego'), 'utf8');
const CASES_TEST = readFileSync(join(REPO, 'policies/cases_test.rego'), 'utf8');

describe('policies/lib/cld.rego agrees with shared/policy/rules.ts', () => {
  it('has the same URN namespaces, length bound and blank characters', () => {
    // The Rego checks the grammar with string tests (no regex.match on the wasm hot path); the
    // URN rows of test/policy/decision-table.test.ts run both on the same samples.
    const namespaces = /\^cld:\(([a-z|]+)\)/.exec(URN_PATTERN)?.[1]?.split('|');
    expect(namespaces).toEqual(['common', 'plan', 'tool', 'doc']);
    expect(LIB).toMatch(/^namespaces := \{"common", "plan", "tool", "doc"\}$/m);
    expect(LIB).toMatch(new RegExp(`^max_urn_length := ${MAX_URN_LENGTH}$`, 'm'));
    const blank = /^blank := ("[^"\n]*")$/m.exec(LIB)?.[1] as string;
    expect(JSON.parse(blank)).toBe(BLANK_CHARACTERS);
    expect([...BLANK_CHARACTERS]).toContain('\u00a0');
    expect([...BLANK_CHARACTERS]).toContain('\u2003');
  });

  it('uses no regex.match (recompiled at every wasm evaluation)', () => {
    const code = LIB.split('\n').filter((line) => !line.trimStart().startsWith('#'));
    expect(code.join('\n')).not.toMatch(/\bregex\./);
  });

  it('gives the same fixed reasons', () => {
    for (const reason of [
      'malformed input: a string is not well-formed Unicode',
      'malformed input: not an object',
      'actor is empty',
      'malformed input: action is not a string',
      'malformed input: tool is not an object',
      'request names no resources',
      'no actor may delete resources',
    ]) {
      expect(LIB).toContain(`deny("${reason}")`);
    }
    expect(LIB).toContain('"malformed URN: "');
    expect(LIB).toContain('"no rule allows ", inp.actor.kind, " ", inp.actor.id, " to ", inp.action, " ", r');
    expect(LIB).toContain('"allowed by "');
  });

  it('never iterates resources with `every` (true over an empty list)', () => {
    const code = LIB.split('\n').filter((line) => !line.trimStart().startsWith('#'));
    expect(code.join('\n')).not.toMatch(/\bevery\b/);
  });
});

describe('the policy URN grammar equals parseUrn', () => {
  const C = URNS.C as string;
  const samples = urnSamples();

  // parseUrn bounds the storage key (`cld/<path>_<shape>.json`, longer than the URN: shared/urn.ts
  // keyOf), the policies the URN's length (MAX_URN_LENGTH): below both bounds they agree; a URN the
  // policies accept may still have a key over 1,024 bytes, which parseUrn (and so ResourceIndex,
  // before it asks the policy) rejects.
  const keyFits = (sample: string) => sample.length + 1 + sample.length + '.json'.length <= 1024;

  it.each(samples.map((s) => [JSON.stringify(s).slice(0, 90), s]))('%s', (_label, sample) => {
    // Each sample asserts something: a URN is a policy URN; below the key bound both agree; above
    // it, parseUrn rejects the sample (its storage key would not fit) whatever the policies say.
    expect.hasAssertions();
    if (isUrn(sample)) expect(isPolicyUrn(sample)).toBe(true);
    if (keyFits(sample)) expect(isPolicyUrn(sample)).toBe(isUrn(sample));
    else expect(isUrn(sample)).toBe(false);
  });

  it('bounds the length where the URN alone would make a key over 1,024 bytes; parseUrn bounds the key', () => {
    let urn = C;
    while (urn.length + 2 * 27 <= MAX_URN_LENGTH) urn += '/plan.Task.0123456789abcdef';
    const pad = MAX_URN_LENGTH - urn.length - '/plan.Task.0123456789abcdef'.length;
    const longest = `${urn}/plan.Task${'x'.repeat(pad)}.0123456789abcdef`;
    expect(longest.length).toBe(MAX_URN_LENGTH);
    expect([isPolicyUrn(longest), isUrn(longest)]).toEqual([true, false]);
    const tooLong = longest.replace('/plan.Taskx', '/plan.Taskxx');
    expect([isPolicyUrn(tooLong), isUrn(tooLong)]).toEqual([false, false]);
  });
});

describe('one entry policy per function', () => {
  const entries = readdirSync(join(REPO, 'policies'))
    .filter((f) => f.endsWith('.rego') && !f.endsWith('_test.rego'))
    .map((f) => f.slice(0, -'.rego'.length))
    .sort();

  it('has exactly the functions of policies/rules.json', () => {
    expect(entries).toEqual([...FUNCTIONS].sort());
  });

  it.each(FUNCTIONS)('%s.rego reads its own rules, defaults to deny and is tested', (fn) => {
    const source = readFileSync(join(REPO, 'policies', `${fn}.rego`), 'utf8');
    expect(source).toMatch(new RegExp(`^package cld\\.${fn}$`, 'm'));
    expect(source).toMatch(/^import rego\.v1$/m);
    expect(source).toMatch(/^default decision := \{"allow": false, "reason": "[^"]+"\}$/m);
    expect(source).toMatch(
      new RegExp(`^decision := lib\\.decision\\(input, data\\.cld\\.index\\.${fn}\\)$`, 'm'),
    );
    // The table in eight tests per function (cases_test.rego `chunks`), each share k of its cases.
    for (let k = 0; k < 8; k++) {
      expect(CASES_TEST).toMatch(
        new RegExp(`^test_${fn}_cases_${k} if table_holds\\("${fn}", ${k}\\)$`, 'm'),
      );
    }
    expect(CASES_TEST).toMatch(/^chunks := 8$/m);
  });
});

describe('compileRules: the data of the wasm bundles', () => {
  it("indexes a function's granted rules by actor kind and action, in document order (as lib.index_rules)", () => {
    // The same document and expectation as test_index_rules_keeps_document_order_and_grants in
    // policies/lib/cld_test.rego.
    const document = parseRulesDocument({
      version: 1,
      functions: { f: ['a', 'b'] },
      rules: [
        { id: 'a', description: '', actor: 'user', actions: ['get', 'list'], resources: ['{conversation}'] },
        {
          id: 'b',
          description: '',
          actor: 'user',
          actions: ['get'],
          resources: ['cld:doc.Document.*', '{conversation}/**'],
        },
        { id: 'c', description: '', actor: 'user', actions: ['get'], resources: ['cld:**'] },
      ],
    });

    const exact = compileGlob('');
    expect(indexRules(document, 'f')).toEqual({
      'user:get': [
        { id: 'a', patterns: [{ base: 'conversation', glob: '', matcher: exact }] },
        {
          id: 'b',
          patterns: [
            {
              base: null,
              glob: 'cld:doc.Document.*',
              matcher: {
                kind: 'segments',
                head: [{ prefix: 'cld:doc.Document.', star: true }],
                tail: [],
                deep: false,
              },
            },
            { base: 'conversation', glob: '/**', matcher: { kind: 'prefix', prefix: '/' } },
          ],
        },
      ],
      'user:list': [{ id: 'a', patterns: [{ base: 'conversation', glob: '', matcher: exact }] }],
    });
    expect(exact).toEqual({ kind: 'segments', head: [{ prefix: '', star: false }], tail: [], deep: false });
  });

  it('holds every function of policies/rules.json under data.cld.index', () => {
    const data = compileRules(RULES);

    expect(Object.keys(data.cld.index).sort()).toEqual([...FUNCTIONS].sort());
    expect(data.cld.index.reply?.['user:put']).toBeUndefined();
    expect(data.cld.index.reply?.['user:get']?.map((r) => r.id)).toEqual(['user-read-own-conversation']);
    expect(JSON.parse(JSON.stringify(data))).toEqual(data);
  });

  const exact = { kind: 'segments', head: [{ prefix: '', star: false }], tail: [], deep: false };
  it.each([
    ['{task}/**', { base: 'task', glob: '/**', matcher: { kind: 'prefix', prefix: '/' } }],
    ['{conversation}', { base: 'conversation', glob: '', matcher: exact }],
    [
      'cld:common.Tool.*',
      {
        base: null,
        glob: 'cld:common.Tool.*',
        matcher: {
          kind: 'segments',
          head: [{ prefix: 'cld:common.Tool.', star: true }],
          tail: [],
          deep: false,
        },
      },
    ],
    [
      'cld:common.{Assistant,Tool}.*',
      { base: null, glob: 'cld:common.{Assistant,Tool}.*', matcher: { kind: 'glob' } },
    ],
  ])('splits %s into its placeholder, glob and matcher', (pattern, compiled) => {
    expect(compilePattern(pattern)).toEqual(compiled);
  });

  // The same globs and matchers as test_compile_glob in policies/lib/cld_test.rego.
  it.each([
    ['cld:**', { kind: 'prefix', prefix: 'cld:' }],
    [
      '/plan.Task.*/**/plan.Task.*',
      {
        kind: 'segments',
        head: [
          { prefix: '', star: false },
          { prefix: 'plan.Task.', star: true },
        ],
        tail: [{ prefix: 'plan.Task.', star: true }],
        deep: true,
      },
    ],
    [
      'cld:doc.Document.*/**',
      { kind: 'segments', head: [{ prefix: 'cld:doc.Document.', star: true }], tail: [], deep: true },
    ],
    ['cld:common.{Assistant,Tool}.*', { kind: 'glob' }],
    ['a/**/b/**', { kind: 'glob' }],
    ['a?c', { kind: 'glob' }],
    ['a**b', { kind: 'glob' }],
  ])('compiles the glob %s to string tests where it can', (glob, matcher) => {
    expect(compileGlob(glob)).toEqual(matcher);
  });

  it.each([
    ['a placeholder not leading the pattern', 'cld:x/{task}/**'],
    ['two placeholders', '{conversation}/{task}'],
  ])('rejects a rule with %s', (_label, pattern) => {
    const document = {
      version: 1,
      rules: [{ id: 'x', description: '', actor: 'user', actions: ['get'], resources: [pattern] }],
    };
    expect(() => parseRulesDocument(document)).toThrow(/placeholder/);
  });

  it.each([
    ['cld:a/**/z', 'a literal, `**`, a literal'],
    ['x**x', 'a literal, `**`, a literal'],
    ['cld:a/***', 'three or more `*` in a row'],
    ['?', 'a lone `?`'],
    ['cld:{a/**,b}', '`**` inside `{...}` alternatives'],
  ])("rejects a rule glob OPA's Go evaluator matches differently: %s", (glob, why) => {
    expect(divergentGlob(glob)).toContain(why);
    const document = {
      version: 1,
      rules: [{ id: 'x', description: '', actor: 'user', actions: ['get'], resources: [glob] }],
    };
    expect(() => parseRulesDocument(document)).toThrow(/rule x has a glob OPA's engines match differently/);
  });

  it.each([
    'cld:**',
    '/**',
    '/plan.Task.*/**/plan.Task.*',
    'cld:doc.Document.*/**',
  ])('accepts the rule glob %s (not a divergent shape)', (glob) => {
    expect(divergentGlob(glob)).toBeUndefined();
  });

  it('rejects a function that grants an unknown rule, and duplicate rule ids', () => {
    const rule = { id: 'x', description: '', actor: 'user', actions: ['get'], resources: ['cld:**'] };
    expect(() => parseRulesDocument({ version: 1, functions: { f: ['y'] }, rules: [rule] })).toThrow(
      /function f grants unknown rule y/,
    );
    expect(() => parseRulesDocument({ version: 1, rules: [rule, rule] })).toThrow(/duplicate rule id x/);
  });
});
