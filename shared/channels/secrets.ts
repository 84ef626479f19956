import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { SecretsManagerClientConfig } from '@aws-sdk/client-secrets-manager';
import * as z from 'zod';
import { loadSecretsProvider } from '../aws/asset-modules.js';
import { ConfigError } from '../errors.js';
import type { ChannelConfig } from './config.js';

/**
 * Channel secrets: the Slack signing secret and bot token, the Teams security token and the Teams
 * incoming-webhook URL (it carries its own signature, so it is a credential too). In AWS
 * they live in Secrets Manager and are read with Powertools parameters (`SecretsProvider.get`,
 * cached in memory for {@link SECRET_MAX_AGE_SECONDS} so a rotation is picked up without a
 * deploy); locally they are plain environment variables.
 *
 * Powertools' `SecretsProvider` (and with it the Secrets Manager client) is loaded at the first
 * read of a secret by ARN, from a file of the function's asset beside `index.mjs`
 * (shared/aws/asset-modules.ts), so no cold start loads the client before a secret is read.
 */

/** How long a secret read from Secrets Manager is cached, in seconds. */
export const SECRET_MAX_AGE_SECONDS = 300;

const WebhookUrl = z.url({ protocol: /^https?$/ });

/**
 * The name of the channel secret that holds the Teams incoming-webhook/Workflows URL
 * (infra/lib/secrets.ts `CHANNEL_SECRETS`): what a Teams Conversation's address stores instead
 * of the URL. The reply step resolves it when it posts (`CLD_TEAMS_WEBHOOK_URL_ARN` from Secrets
 * Manager, or `CLD_TEAMS_WEBHOOK_URL` locally), so the URL and its `sig=` stay in Secrets
 * Manager: no stored object, function role or S3 version holds it, and a rotation applies to
 * every conversation at its next reply.
 */
export const TEAMS_WEBHOOK_SECRET = 'teamsWebhookUrl';

/** The secrets a channel function may need. Each getter throws ConfigError when not configured. */
export interface ChannelSecrets {
  /** Slack app signing secret (HMAC key of `X-Slack-Signature`). */
  slackSigningSecret(): Promise<string>;
  /** Slack bot token (`xoxb-...`) for the Web API. */
  slackBotToken(): Promise<string>;
  /** Teams outgoing-webhook security token, base64-decoded: the HMAC key of `Authorization: HMAC`. */
  teamsSecret(): Promise<Buffer>;
  /** Teams incoming-webhook or Workflows URL (`http(s)`), where answers are posted. */
  teamsWebhookUrl(): Promise<string>;
}

/**
 * Secrets from the configuration: a plain value wins, otherwise the ARN is read from Secrets
 * Manager.
 * @param clientConfig Secrets Manager client configuration (region, endpoint for tests)
 */
export function channelSecrets(
  config: ChannelConfig,
  clientConfig: SecretsManagerClientConfig = {},
): ChannelSecrets {
  let provider: Promise<SecretsProvider> | undefined;
  const read = async (plain: string | undefined, arn: string | undefined, what: string): Promise<string> => {
    if (plain) return plain;
    if (!arn) throw new ConfigError(`${what} is not configured`);
    provider ??= loadSecretsProvider().then(
      (Provider) =>
        new Provider({
          clientConfig: { ...(config.AWS_REGION ? { region: config.AWS_REGION } : {}), ...clientConfig },
        }),
    );
    const value = await (await provider).get(arn, { maxAge: SECRET_MAX_AGE_SECONDS });
    if (typeof value !== 'string' || value.length === 0)
      throw new ConfigError(`${what} (${arn}) is not a non-empty string secret`);
    return value.trim();
  };
  return {
    slackSigningSecret: () =>
      read(
        config.CLD_SLACK_SIGNING_SECRET,
        config.CLD_SLACK_SIGNING_SECRET_ARN,
        'the Slack signing secret (CLD_SLACK_SIGNING_SECRET or CLD_SLACK_SIGNING_SECRET_ARN)',
      ),
    slackBotToken: () =>
      read(
        config.CLD_SLACK_BOT_TOKEN,
        config.CLD_SLACK_BOT_TOKEN_ARN,
        'the Slack bot token (CLD_SLACK_BOT_TOKEN or CLD_SLACK_BOT_TOKEN_ARN)',
      ),
    teamsSecret: async () => {
      const text = await read(
        config.CLD_TEAMS_SECRET,
        config.CLD_TEAMS_SECRET_ARN,
        'the Teams security token (CLD_TEAMS_SECRET or CLD_TEAMS_SECRET_ARN)',
      );
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text))
        throw new ConfigError('the Teams security token is not base64 (paste it as Teams shows it)');
      return Buffer.from(text, 'base64');
    },
    teamsWebhookUrl: async () => {
      const text = await read(
        config.CLD_TEAMS_WEBHOOK_URL,
        config.CLD_TEAMS_WEBHOOK_URL_ARN,
        'the Teams webhook URL (CLD_TEAMS_WEBHOOK_URL or CLD_TEAMS_WEBHOOK_URL_ARN)',
      );
      if (!WebhookUrl.safeParse(text).success)
        throw new ConfigError(
          'the Teams webhook URL secret is not an http(s) URL (paste the URL Teams shows)',
        );
      return text;
    },
  };
}
