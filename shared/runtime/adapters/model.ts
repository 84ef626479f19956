import type { ModelConfig } from '../../llm/config.js';
import { modelConfigOf, modelNameOf } from '../../llm/config.js';
import type { ChatModel, ConverseResponse, Embedder } from '../../llm/port.js';
import { HashingEmbedder } from '../../search/similarity.js';
import { BUNDLED_FUNCTION, notUsed } from '../function-uses.js';
import type { Env } from '../settings.js';

/*
 * The chat model and embedder adapters of Deps, each loaded with `import()` on the branch that
 * uses it (guards folded by esbuild's define in a function bundle: shared/runtime/function-uses.ts).
 */

/** `deps.model` of a function that does not call the model. */
export class UnusedChatModel implements ChatModel {
  readonly name = 'none';
  readonly #fn: string | undefined;
  constructor(fn: string | undefined) {
    this.#fn = fn;
  }
  converse(): Promise<ConverseResponse> {
    return Promise.reject(notUsed(this.#fn, 'the chat model'));
  }
}

/**
 * Loads and builds the model for a config now (shared/llm/config.ts): Bedrock (client in
 * `AWS_REGION`), an OpenAI-compatible server, or the offline model.
 * @throws ConfigError when the code was bundled without the model adapters, when the model
 *   variables do not fit together, or for invalid adapter options
 */
export async function loadModel(env: Parameters<typeof modelConfigOf>[0]): Promise<ChatModel> {
  if (process.env.CLD_BUNDLE_MODEL !== 'false') {
    const config: ModelConfig = modelConfigOf(env);
    if (config.provider === 'offline') {
      const { OfflineChatModel } = await import('../../llm/offline.js');
      return new OfflineChatModel();
    }
    if (config.provider === 'openai') {
      const { OpenAIChatModel } = await import('../../llm/openai.js');
      const { provider: _provider, ...options } = config;
      return new OpenAIChatModel(options);
    }
    const { BedrockChatModel, createBedrockClient } = await import('../../llm/bedrock.js');
    return new BedrockChatModel({
      client: createBedrockClient({ ...(config.region ? { region: config.region } : {}) }),
      modelId: config.modelId,
      ...(config.stepModels ? { stepModels: config.stepModels } : {}),
    });
  }
  throw notUsed(BUNDLED_FUNCTION, 'the chat model');
}

/**
 * The embedder for a config: Bedrock Titan Text Embeddings V2 through `InvokeModel` when
 * `CLD_EMBEDDING_MODEL_ID` is set (client in `AWS_REGION`), otherwise the offline
 * {@link HashingEmbedder}. The stack sets no embedding model, so deployed functions stay lexical
 * (their roles may invoke only the chat model).
 * @throws ConfigError when an embedding model is set and the code was bundled without the model adapters
 */
export async function embedderFor(
  env: Pick<Env, 'CLD_EMBEDDING_MODEL_ID' | 'AWS_REGION'>,
): Promise<Embedder> {
  if (!env.CLD_EMBEDDING_MODEL_ID) return new HashingEmbedder();
  if (process.env.CLD_BUNDLE_MODEL !== 'false') {
    const [{ BedrockEmbedder }, { createBedrockClient }] = await Promise.all([
      import('../../llm/bedrock-embedder.js'),
      import('../../llm/bedrock.js'),
    ]);
    return new BedrockEmbedder({
      client: createBedrockClient({ ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}) }),
      modelId: env.CLD_EMBEDDING_MODEL_ID,
    });
  }
  throw notUsed(BUNDLED_FUNCTION, 'the embedding model');
}

/**
 * The model for a config, for the CLI (synchronous): named now (`offline`, `bedrock:<id>` or
 * `openai:<id>`, as the adapters name themselves), loaded by {@link loadModel} at its first
 * `converse`, whose errors that call rejects with.
 * @throws ConfigError when the model variables do not fit together
 */
export function modelFor(env: Env): ChatModel {
  const name = modelNameOf(modelConfigOf(env));
  let loaded: Promise<ChatModel> | undefined;
  return {
    name,
    converse: async (request) => {
      loaded ??= loadModel(env);
      return (await loaded).converse(request);
    },
  };
}
