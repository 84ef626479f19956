import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { addModelRegionRule, MODEL_REGION_RULE } from '../../infra/lib/stack.js';
import { PROFILE_SOURCE_REGIONS } from '../../shared/llm/profiles.js';
import { cdkJsonContext } from './helpers.js';

/** The CloudFormation `Rules` assertion on the model's Region (issue 24): refused before anything is created. */
describe('the model-Region rule', () => {
  const rulesOf = (modelId: string) => {
    const stack = new Stack(new App(), 'S');
    addModelRegionRule(stack, modelId);
    return (Template.fromStack(stack).toJSON() as { Rules?: Record<string, unknown> }).Rules;
  };

  it('asserts a us. profile is deployed to a Region of its geography, naming the fix', () => {
    const rules = rulesOf('us.anthropic.claude-haiku-4-5-20251001-v1:0');
    expect(rules?.[MODEL_REGION_RULE]).toEqual({
      Assertions: [
        {
          Assert: { 'Fn::Contains': [PROFILE_SOURCE_REGIONS.us, { Ref: 'AWS::Region' }] },
          AssertDescription: expect.stringContaining(
            'deploy with -c cld:modelId=global.anthropic.claude-haiku-4-5-20251001-v1:0',
          ),
        },
      ],
    });
  });

  it.each([
    'eu.anthropic.claude-haiku-4-5-20251001-v1:0',
    'apac.anthropic.claude-haiku-4-5-20251001-v1:0',
  ])('asserts the Regions of %s', (modelId) => {
    const geo = modelId.split('.')[0] as string;
    const rule = rulesOf(modelId)?.[MODEL_REGION_RULE] as { Assertions: { Assert: unknown }[] };
    expect(rule.Assertions[0]?.Assert).toEqual({
      'Fn::Contains': [PROFILE_SOURCE_REGIONS[geo], { Ref: 'AWS::Region' }],
    });
  });

  it.each([
    'global.anthropic.claude-haiku-4-5-20251001-v1:0',
    'anthropic.claude-3-haiku-20240307-v1:0',
    'arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc',
    'offline',
  ])('adds no rule for %s (callable from any Region, or checked by Bedrock itself)', (modelId) => {
    expect(rulesOf(modelId)?.[MODEL_REGION_RULE]).toBeUndefined();
    expect(rulesOf(modelId)).toHaveProperty('CheckBootstrapVersion');
  });

  it('defaults to the global profile, which every commercial Region can call', () => {
    expect(cdkJsonContext()['cld:modelId']).toBe('global.anthropic.claude-haiku-4-5-20251001-v1:0');
  });
});
