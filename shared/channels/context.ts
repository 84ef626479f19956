import type { SecretsManagerClientConfig } from '@aws-sdk/client-secrets-manager';
import type { Deps } from '../domain/ports.js';
import { type ChannelConfig, parseChannelConfig } from './config.js';
import {
  createSlackDelivery,
  createTeamsDelivery,
  type SlackDelivery,
  type TeamsDelivery,
} from './delivery.js';
import { type ChannelSecrets, channelSecrets } from './secrets.js';

/**
 * The channel functions' composition root (one per cold start, STYLE.md): validated config,
 * secrets and the delivery adapters (Slack Web API client, Teams webhook). The exactly-once guard
 * of deliveries is not here: it runs on the Deps' idempotency layer (`deps.idempotency`, the
 * projections table in AWS; see idempotency.ts `deliveryGuard`). The local `serve` provides its
 * own Channels (built from its environment) the way the local runtime provides Deps.
 */

/** What the HTTP, Slack and Teams handlers use of the Deps. */
export type ChannelDeps = Pick<
  Deps,
  'resources' | 'catalog' | 'logger' | 'now' | 'limits' | 'openConversations' | 'userConversations'
>;

/** Channel adapters and configuration. */
export interface Channels {
  config: ChannelConfig;
  secrets: ChannelSecrets;
  slack: SlackDelivery;
  teams: TeamsDelivery;
}

/** Options of {@link createChannels}. */
export interface ChannelsOptions {
  /** Secrets Manager client configuration (endpoint, region), for the ARN variables. */
  secretsClient?: SecretsManagerClientConfig;
}

/** Builds the channel adapters from a configuration. */
export function createChannels(config: ChannelConfig, options: ChannelsOptions = {}): Channels {
  return {
    config,
    secrets: channelSecrets(config, options.secretsClient),
    slack: createSlackDelivery({
      apiUrl: config.CLD_SLACK_API_URL,
      timeoutMs: config.CLD_DELIVERY_TIMEOUT_MS,
    }),
    teams: createTeamsDelivery({ timeoutMs: config.CLD_DELIVERY_TIMEOUT_MS }),
  };
}

let provided: Channels | undefined;
let composed: Channels | undefined;

/** Used by `serve` and tests: the channel handlers use these instead of composing from env. */
export function provideChannels(channels: Channels | undefined): void {
  provided = channels;
}

/**
 * The Channels of this process: provided, or composed from `process.env` once (memoised).
 * @throws ConfigError when the environment is invalid
 */
export function getChannels(): Channels {
  if (provided) return provided;
  composed ??= createChannels(parseChannelConfig(process.env));
  return composed;
}
