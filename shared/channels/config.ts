import * as z from 'zod';
import { ConfigError } from '../errors.js';
import { lazyObject } from '../resources/lazy-schema.js';

/**
 * Configuration of the channel functions (HTTP API, Slack, Teams, reply), parsed once per cold
 * start with zod so a bad variable fails with its name. Secrets come either as plain values
 * (local `serve`) or as Secrets Manager ARNs (AWS, read with Powertools parameters); see
 * secrets.ts. Every variable is optional here: a channel that is used without its secret fails
 * with a ConfigError naming what is missing, and the others keep working.
 */

const Url = z.url({ protocol: /^https?$/ });

/** The channel environment variables. */
export const ChannelEnvSchema = lazyObject(() => ({
  /** Largest accepted HTTP API request body, in bytes (default 64 KiB; larger → 413 before authentication). */
  CLD_HTTP_MAX_BODY_BYTES: z.coerce.number().int().positive().max(10_485_760).default(65_536),
  /**
   * Largest accepted Slack or Teams request body, in bytes (default 1 MiB: a 40,000-character
   * Slack message with its blocks, or a 28,000-character Teams Activity with its HTML attachment,
   * fit; larger → 413 before the signature is checked).
   */
  CLD_WEBHOOK_MAX_BODY_BYTES: z.coerce.number().int().positive().max(10_485_760).default(1_048_576),
  /**
   * Public base URL of the HTTP API (`https://api.example.com`), for the absolute `statusUrl` of a
   * 202; without it the URL is built from the domain API Gateway received the request on, never
   * from the client's `Host` header. `Location` is always a relative reference.
   */
  CLD_PUBLIC_BASE_URL: Url.optional(),
  /** Slack app signing secret (local); in AWS use the ARN variable. */
  CLD_SLACK_SIGNING_SECRET: z.string().min(1).optional(),
  /** Secrets Manager ARN (or name) of the Slack signing secret. */
  CLD_SLACK_SIGNING_SECRET_ARN: z.string().min(1).optional(),
  /** Slack bot token `xoxb-...` (local); in AWS use the ARN variable. */
  CLD_SLACK_BOT_TOKEN: z.string().min(1).optional(),
  /** Secrets Manager ARN (or name) of the Slack bot token. */
  CLD_SLACK_BOT_TOKEN_ARN: z.string().min(1).optional(),
  /** Base URL of Slack's Web API (the WebClient's `slackApiUrl`); tests point it at a local receiver. */
  CLD_SLACK_API_URL: Url.default('https://slack.com/api/'),
  /**
   * Origin that slash-command `response_url`s must have (Slack sends `https://hooks.slack.com/...`).
   * The URL comes from a signed request, this is defence in depth against posting elsewhere.
   */
  CLD_SLACK_RESPONSE_URL_ORIGIN: Url.default('https://hooks.slack.com'),
  /**
   * Who may continue a thread's conversation (issue 22 finding 7): `owner` (default) — only the
   * conversation's user; another member's reply is not stored (a mention of the bot gets a short
   * ephemeral notice); `members` — another member's replies form their own conversation in the
   * thread (their author, their context, their approvals), never the owner's.
   */
  CLD_SLACK_THREAD_REPLIES: z.enum(['owner', 'members']).default('owner'),
  /** Teams outgoing-webhook security token, base64 as Teams shows it (local). */
  CLD_TEAMS_SECRET: z.string().min(1).optional(),
  /** Secrets Manager ARN (or name) of the Teams security token. */
  CLD_TEAMS_SECRET_ARN: z.string().min(1).optional(),
  /** Teams incoming-webhook or Workflows URL the answers are posted to (local); in AWS use the ARN variable. */
  CLD_TEAMS_WEBHOOK_URL: Url.optional(),
  /**
   * Secrets Manager ARN (or name) of the Teams incoming-webhook/Workflows URL: the URL carries its
   * own signature (`sig=`), so whoever reads it can post to the channel.
   */
  CLD_TEAMS_WEBHOOK_URL_ARN: z.string().min(1).optional(),
  /** Timeout of one delivery call (Slack Web API, response_url, Teams webhook), in ms. */
  CLD_DELIVERY_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(10_000),
  /**
   * Folder of the built web console (`index.html` and its content-hashed script and style;
   * shared/channels/console-assets.ts). `serve` builds it into its data folder; the stack's
   * bundling into the HTTP function's asset. Unset → the console routes answer 404.
   */
  CLD_CONSOLE_DIR: z.string().min(1).optional(),
  /**
   * How the console signs in, JSON: `{"kind":"token"}` (default: a bearer token, as `serve` prints)
   * or `{"kind":"oidc","authorizationEndpoint","tokenEndpoint","clientId","scopes"?}` (authorization
   * code + PKCE against the issuer the JWT authorizer trusts). Parsed by `parseConsoleAuth`.
   */
  CLD_CONSOLE_AUTH: z.string().optional(),
  /**
   * Operators: JWT `sub` values (comma-separated) of the HTTP API callers who may list, approve
   * and revoke discovered tools (operator-routes.ts); empty → nobody over HTTP (the CLI remains).
   */
  CLD_OPERATOR_SUBJECTS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0),
    ),
  AWS_REGION: z.string().min(1).optional(),
}));

/** Parsed channel configuration. */
export type ChannelConfig = z.infer<typeof ChannelEnvSchema>;

/**
 * Parses the channel configuration from an environment.
 * @throws ConfigError naming the invalid variables
 */
export function parseChannelConfig(env: NodeJS.ProcessEnv): ChannelConfig {
  const parsed = ChannelEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new ConfigError(`invalid channel configuration: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
