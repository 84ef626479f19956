import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseChannelConfig } from '../../shared/channels/config.js';
import { channelSecrets } from '../../shared/channels/secrets.js';
import { ConfigError } from '../../shared/errors.js';

/**
 * Secrets from Secrets Manager through Powertools' SecretsProvider and the real
 * `SecretsManagerClient`, against a local server speaking the service's JSON protocol
 * (`X-Amz-Target: secretsmanager.GetSecretValue`, https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html).
 */

const SECRETS: Record<string, string> = {
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-signing-AbCdEf': 'signing-secret-from-sm',
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-bot-AbCdEf': 'xoxb-from-sm',
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-AbCdEf':
    Buffer.from('teams-key').toString('base64'),
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-webhook-AbCdEf':
    'https://prod-01.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=s3cr3t',
  'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-webhook-unset-AbCdEf':
    'Xy7#generated-placeholder',
};

let server: Server;
let endpoint: string;
const calls: { target: string; secretId: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId: string };
      calls.push({ target: String(req.headers['x-amz-target']), secretId: SecretId });
      res.setHeader('content-type', 'application/x-amz-json-1.1');
      const value = SECRETS[SecretId];
      if (value === undefined) {
        res.statusCode = 400;
        res.end(
          JSON.stringify({
            __type: 'ResourceNotFoundException',
            message: "Secrets Manager can't find the specified secret.",
          }),
        );
        return;
      }
      res.end(
        JSON.stringify({
          ARN: SecretId,
          Name: SecretId.split(':').at(-1),
          SecretString: value,
          VersionId: 'v1',
          CreatedDate: 1_700_000_000,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function secretsFor(env: Record<string, string>) {
  return channelSecrets(parseChannelConfig({ AWS_REGION: 'eu-west-1', ...env }), {
    endpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
}

describe('channel secrets', () => {
  it('reads the ARNs from Secrets Manager with GetSecretValue and caches them', async () => {
    const secrets = secretsFor({
      CLD_SLACK_SIGNING_SECRET_ARN:
        'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-signing-AbCdEf',
      CLD_SLACK_BOT_TOKEN_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-bot-AbCdEf',
      CLD_TEAMS_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-AbCdEf',
      CLD_TEAMS_WEBHOOK_URL_ARN:
        'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-webhook-AbCdEf',
    });
    calls.length = 0;

    expect(await secrets.slackSigningSecret()).toBe('signing-secret-from-sm');
    expect(await secrets.slackSigningSecret()).toBe('signing-secret-from-sm');
    expect(await secrets.slackBotToken()).toBe('xoxb-from-sm');
    expect((await secrets.teamsSecret()).toString()).toBe('teams-key');
    expect(await secrets.teamsWebhookUrl()).toMatch(/^https:\/\/prod-01\..*&sig=s3cr3t$/);
    expect(await secrets.teamsWebhookUrl()).toMatch(/&sig=s3cr3t$/);

    expect(calls.map((c) => c.target)).toEqual(Array(4).fill('secretsmanager.GetSecretValue'));
    expect(calls.map((c) => c.secretId.split(':').at(-1))).toEqual([
      'cld/slack-signing-AbCdEf',
      'cld/slack-bot-AbCdEf',
      'cld/teams-AbCdEf',
      'cld/teams-webhook-AbCdEf',
    ]);
  });

  it('prefers a plain value (local serve) and never calls Secrets Manager for it', async () => {
    calls.length = 0;
    const secrets = secretsFor({
      CLD_SLACK_SIGNING_SECRET: 'plain-secret',
      CLD_SLACK_SIGNING_SECRET_ARN:
        'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/slack-signing-AbCdEf',
    });

    expect(await secrets.slackSigningSecret()).toBe('plain-secret');
    expect(calls).toEqual([]);
  });

  it('fails with a ConfigError naming the variables when a secret is not configured', async () => {
    await expect(secretsFor({}).slackBotToken()).rejects.toThrow(ConfigError);
    await expect(secretsFor({}).slackBotToken()).rejects.toThrow(
      /CLD_SLACK_BOT_TOKEN or CLD_SLACK_BOT_TOKEN_ARN/,
    );
  });

  it('fails when the Teams token is not base64, before any request is verified with it', async () => {
    await expect(secretsFor({ CLD_TEAMS_SECRET: 'not base64!' }).teamsSecret()).rejects.toThrow(/not base64/);
  });

  it('fails with a ConfigError when the Teams webhook secret still holds the generated placeholder', async () => {
    const secrets = secretsFor({
      CLD_TEAMS_WEBHOOK_URL_ARN:
        'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/teams-webhook-unset-AbCdEf',
    });
    await expect(secrets.teamsWebhookUrl()).rejects.toThrow(ConfigError);
    await expect(secrets.teamsWebhookUrl()).rejects.toThrow(/not an http\(s\) URL/);
  });

  it('passes on Secrets Manager’s error for a secret that does not exist', async () => {
    const secrets = secretsFor({
      CLD_SLACK_BOT_TOKEN_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:missing-XyZ',
    });
    await expect(secrets.slackBotToken()).rejects.toThrow(/can't find the specified secret/);
  });
});
