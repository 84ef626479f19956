import * as z from 'zod';
import { ConfigError } from '../errors.js';
import { lazyStrictObject } from '../resources/lazy-schema.js';
import type { ConverseRequest, ModelStep } from './port.js';

/**
 * Per-step model setting (issue 25 item 4): the planner, the inner loop's first turn, the turns
 * that follow tool results (usually the answer) and the supervisor's verdict may each use a model
 * of their own; a step without one uses the adapter's default (`CLD_MODEL_ID`).
 *
 * | variable | step |
 * |---|---|
 * | `CLD_MODEL_ID_PLAN` | `plan`: the `create_plan` call |
 * | `CLD_MODEL_ID_ASSISTANT` | `assistant`: an inner-loop turn before any tool result |
 * | `CLD_MODEL_ID_ANSWER` | `answer`: an inner-loop turn after tool results |
 * | `CLD_MODEL_ID_JUDGE` | `judge`: the supervisor's `submit_verdict` call |
 * | `CLD_MODELS` | the same as JSON, e.g. `{"plan":"…","judge":"…"}`; a `CLD_MODEL_ID_<STEP>` wins |
 */
export const MODEL_STEPS = ['plan', 'assistant', 'answer', 'judge'] as const satisfies readonly ModelStep[];

/** A model id per step; a step left out uses the default model. */
export type StepModels = Partial<Record<ModelStep, string>>;

/** JSON of `CLD_MODELS` / CDK context `cld:models`: only the known steps, each a non-empty id. */
export const StepModelsSchema = lazyStrictObject(() => ({
  plan: z.string().trim().min(1).optional(),
  assistant: z.string().trim().min(1).optional(),
  answer: z.string().trim().min(1).optional(),
  judge: z.string().trim().min(1).optional(),
}));

/** The variable of one step's model, e.g. `CLD_MODEL_ID_PLAN`. */
export type StepModelVariable = `CLD_MODEL_ID_${Uppercase<ModelStep>}`;

/**
 * Parses `CLD_MODELS` (JSON) and the `CLD_MODEL_ID_<STEP>` variables into one map, the single
 * variables winning over the JSON.
 * @throws ConfigError naming `CLD_MODELS` when it is not JSON or names an unknown step / an empty id
 */
export function stepModelsOf(
  env: { CLD_MODELS?: string | undefined } & Partial<Record<StepModelVariable, string | undefined>>,
): StepModels {
  let fromJson: StepModels = {};
  if (env.CLD_MODELS !== undefined && env.CLD_MODELS.trim() !== '') {
    let json: unknown;
    try {
      json = JSON.parse(env.CLD_MODELS);
    } catch (error) {
      throw new ConfigError('CLD_MODELS is not JSON: expected e.g. {"plan":"<model id>"}', { cause: error });
    }
    const parsed = StepModelsSchema.safeParse(json);
    if (!parsed.success)
      throw new ConfigError(
        `CLD_MODELS: ${z.prettifyError(parsed.error)} (steps: ${MODEL_STEPS.join(', ')})`,
        { cause: parsed.error },
      );
    fromJson = Object.fromEntries(Object.entries(parsed.data).filter(([, id]) => id !== undefined));
  }
  const models: StepModels = { ...fromJson };
  for (const step of MODEL_STEPS) {
    const id = env[`CLD_MODEL_ID_${step.toUpperCase() as Uppercase<ModelStep>}`];
    if (id) models[step] = id;
  }
  return models;
}

/** The model id of a request: its own `modelId`, else its step's model, else `defaultId`. */
export function modelIdOf(request: ConverseRequest, defaultId: string, steps: StepModels = {}): string {
  return request.modelId ?? (request.step === undefined ? undefined : steps[request.step]) ?? defaultId;
}
