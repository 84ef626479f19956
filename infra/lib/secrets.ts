import { type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';

/**
 * The channels' credentials (issue 4) in AWS Secrets Manager. Each is either an existing secret
 * named by its complete ARN in the config (`cld:secretArns`, infra/lib/config.ts) or a secret the
 * stack creates (no physical name; a random placeholder value that the operator replaces with
 * `aws secretsmanager put-secret-value` after deploy). Only the function that reads a secret is
 * granted `secretsmanager:GetSecretValue`, on that secret's ARN alone, together with the variable
 * naming it (infra/lib/functions.ts `secrets`; shared/channels/secrets.ts reads them with
 * Powertools parameters).
 */

/** The channel secrets: what each holds, where the operator finds it, and who reads it. */
export const CHANNEL_SECRETS = {
  slackSigningSecret: {
    description:
      'cld: Slack app signing secret (Slack app → Basic Information → App Credentials → Signing Secret)',
    reader: 'slack',
  },
  slackBotToken: {
    description: 'cld: Slack bot token xoxb-... (Slack app → OAuth & Permissions → Bot User OAuth Token)',
    reader: 'reply',
  },
  teamsSecurityToken: {
    description:
      'cld: Teams outgoing-webhook security token, base64 as Teams shows it when the webhook is created',
    reader: 'teams',
  },
  teamsWebhookUrl: {
    description:
      'cld: Teams incoming-webhook or Workflows URL the answers are posted to (it carries its own sig= signature)',
    // Read when a reply is posted; conversations hold only a reference (shared/channels/secrets.ts TEAMS_WEBHOOK_SECRET).
    reader: 'reply',
  },
} as const;

/** Name of a channel secret (a key of {@link CHANNEL_SECRETS}). */
export type ChannelSecretName = keyof typeof CHANNEL_SECRETS;

/** The names, in declaration order. */
export const CHANNEL_SECRET_NAMES = Object.keys(CHANNEL_SECRETS) as ChannelSecretName[];

/** The written reason of the cdk-nag `AwsSolutions-SMG4` (no rotation) acknowledgement of a created secret. */
export const NO_ROTATION_REASON =
  'A third-party credential issued by Slack or Microsoft Teams: it is rotated in their console (regenerate, ' +
  'then put-secret-value), so a Secrets Manager rotation Lambda has nothing it could rotate; the functions ' +
  'cache a read for 5 minutes and pick up a new value without a deploy.';

/**
 * The channel secrets of a stack: imported by complete ARN where `arns` names one, else created.
 * @param arns existing secrets by name (complete ARNs, validated by the config schema)
 * @param removalPolicy removal policy of the created secrets (the stage's)
 */
export function channelSecrets(
  scope: Construct,
  arns: Readonly<Partial<Record<ChannelSecretName, string>>>,
  removalPolicy: RemovalPolicy,
): Readonly<Record<ChannelSecretName, ISecret>> {
  const secrets = {} as Record<ChannelSecretName, ISecret>;
  for (const name of CHANNEL_SECRET_NAMES) {
    const id = `${name[0]?.toUpperCase()}${name.slice(1)}`;
    const arn = arns[name];
    if (arn) {
      secrets[name] = Secret.fromSecretCompleteArn(scope, id, arn);
      continue;
    }
    const secret = new Secret(scope, id, { description: CHANNEL_SECRETS[name].description, removalPolicy });
    Validations.of(secret).acknowledge({ id: 'AwsSolutions-SMG4', reason: NO_ROTATION_REASON });
    secrets[name] = secret;
  }
  return secrets;
}
