import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Aws, CfnRule, Fn } from 'aws-cdk-lib';
import type { Construct, IConstruct } from 'constructs';
import { PROFILE_SOURCE_REGIONS, profileGeography } from '../../shared/llm/profiles.js';
import { checkBundles } from '../../shared/policy/manifest.js';
import { parseRulesDocument } from '../../shared/policy/rules.js';

/**
 * Synth-time checks of a {@link Cld} (infra/lib/cld.ts): compiled policy bundles that match
 * their sources, and a model the stack's Region may call.
 */

/** Id of the synth error on compiled policy bundles that do not match the Rego sources. */
export const POLICY_BUNDLES_STALE = 'cld:policyBundlesStale';

/**
 * Fails synth when `<projectRoot>/policies/dist` holds compiled policy bundles that were not built
 * from the Rego sources and rules data now in policies/ (shared/policy/manifest.ts
 * `checkBundles`): an error annotation, so `cdk synth` and `cdk deploy` stop however they are run
 * (`npm run deploy` checks the same first, through `build:policies --require`), instead of
 * shipping policies other than the reviewed sources. No policies/dist at all is a warning per
 * function instead (infra/lib/step-function.ts): each then enforces policies/rules.json alone.
 * @throws ValidationError when policies/rules.json does not parse
 */
export function checkPolicyBundles(scope: IConstruct, projectRoot: string): void {
  const policies = join(projectRoot, 'policies');
  const dist = join(policies, 'dist');
  if (!existsSync(dist)) return;
  const rules = parseRulesDocument(JSON.parse(readFileSync(join(policies, 'rules.json'), 'utf8')));
  const check = checkBundles(policies, dist, Object.keys(rules.functions));
  if (!check.fresh) {
    Annotations.of(scope).addError(
      `${POLICY_BUNDLES_STALE}: the compiled policies in policies/dist do not match the sources (${check.problems.join('; ')}); run npm run build:policies (it needs opa on PATH) and commit policies/dist`,
    );
  }
}

/** Logical id of the CloudFormation rule that refuses a geography profile outside its Regions. */
export const MODEL_REGION_RULE = 'ModelProfileRegion';

/**
 * A CloudFormation `Rules` assertion (checked by CloudFormation before it creates anything) that
 * the stack's Region may call the configured model: a system-defined inference profile of a
 * geography (`us.`, `eu.`, …) only from that geography's source Regions
 * (shared/llm/profiles.ts). Without it the stack deploys and every question fails at run time
 * with Bedrock's "The provided model identifier is invalid". No rule for `global.` profiles,
 * foundation models, ARNs or `offline`. `cld doctor` reports the same before deploy.
 */
export function addModelRegionRule(scope: Construct, modelId: string): CfnRule | undefined {
  const geo = profileGeography(modelId);
  const regions = geo && geo !== 'global' ? PROFILE_SOURCE_REGIONS[geo] : undefined;
  if (!regions) return undefined;
  const model = modelId.slice((geo as string).length + 1);
  return new CfnRule(scope, MODEL_REGION_RULE, {
    assertions: [
      {
        assert: Fn.conditionContains([...regions], Aws.REGION),
        assertDescription:
          `cld:modelId ${modelId} is a ${geo}. inference profile, callable only from ${regions.join(', ')}: ` +
          `deploy with -c cld:modelId=global.${model} (or this Region's geography profile)`,
      },
    ],
  });
}
