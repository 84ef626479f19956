import { Annotations, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnStage,
  CorsHttpMethod,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { ApiRoute } from '../../shared/channels/routes.js';
import { ConfigError } from '../../shared/errors.js';
import type { StackConfig } from './config.js';
import type { Trigger } from './functions.js';

/** Id of the synth warning added when no JWT issuer is configured (the user routes are left out). */
export const NO_JWT_ISSUER_WARNING = 'cld:httpApiWithoutJwtIssuer';

/** Headers a browser may send to the API (CORS preflight), as the HTTP function reads them. */
export const CORS_ALLOW_HEADERS = ['authorization', 'content-type', 'idempotency-key'] as const;

/**
 * True for a webhook route: a route the platform (Slack, Teams) calls, served by a function other
 * than the console's and conversations' `http`, unauthenticated at the gateway (the function
 * verifies the signature). Each gets its own route throttle (`cld:webhookThrottle`), so console
 * traffic cannot use up what Slack and Teams need.
 */
export function isWebhookRoute(route: ApiRoute): boolean {
  return route.auth === 'none' && route.function !== 'http';
}

/** The API Gateway route key of a route (`POST /slack/events`): its key in the stage's `RouteSettings`. */
export function routeKeyOf(route: Pick<ApiRoute, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/** Where the JWT authorizer reads the token (`Authorization: Bearer <jwt>`). */
export const JWT_IDENTITY_SOURCE = '$request.header.Authorization';

/**
 * One access-log line per request (JSON; API Gateway HTTP API `$context` variables,
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-logging-variables.html):
 * who (source IP, JWT `sub`), what (route key, status, sizes, latencies) and why it failed
 * (authorizer and integration errors). No headers or bodies: webhook bodies and tokens stay out
 * of the logs.
 */
export const ACCESS_LOG_FIELDS: Readonly<Record<string, string>> = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  requestTime: '$context.requestTime',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integration.latency',
  integrationStatus: '$context.integration.status',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
  sub: '$context.authorizer.claims.sub',
  error: '$context.error.message',
};

/** A function an API route may target. */
export interface ApiFunction {
  trigger: Trigger;
  function: IFunction;
}

/** Props of {@link ChannelsApi}. */
export interface ChannelsApiProps {
  config: StackConfig;
  /** The API's routes (shared/channels/routes.ts `API_ROUTES`, the one source of truth). */
  routes: readonly ApiRoute[];
  /** The stack's functions by name (the function table's keys). */
  functions: ReadonlyMap<string, ApiFunction>;
  /** Removal policy of the access-log group (the stage's). */
  removalPolicy: RemovalPolicy;
  /** The API's name (infra/lib/cld.ts `namePrefix` + `-api`). */
  apiName: string;
}

/**
 * The channels' API Gateway HTTP API (issue 4), generated from the route table: one route per
 * entry of `API_ROUTES` with a Lambda proxy integration (payload format 2.0, one integration per
 * function, invoke permission scoped to the route); the JWT authorizer (`HttpJwtAuthorizer`,
 * issuer and audiences from the config, token from `Authorization`) on the `jwt` routes and no
 * authorizer on the `none` routes (Slack's and Teams' webhooks, which the functions verify by
 * signature); the `$default` stage with auto-deploy, throttling from the config (`apiThrottle`
 * for the stage, `webhookThrottle` as route settings of each webhook route, {@link isWebhookRoute})
 * and JSON access logs ({@link ACCESS_LOG_FIELDS}) to a log group with the config's retention; CORS preflight
 * from `allowedOrigins` (none when the list is empty).
 *
 * Without a configured issuer the `jwt` routes are left out, with a synth warning, rather than
 * deployed open: the API then serves the webhooks only.
 * @throws ConfigError at synth when a route names a function the table lacks or one that is not
 *   an `http-api` function
 */
export class ChannelsApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;
  /** The JWT authorizer, when an issuer is configured. */
  readonly authorizer: HttpJwtAuthorizer | undefined;
  /** The routes created, by API Gateway route key (`POST /conversations`). */
  readonly routes: ReadonlyMap<string, HttpRoute>;
  /** The routes left out (no JWT issuer configured). */
  readonly omitted: readonly ApiRoute[];

  constructor(scope: Construct, id: string, props: ChannelsApiProps) {
    super(scope, id);
    const { config } = props;
    for (const route of props.routes) {
      const target = props.functions.get(route.function);
      if (!target) {
        throw new ConfigError(
          `API route ${route.method} ${route.path} names "${route.function}", but the function table has no ` +
            `function named "${route.function}" (it has: ${[...props.functions.keys()].join(', ')})`,
        );
      }
      if (target.trigger !== 'http-api') {
        throw new ConfigError(
          `API route ${route.method} ${route.path} names "${route.function}", a function with trigger ` +
            `"${target.trigger}" (API routes need trigger "http-api")`,
        );
      }
    }

    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: config.logRetentionDays as RetentionDays,
      removalPolicy: props.removalPolicy,
    });
    this.api = new HttpApi(this, 'Api', {
      // API names need not be unique (the id is); the construct's path makes it findable in the console.
      apiName: props.apiName,
      description: `cld (${config.stage}): conversations API and Slack/Teams webhooks`,
      createDefaultStage: false,
      ...(config.allowedOrigins.length > 0
        ? {
            corsPreflight: {
              allowOrigins: [...config.allowedOrigins],
              allowMethods: [CorsHttpMethod.GET, CorsHttpMethod.POST],
              allowHeaders: [...CORS_ALLOW_HEADERS],
              maxAge: Duration.hours(1),
            },
          }
        : {}),
    });
    this.stage = new HttpStage(this, 'DefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: config.apiThrottle.rateLimit, burstLimit: config.apiThrottle.burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });

    this.authorizer = config.jwtIssuer
      ? new HttpJwtAuthorizer('JwtAuthorizer', config.jwtIssuer, {
          authorizerName: 'jwt',
          jwtAudience: [...config.jwtAudience],
          identitySource: [JWT_IDENTITY_SOURCE],
        })
      : undefined;

    const integrations = new Map<string, HttpLambdaIntegration>();
    const integrationOf = (name: string) => {
      let integration = integrations.get(name);
      if (!integration) {
        const target = props.functions.get(name) as ApiFunction;
        integration = new HttpLambdaIntegration(`${pascal(name)}Integration`, target.function);
        integrations.set(name, integration);
      }
      return integration;
    };

    const routes = new Map<string, HttpRoute>();
    const omitted: ApiRoute[] = [];
    for (const route of props.routes) {
      if (route.auth === 'jwt' && !this.authorizer) {
        omitted.push(route);
        continue;
      }
      const httpRoute = new HttpRoute(this, routeId(route), {
        httpApi: this.api,
        routeKey: HttpRouteKey.with(route.path, HttpMethod[route.method]),
        integration: integrationOf(route.function),
        ...(route.auth === 'jwt' && this.authorizer ? { authorizer: this.authorizer } : {}),
      });
      if (route.auth === 'none' && route.path === '/openapi.json') {
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            `${route.method} ${route.path} serves the API's public contract (${route.description}): it is generated ` +
            'from the code, holds no data of any caller, and every operation it describes keeps its own authorization.',
        });
      } else if (route.auth === 'none' && route.function === 'http') {
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            `${route.method} ${route.path} serves the web console's static files (${route.description}): a ` +
            'browser loads them before it can sign in, they hold no data, and the function answers only those ' +
            'files on this route (shared/channels/console-assets.ts); every call the page makes goes to a JWT route.',
        });
      } else if (route.auth === 'none') {
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            `${route.method} ${route.path} is a webhook (${route.description}): Slack and Teams cannot send an ` +
            'API Gateway credential, so the function verifies the request signature over the raw body before ' +
            'reading or storing anything (shared/channels/verification.ts) and rejects it with 401 otherwise.',
        });
      }
      routes.set(`${route.method} ${route.path}`, httpRoute);
    }
    // Route throttles of the webhooks (the L2 stage sets only the stage's): RouteSettings of
    // AWS::ApiGatewayV2::Stage, keyed by route key; the stage waits for those routes, as
    // API Gateway refuses settings of a route key it does not have yet.
    const stage = this.stage.node.defaultChild as CfnStage;
    const webhooks = props.routes.filter(isWebhookRoute);
    stage.routeSettings = Object.fromEntries(
      webhooks.map((route) => [
        routeKeyOf(route),
        // A JSON map property: CloudFormation's own casing, which CDK does not convert.
        {
          ThrottlingRateLimit: config.webhookThrottle.rateLimit,
          ThrottlingBurstLimit: config.webhookThrottle.burstLimit,
        },
      ]),
    );
    for (const route of webhooks) stage.node.addDependency(routes.get(routeKeyOf(route)) as HttpRoute);
    this.routes = routes;
    this.omitted = omitted;
    if (omitted.length > 0) {
      Annotations.of(this).addWarningV2(
        NO_JWT_ISSUER_WARNING,
        `no JWT issuer configured (-c cld:jwtIssuer=... -c cld:jwtAudience=...): the HTTP API leaves out ` +
          `${omitted.map((r) => `${r.method} ${r.path}`).join(', ')} and serves the webhooks only.`,
      );
    }
  }

  /** The URL of the `$default` stage, ending in `/`. */
  get url(): string {
    return this.stage.url;
  }
}

/** Construct id of a route: `POST /conversations/{id}/messages` → `PostConversationsIdMessages`. */
export function routeId(route: Pick<ApiRoute, 'method' | 'path'>): string {
  return pascal(`${route.method.toLowerCase()} ${route.path}`);
}

function pascal(text: string): string {
  return text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => `${part[0]?.toUpperCase()}${part.slice(1)}`)
    .join('');
}
