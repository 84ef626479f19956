/**
 * `cld:models` (issue 25 item 4): a model per step reaches the model-calling functions as
 * `CLD_MODELS`, and their roles may invoke each model (and no other), with cdk-nag still clean.
 */

import { App, Stack } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { bedrockStatements } from '../../infra/lib/access.js';
import { resolveConfig } from '../../infra/lib/config.js';
import { ConfigError } from '../../shared/errors.js';
import {
  cdkJsonContext,
  isAllowed,
  logicalId,
  roleStatements,
  type Synthesized,
  synthesize,
} from './helpers.js';

const MODEL_ID = String(cdkJsonContext()['cld:modelId']);
const JUDGE = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const MODELS = { plan: MODEL_ID, judge: JUDGE };

/** A synth takes about 10 s of CPU; at load 20 on 2 cores about a minute (see stack.test.ts). */
const SYNTH_TIMEOUT_MS = 180_000;

let synthesized: Synthesized;

beforeAll(() => {
  synthesized = synthesize({ context: { 'cld:models': JSON.stringify(MODELS) } });
}, SYNTH_TIMEOUT_MS);

function ids(name: string) {
  const prefix = `${name[0]?.toUpperCase()}${name.slice(1)}Step`;
  return {
    fn: logicalId(synthesized.json, 'AWS::Lambda::Function', `${prefix}Function`),
    role: logicalId(synthesized.json, 'AWS::IAM::Role', `${prefix}Role`),
  };
}

describe('cld:models', () => {
  it('gives the model-calling functions CLD_MODELS and lets them invoke the judge profile', () => {
    const judgeProfile = `arn:aws:bedrock:eu-west-1:111122223333:inference-profile/${JUDGE}`;
    const judgeModel = `arn:aws:bedrock:us-west-2::foundation-model/${JUDGE.slice(JUDGE.indexOf('.') + 1)}`;
    for (const name of ['plan', 'assistant', 'tool']) {
      const expected = name !== 'tool';
      const env = (
        synthesized.json.Resources[ids(name).fn]?.Properties?.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables;
      expect(env.CLD_MODELS, name).toBe(expected ? JSON.stringify(MODELS) : undefined);
      const statements = roleStatements(synthesized.json, ids(name).role);
      expect(isAllowed(statements, 'bedrock:InvokeModel', judgeProfile), name).toBe(expected);
      expect(
        isAllowed(statements, 'bedrock:InvokeModel', judgeModel, {
          'bedrock:InferenceProfileArn': judgeProfile,
        }),
        name,
      ).toBe(expected);
      // the model itself only through the profile
      expect(isAllowed(statements, 'bedrock:InvokeModel', judgeModel), name).toBe(false);
    }
  });

  it('passes cdk-nag AwsSolutions and Serverless with no unacknowledged error or warning', () => {
    const findings = synthesized.report.pluginReports
      .filter((report) => ['AwsSolutions', 'Serverless'].includes(report.pluginName))
      .flatMap((report) =>
        report.violations.map(
          (v) => `${v.severity} ${v.ruleName} at ${v.violatingConstructs?.[0]?.constructPath}`,
        ),
      );
    expect(findings).toEqual([]);
  });

  it('keeps statement ids unique per model', () => {
    const stack = new Stack(new App(), 'S');
    const sids = [...bedrockStatements(stack, MODEL_ID), ...bedrockStatements(stack, JUDGE, 'Step1')].map(
      (s) => s.sid,
    );
    expect(new Set(sids).size).toBe(sids.length);
  });

  it.each([
    ['an unknown step', { planner: JUDGE }, /cld:models/],
    ['offline as a step model', { judge: 'offline' }, /offline/],
  ])('rejects %s', (_, models, message) => {
    const context: Record<string, unknown> = { ...cdkJsonContext(), 'cld:models': models };
    expect(() => resolveConfig((key) => context[key])).toThrow(ConfigError);
    expect(() => resolveConfig((key) => context[key])).toThrow(message);
  });
});
