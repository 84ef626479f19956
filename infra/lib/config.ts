import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import * as z from 'zod';
import type { ConsoleAuth } from '../../shared/channels/console-assets.js';
import { LimitsSchema } from '../../shared/domain/limits.js';
import { ConfigError } from '../../shared/errors.js';
import { isHttpServer, McpServersSchema } from '../../shared/tools/mcp/config.js';
import { FUNCTIONS } from './functions.js';
import { CHANNEL_SECRET_NAMES, type ChannelSecretName } from './secrets.js';

/**
 * Deployment config: typed props resolved once, in `infra/bin`, from CDK context (`cdk.json`
 * or `-c key=value`), validated with zod. Every key is prefixed `cld:`; values given on the
 * command line arrive as strings, so JSON (objects, arrays, numbers) is parsed first.
 *
 * | context key | type | default |
 * |---|---|---|
 * | `cld:stage` | `[a-z][a-z0-9-]{0,19}`; `prod` retains data on delete | `dev` |
 * | `cld:modelId` | Bedrock model id, inference-profile id or ARN, or `offline` | required (cdk.json sets one) |
 * | `cld:models` | a model per step as JSON, `{"plan","assistant","answer","judge"}` (shared/llm/steps.ts), each a Bedrock model id, inference-profile id or ARN; the functions that call the model may invoke each (→ `CLD_MODELS`) | `{}` (`cld:modelId` for every step) |
 * | `cld:limits` | partial `Limits` (shared/domain/limits.ts) as JSON | `{}` (the defaults) |
 * | `cld:allowedOrigins` | HTTPS origins for the HTTP API's CORS; `[]` → no CORS (no browser calls) | `[]` |
 * | `cld:jwtIssuer` | the JWT authorizer's issuer (`iss`), an HTTPS URL, e.g. `https://cognito-idp.<region>.amazonaws.com/<pool id>` | none → no user routes (webhooks only) |
 * | `cld:jwtAudience` | the JWT authorizer's audiences (`aud`, or `client_id` of tokens without `aud`), 1–20 | `[]`; required with `cld:jwtIssuer` |
 * | `cld:apiThrottle` | `{ "rateLimit": req/s, "burstLimit": req }` of the HTTP API's `$default` stage | `{ "rateLimit": 25, "burstLimit": 50 }` |
 * | `cld:webhookThrottle` | `{ "rateLimit": req/s, "burstLimit": req }` of each webhook route (`/slack/*`, `/teams/*`), its own route throttle apart from the console's and conversations' routes | `{ "rateLimit": 10, "burstLimit": 20 }` |
 * | `cld:secretArns` | `{ <secret>: complete Secrets Manager ARN }` of existing channel secrets (`slackSigningSecret`, `slackBotToken`, `teamsSecurityToken`, `teamsWebhookUrl`); the others are created | `{}` |
 * | `cld:reservedConcurrency` | `{ <function>: 1..1000 }`, opt-in, for the functions with `boundedConcurrency` (`assistant`, `tool`, `slack`, `teams`), e.g. `{ "assistant": 10, "tool": 10, "slack": 10, "teams": 10 }` | `{}` (none: Lambda keeps 100 of the account's concurrency unreserved, so reserving fails on accounts with a lower quota, as new accounts have) |
 * | `cld:retryAttempts` | asynchronous-invocation retries, 0–2 (Lambda's range) | `2` |
 * | `cld:maxEventAgeSeconds` | maximum event age, 60–21,600 s (Lambda's range) | `3600` |
 * | `cld:logRetentionDays` | a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, ...) | 365 in `prod`, else 14 |
 * | `cld:logLevel` | Powertools log level | `INFO` |
 * | `cld:sourceMaps` | `true` sets `NODE_OPTIONS=--enable-source-maps` on every function, so stack traces in the logs name TypeScript lines; Node.js then reads each bundle's source map at every cold start (≈ 30 ms of CPU, docs/numbers.md) | `false` (the `.map` files still ship in the assets) |
 * | `cld:consoleAuth` | the console's OIDC sign-in (authorization code + PKCE): `{"domain": "https://<prefix>.auth.<region>.amazoncognito.com"}` (Cognito hosted UI) or `{"authorizationEndpoint", "tokenEndpoint"}`, with optional `clientId` (default: the first `cld:jwtAudience`) and `scopes` (default `["openid"]`); requires `cld:jwtIssuer` | none → the console takes a pasted bearer token |
 * | `cld:mcpServers` | MCP servers the `tool` function calls (shared/tools/mcp/config.ts), Streamable HTTP over `https:` only; a header value is a literal or `{ "secret": <complete Secrets Manager ARN> }` (the tool function may read exactly those) | `[]` |
 * | `cld:destroyData` | `true` deletes the resources bucket (with its objects), its access-logs bucket and the projections table with the stack; for scratch stacks only | `false` (every stage retains the event log and the table) |
 * | `cld:alarmEmail` | an e-mail address subscribed to the alarm topic (confirm the subscription e-mail AWS sends) | none |
 * | `cld:alarmTopicArn` | an existing SNS topic ARN every alarm notifies instead of a topic the stack creates | none → the stack creates one (output `AlarmTopicArn`) |
 * | `cld:operatorSubjects` | JWT `sub` values of the operators who may approve and revoke discovered tools over the HTTP API (`GET /tools`, `POST /tools/{name}/approve`, `…/revoke`), 0–50 | `[]` (nobody: use the CLI) |
 */

/** The value that deploys the offline model (no Bedrock access needed; a smoke test of the pipeline). */
export const OFFLINE_MODEL = 'offline';

/** Geography prefixes of Bedrock system-defined (cross-Region) inference profiles, e.g. `us.` in `us.anthropic...`. */
export const INFERENCE_PROFILE_GEOS = ['us', 'us-gov', 'eu', 'apac', 'jp', 'au', 'ca', 'global'] as const;

const MODEL_ID = /^[a-z0-9-]+\.[A-Za-z0-9._:-]+$/;
const MODEL_ARN =
  /^arn:aws[a-z-]*:bedrock:[a-z0-9-]*:\d{0,12}:(foundation-model|inference-profile|application-inference-profile)\/[A-Za-z0-9._:-]+$/;

/** A model reference as `CLD_MODEL_ID` takes it (see shared/llm/bedrock.ts), or `offline`. */
export const ModelIdSchema = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? 'required: a Bedrock model or inference-profile id (cdk.json sets one; -c cld:modelId=... overrides)'
        : 'a string',
  })
  .trim()
  .refine(
    (value) => value === OFFLINE_MODEL || MODEL_ID.test(value) || MODEL_ARN.test(value),
    'a Bedrock model id (anthropic.claude-...), an inference-profile id (us.anthropic.claude-...), ' +
      'a bedrock foundation-model / inference-profile / application-inference-profile ARN, or "offline"',
  );

const RETENTIONS = new Set<number>(
  Object.values(RetentionDays).filter((value): value is number => typeof value === 'number'),
);

const HttpsOrigin = z
  .string()
  .regex(/^https:\/\/[a-z0-9.-]+(:\d{1,5})?$/i, 'an origin such as https://app.example.com (no path, no *)');

/**
 * A complete Secrets Manager secret ARN (with the 6-character suffix Secrets Manager appends to
 * the name), so that a grant names exactly that secret and no wildcard.
 */
export const SecretArnSchema = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/,
    'a complete secret ARN, arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters> ' +
      '(aws secretsmanager describe-secret --query ARN)',
  );

/** Existing channel secrets by name (unknown names fail: a typo would silently create a new secret). */
const SecretArnsSchema = z.strictObject(
  Object.fromEntries(CHANNEL_SECRET_NAMES.map((name) => [name, SecretArnSchema.optional()])) as Record<
    ChannelSecretName,
    z.ZodOptional<typeof SecretArnSchema>
  >,
);

/** An API Gateway throttle: steady rate and burst. */
const Throttle = z.strictObject({
  /** Steady-state requests per second (API Gateway allows fractions). */
  rateLimit: z.number().positive().max(10_000),
  /** Requests in a burst. */
  burstLimit: z.number().int().min(0).max(5_000),
});

/** A step's model (`cld:models`): a Bedrock model reference, not `offline`. */
const StepModelIdSchema = ModelIdSchema.refine(
  (value) => value !== OFFLINE_MODEL,
  '"offline" is for cld:modelId only: give a Bedrock model or inference-profile id',
);

/** The models of `config.models` other than `config.modelId`, each once, in step order. */
export function stepModelIds(config: Pick<StackConfig, 'modelId' | 'models'>): string[] {
  return [
    ...new Set(Object.values(config.models).filter((id): id is string => !!id && id !== config.modelId)),
  ];
}

/** Schema of the resolved config. */
export const StackConfigSchema = z
  .strictObject({
    stage: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,19}$/, 'lower-case letters, digits and "-", starting with a letter, ≤ 20'),
    modelId: ModelIdSchema,
    /** A model per step (shared/llm/steps.ts); a step left out uses `modelId`. */
    models: z.strictObject({
      plan: StepModelIdSchema.optional(),
      assistant: StepModelIdSchema.optional(),
      answer: StepModelIdSchema.optional(),
      judge: StepModelIdSchema.optional(),
    }),
    /** Only the limits given (validated against the full schema); `{}` → the code's defaults. */
    limits: z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
      const parsed = LimitsSchema.safeParse(value);
      for (const issue of parsed.error?.issues ?? []) {
        ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path.map(String) });
      }
    }),
    allowedOrigins: z.array(HttpsOrigin).max(20),
    /** The JWT authorizer's issuer; absent → the user routes are left out (fail closed). */
    jwtIssuer: z
      .url({
        protocol: /^https$/,
        error: 'an HTTPS issuer URL such as https://cognito-idp.<region>.amazonaws.com/<pool id>',
      })
      .optional(),
    jwtAudience: z.array(z.string().trim().min(1).max(256)).max(20),
    apiThrottle: Throttle,
    /** Each webhook route's own throttle (infra/lib/http-api.ts `isWebhookRoute`). */
    webhookThrottle: Throttle,
    secretArns: SecretArnsSchema,
    /**
     * Opt-in reserved concurrency by function name (none by default). A name that is not in the
     * function table, or names a function without `boundedConcurrency`, fails (either would
     * silently reserve nothing).
     */
    reservedConcurrency: z.record(z.string(), z.number().int().min(1).max(1000)).superRefine((value, ctx) => {
      const table: Readonly<Record<string, { boundedConcurrency: boolean }>> = FUNCTIONS;
      const bounded = Object.keys(table).filter((name) => table[name]?.boundedConcurrency);
      for (const name of Object.keys(value)) {
        const spec = Object.hasOwn(table, name) ? table[name] : undefined;
        if (spec?.boundedConcurrency) continue;
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: spec
            ? `the ${name} function takes no reserved concurrency (boundedConcurrency in infra/lib/functions.ts; these do: ${bounded.join(', ')})`
            : `not a function of infra/lib/functions.ts (${Object.keys(table).join(', ')})`,
        });
      }
    }),
    retryAttempts: z.number().int().min(0).max(2),
    maxEventAgeSeconds: z.number().int().min(60).max(21_600),
    logRetentionDays: z
      .number()
      .int()
      .refine(
        (days) => RETENTIONS.has(days),
        'a CloudWatch Logs retention (1, 3, 5, 7, 14, 30, 60, 90, ...)',
      ),
    logLevel: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT']),
    sourceMaps: z.boolean(),
    consoleAuth: z
      .strictObject({
        domain: z.url({ protocol: /^https$/ }).optional(),
        authorizationEndpoint: z.url({ protocol: /^https$/ }).optional(),
        tokenEndpoint: z.url({ protocol: /^https$/ }).optional(),
        clientId: z.string().trim().min(1).max(256).optional(),
        scopes: z
          .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/))
          .min(1)
          .max(20)
          .optional(),
      })
      .refine((a) => !!a.domain !== !!(a.authorizationEndpoint && a.tokenEndpoint), {
        message: 'give either domain (Cognito hosted UI) or both authorizationEndpoint and tokenEndpoint',
      })
      .optional(),
    /** MCP servers of the tool function: https only, header secrets by complete ARN (no wildcard grant). */
    mcpServers: McpServersSchema.superRefine((servers, ctx) => {
      servers.forEach((server, i) => {
        if (!isHttpServer(server)) {
          ctx.addIssue({
            code: 'custom',
            path: [i],
            message: 'only url (Streamable HTTP) servers run in AWS',
          });
          return;
        }
        if (new URL(server.url).protocol !== 'https:')
          ctx.addIssue({
            code: 'custom',
            path: [i, 'url'],
            message: 'an https: URL (the tool function reaches MCP servers over HTTPS)',
          });
        for (const [name, value] of Object.entries(server.headers)) {
          if (typeof value === 'string') continue;
          if ('env' in value || !SecretArnSchema.safeParse(value.secret).success)
            ctx.addIssue({
              code: 'custom',
              path: [i, 'headers', name],
              message: 'a literal or { "secret": <complete Secrets Manager ARN> } (no { "env" } in AWS)',
            });
        }
      });
    }),
    /** Opt-in: delete the event log (resources bucket and its objects) and the table with the stack. */
    destroyData: z.boolean(),
    /** E-mail subscribed to the alarm topic. */
    alarmEmail: z.email('an e-mail address such as ops@example.com').optional(),
    /** Existing SNS topic for every alarm (instead of one the stack creates). */
    alarmTopicArn: z
      .string()
      .regex(
        /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/,
        'an SNS topic ARN, arn:aws:sns:<region>:<account>:<name>',
      )
      .optional(),
    operatorSubjects: z
      .array(
        z
          .string()
          .trim()
          .min(1)
          .max(256)
          .regex(/^[^,]+$/, 'no commas'),
      )
      .max(50),
  })
  .superRefine((config, ctx) => {
    if (config.jwtIssuer && config.jwtAudience.length === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['jwtAudience'],
        message: 'required with cld:jwtIssuer (at least one audience)',
      });
    if (!config.jwtIssuer && config.jwtAudience.length > 0)
      ctx.addIssue({ code: 'custom', path: ['jwtIssuer'], message: 'required with cld:jwtAudience' });
    if (config.consoleAuth && !config.jwtIssuer)
      ctx.addIssue({ code: 'custom', path: ['jwtIssuer'], message: 'required with cld:consoleAuth' });
  });

/** The resolved deployment config (see the table above). */
export type StackConfig = z.infer<typeof StackConfigSchema>;

/** Defaults of everything but `stage`, `modelId` and `logRetentionDays` (which depends on the stage). */
export const CONFIG_DEFAULTS = {
  stage: 'dev',
  limits: {},
  allowedOrigins: [],
  jwtAudience: [],
  apiThrottle: { rateLimit: 25, burstLimit: 50 },
  webhookThrottle: { rateLimit: 10, burstLimit: 20 },
  models: {},
  secretArns: {},
  reservedConcurrency: {},
  retryAttempts: 2,
  maxEventAgeSeconds: 3600,
  logLevel: 'INFO',
  sourceMaps: false,
  mcpServers: [],
  operatorSubjects: [],
  destroyData: false,
} as const;

/** The context keys read, by config field. */
export const CONTEXT_KEYS: Record<keyof StackConfig, string> = {
  stage: 'cld:stage',
  modelId: 'cld:modelId',
  models: 'cld:models',
  limits: 'cld:limits',
  allowedOrigins: 'cld:allowedOrigins',
  jwtIssuer: 'cld:jwtIssuer',
  jwtAudience: 'cld:jwtAudience',
  apiThrottle: 'cld:apiThrottle',
  webhookThrottle: 'cld:webhookThrottle',
  secretArns: 'cld:secretArns',
  reservedConcurrency: 'cld:reservedConcurrency',
  retryAttempts: 'cld:retryAttempts',
  maxEventAgeSeconds: 'cld:maxEventAgeSeconds',
  logRetentionDays: 'cld:logRetentionDays',
  logLevel: 'cld:logLevel',
  sourceMaps: 'cld:sourceMaps',
  consoleAuth: 'cld:consoleAuth',
  mcpServers: 'cld:mcpServers',
  operatorSubjects: 'cld:operatorSubjects',
  destroyData: 'cld:destroyData',
  alarmEmail: 'cld:alarmEmail',
  alarmTopicArn: 'cld:alarmTopicArn',
};

/** Fields whose context value may be JSON text (objects, arrays, numbers given with `-c`). */
const JSON_FIELDS = new Set<keyof StackConfig>([
  'models',
  'limits',
  'allowedOrigins',
  'jwtAudience',
  'apiThrottle',
  'webhookThrottle',
  'secretArns',
  'reservedConcurrency',
  'retryAttempts',
  'maxEventAgeSeconds',
  'logRetentionDays',
  'consoleAuth',
  'mcpServers',
  'operatorSubjects',
  'destroyData',
  'sourceMaps',
]);

/** True in the stage whose data is retained on stack deletion. */
export function isProduction(config: Pick<StackConfig, 'stage'>): boolean {
  return config.stage === 'prod';
}

/**
 * Resolves the config from CDK context.
 * @param context reads one context key (`app.node.tryGetContext`); undefined when unset
 * @throws ConfigError naming each bad key, e.g. `cld:retryAttempts: Too big: expected number to be <=2`
 */
export function resolveConfig(context: (key: string) => unknown): StackConfig {
  const raw: Record<string, unknown> = {};
  for (const [field, key] of Object.entries(CONTEXT_KEYS) as [keyof StackConfig, string][]) {
    const value = context(key);
    if (value === undefined || value === null) continue;
    raw[field] = JSON_FIELDS.has(field) && typeof value === 'string' ? parseJson(key, value) : value;
  }
  const stage = typeof raw.stage === 'string' ? raw.stage : CONFIG_DEFAULTS.stage;
  const candidate = {
    ...CONFIG_DEFAULTS,
    logRetentionDays: isProduction({ stage }) ? RetentionDays.ONE_YEAR : RetentionDays.TWO_WEEKS,
    ...raw,
  };
  const parsed = StackConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const field = issue.path[0] as keyof StackConfig | undefined;
      const where = field && field in CONTEXT_KEYS ? CONTEXT_KEYS[field] : String(field ?? 'config');
      const rest = issue.path.slice(1).join('.');
      return `${where}${rest ? `.${rest}` : ''}: ${issue.message}`;
    });
    throw new ConfigError(`invalid deployment config (CDK context):\n  ${problems.join('\n  ')}`, {
      details: { problems },
    });
  }
  return parsed.data;
}

/** Context keys whose value may be a bare comma-separated list. */
const LIST_KEYS = new Set([
  CONTEXT_KEYS.allowedOrigins,
  CONTEXT_KEYS.jwtAudience,
  CONTEXT_KEYS.operatorSubjects,
]);

function parseJson(key: string, text: string): unknown {
  const trimmed = text.trim();
  // A bare comma-separated list is accepted for arrays given on the command line (-c cld:allowedOrigins=a,b).
  if (LIST_KEYS.has(key) && !trimmed.startsWith('[')) {
    return trimmed === '' ? [] : trimmed.split(',').map((part) => part.trim());
  }
  try {
    return JSON.parse(trimmed);
  } catch (error) {
    throw new ConfigError(`${key} is not valid JSON: ${trimmed.slice(0, 80)}`, { cause: error });
  }
}

/**
 * The console's sign-in (`CLD_CONSOLE_AUTH`, shared/channels/console-assets.ts) from
 * `cld:consoleAuth`: a Cognito domain becomes its hosted UI's endpoints (`/oauth2/authorize`,
 * `/oauth2/token`); the client defaults to the first JWT audience. Undefined without `cld:consoleAuth`.
 */
export function consoleAuthOf(config: StackConfig): Extract<ConsoleAuth, { kind: 'oidc' }> | undefined {
  const auth = config.consoleAuth;
  const clientId = auth?.clientId ?? config.jwtAudience[0];
  if (!auth || !clientId) return undefined;
  const domain = auth.domain?.replace(/\/+$/, '');
  return {
    kind: 'oidc',
    authorizationEndpoint: domain ? `${domain}/oauth2/authorize` : (auth.authorizationEndpoint as string),
    tokenEndpoint: domain ? `${domain}/oauth2/token` : (auth.tokenEndpoint as string),
    clientId,
    scopes: auth.scopes ?? ['openid'],
  };
}
