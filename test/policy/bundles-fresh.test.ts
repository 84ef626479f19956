import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { checkPolicyBundles, POLICY_BUNDLES_STALE } from '../../infra/lib/stack.js';
import { checkBundles, MANIFEST_FILE, PROBE_BUNDLE, parseManifest } from '../../shared/policy/manifest.js';
import { FUNCTIONS, REPO } from './table.js';

/**
 * The committed bundles (policies/dist) must be built from the committed sources: a change to a
 * Rego file or to policies/rules.json without `npm run build:policies` (and committing
 * policies/dist) fails here. `npm run deploy` makes the same check before it ships them.
 */

const POLICIES = join(REPO, 'policies');
const DIST = join(POLICIES, 'dist');

/** A copy of policies/ (with dist/) to change without touching the work tree. */
async function copyOfPolicies(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cld-fresh-'));
  await cp(POLICIES, join(dir, 'policies'), { recursive: true });
  return join(dir, 'policies');
}

describe('the committed policy bundles (policies/dist)', () => {
  it('are fresh: built from the current Rego sources and rules data (else run npm run build:policies and commit policies/dist)', async () => {
    const check = checkBundles(POLICIES, DIST, FUNCTIONS);

    expect(check.fresh ? [] : check.problems).toEqual([]);
  });

  it('record the OPA version that built them, every Rego file and the rules data', async () => {
    const manifest = parseManifest(await readFile(join(DIST, MANIFEST_FILE), 'utf8'));

    expect(manifest.opa).toMatch(/^(0\.(6[1-9]|[7-9]\d)|[1-9]\d*\.\d+)\.\d+$/);
    expect(Object.keys(manifest.sources)).toEqual(
      expect.arrayContaining([
        'rules.json',
        'lib/cld.rego',
        'lib/probe.rego',
        ...FUNCTIONS.map((fn) => `${fn}.rego`),
      ]),
    );
    expect(Object.keys(manifest.bundles).sort()).toEqual([...FUNCTIONS, PROBE_BUNDLE].sort());
    for (const fn of FUNCTIONS) expect(manifest.bundles[fn]?.entrypoints).toEqual([`cld/${fn}/decision`]);
  });
});

describe('checkBundles', () => {
  it.each([
    [
      'a Rego file changed',
      'lib/cld.rego',
      (text: string) => `${text}\n# changed\n`,
      'policies/lib/cld.rego changed',
    ],
    [
      'the rules data changed',
      'rules.json',
      (text: string) => text.replace('"version": 1', '"version":1'),
      'policies/rules.json changed',
    ],
    [
      'a Rego test changed',
      'cases_test.rego',
      (text: string) => `${text}\n`,
      'policies/cases_test.rego changed',
    ],
  ])('says stale when %s, naming the file', async (_label, file, change, problem) => {
    const policies = await copyOfPolicies();
    const path = join(policies, file);
    await writeFile(path, change(await readFile(path, 'utf8')));

    const check = checkBundles(policies, join(policies, 'dist'), FUNCTIONS);

    expect(check.fresh).toBe(false);
    expect(check.fresh ? [] : check.problems).toEqual([`${problem} since the bundles were built`]);
    await rm(join(policies, '..'), { recursive: true, force: true });
  });

  it('says stale for a new Rego file, a changed bundle, a missing bundle and a missing manifest', async () => {
    const policies = await copyOfPolicies();
    const dist = join(policies, 'dist');
    await writeFile(join(policies, 'extra.rego'), 'package extra\n');
    await writeFile(join(dist, 'plan.wasm'), 'not the build output');
    await rm(join(dist, 'tool.wasm'));

    const check = checkBundles(policies, dist, FUNCTIONS);

    expect(check.fresh ? [] : check.problems).toEqual([
      'policies/extra.rego is new since the bundles were built',
      'plan.wasm is not the file the build wrote',
      'tool.wasm (bundle tool) is missing',
    ]);
    await rm(join(dist, MANIFEST_FILE));
    const without = checkBundles(policies, dist, FUNCTIONS);
    expect(without.fresh ? [] : without.problems).toEqual([`${MANIFEST_FILE} is missing`]);
    await rm(join(policies, '..'), { recursive: true, force: true });
  });

  it('says stale when a function of the rules has no bundle in the manifest', async () => {
    const check = checkBundles(POLICIES, DIST, [...FUNCTIONS, 'newcomer']);

    expect(check.fresh ? [] : check.problems).toEqual(['the manifest lists no bundle for newcomer']);
  });
});

describe('the CDK app on stale bundles (infra/lib/stack.ts checkPolicyBundles)', () => {
  /** The synth errors and warnings a stack got, as text. */
  function messages(stack: Stack, type: 'aws:cdk:error' | 'aws:cdk:warning'): string[] {
    return stack.node.metadata.filter((entry) => entry.type === type).map((entry) => String(entry.data));
  }

  it('fails synth naming the changed source when policies/dist does not match policies/', async () => {
    const policies = await copyOfPolicies();
    const root = join(policies, '..');
    await writeFile(join(policies, 'plan.rego'), `${await readFile(join(policies, 'plan.rego'), 'utf8')}\n`);
    const stack = new Stack(new App(), 'Stale');

    checkPolicyBundles(stack, root);

    const errors = messages(stack, 'aws:cdk:error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(POLICY_BUNDLES_STALE);
    expect(errors[0]).toContain('policies/plan.rego changed since the bundles were built');
    expect(errors[0]).toContain('npm run build:policies');
    // What the CLI does with it: synth reports the error (cdk synth and cdk deploy exit 1).
    expect(
      Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp(POLICY_BUNDLES_STALE)),
    ).toHaveLength(1);
    await rm(root, { recursive: true, force: true });
  });

  it('says nothing for the committed bundles, nor without policies/dist (a warning per function covers that)', async () => {
    const fresh = new Stack(new App(), 'Fresh');
    checkPolicyBundles(fresh, REPO);
    expect(messages(fresh, 'aws:cdk:error')).toEqual([]);

    const policies = await copyOfPolicies();
    await rm(join(policies, 'dist'), { recursive: true });
    const bare = new Stack(new App(), 'Bare');
    checkPolicyBundles(bare, join(policies, '..'));
    expect(messages(bare, 'aws:cdk:error')).toEqual([]);
    await rm(join(policies, '..'), { recursive: true, force: true });
  });
});
