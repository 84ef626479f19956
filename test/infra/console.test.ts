/**
 * The web console in the deployed stack (issue 15): the http function's asset carries the console
 * built by the same hook the stack runs (console/build.ts, ≤ 150 KB of JavaScript gzipped), the
 * function is told where (`CLD_CONSOLE_DIR`) and how to sign in (`CLD_CONSOLE_AUTH` from
 * `cld:consoleAuth`), the console's routes have no authorizer, and the stack outputs its URL.
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_SOURCE, findConsoleSource, MAX_CONSOLE_JS_GZIP_BYTES } from '../../console/build.js';
import { consoleCommands, LAMBDA_CONSOLE_DIR, PROJECT_ROOT } from '../../infra/lib/bundling.js';
import { consoleAuthOf, resolveConfig } from '../../infra/lib/config.js';
import { type ConsoleAuth, consoleResponse, parseConsoleAuth } from '../../shared/channels/console-assets.js';
import { API_CONTEXT, cdkJsonContext, type Synthesized, synthesize } from './helpers.js';

const DOMAIN = 'https://cld-users.auth.eu-west-1.amazoncognito.com';

let api: Synthesized;

/**
 * The synth (the whole stack, cdk-nag's checks, no bundling) took about 60 s wall at load 17–21 on
 * 2 cores (the file: 29 s of CPU, 146 s wall, issue 23), at the default 60 s hook timeout; three
 * minutes leave room for load 30.
 */
const SYNTH_MS = 180_000;

beforeAll(() => {
  api = synthesize({ context: { ...API_CONTEXT, 'cld:consoleAuth': JSON.stringify({ domain: DOMAIN }) } });
}, SYNTH_MS);

/** The http function's environment (found by its `CLD_FUNCTION`). */
function httpEnvironment(): Record<string, unknown> {
  for (const resource of Object.values(api.json.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    const env = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
      ?.Variables;
    if (env?.CLD_FUNCTION === 'http') return env;
  }
  throw new Error('no http function');
}

describe('the console in the stack', () => {
  it('tells the http function where its console is and how to sign in (Cognito hosted UI, PKCE)', () => {
    const env = httpEnvironment();
    expect(env.CLD_CONSOLE_DIR).toBe(LAMBDA_CONSOLE_DIR);
    const auth = parseConsoleAuth(env.CLD_CONSOLE_AUTH as string);
    expect(auth).toEqual({
      kind: 'oidc',
      authorizationEndpoint: `${DOMAIN}/oauth2/authorize`,
      tokenEndpoint: `${DOMAIN}/oauth2/token`,
      clientId: API_CONTEXT['cld:jwtAudience'].split(',')[0],
      scopes: ['openid'],
    });
  });

  it('outputs the console URL, the API root', () => {
    const output = api.json.Outputs?.ConsoleUrl;
    expect(output).toBeDefined();
    expect(JSON.stringify(output?.Value)).toBe(JSON.stringify(api.json.Outputs?.ApiUrl?.Value));
  });

  it('puts no authorizer on the console’s routes, and serves only its files there', () => {
    const routes = Object.values(api.json.Resources)
      .filter((r) => r.Type === 'AWS::ApiGatewayV2::Route')
      .map((r) => r.Properties as { RouteKey: string; AuthorizationType?: string });
    const console = routes.filter((r) => r.RouteKey === 'GET /' || r.RouteKey === 'GET /console/{file}');
    expect(console.map((r) => [r.RouteKey, r.AuthorizationType ?? 'NONE']).sort()).toEqual([
      ['GET /', 'NONE'],
      ['GET /console/{file}', 'NONE'],
    ]);
  });

  it('refuses cld:consoleAuth without a JWT issuer, and with neither a domain nor both endpoints', () => {
    const base = { ...cdkJsonContext() };
    const context = (extra: Record<string, unknown>) => (key: string) => ({ ...base, ...extra })[key];
    expect(() => resolveConfig(context({ 'cld:consoleAuth': JSON.stringify({ domain: DOMAIN }) }))).toThrow(
      /cld:jwtIssuer/,
    );
    expect(() =>
      resolveConfig(
        context({ ...API_CONTEXT, 'cld:consoleAuth': JSON.stringify({ tokenEndpoint: `${DOMAIN}/t` }) }),
      ),
    ).toThrow(/either domain/);
    const generic = resolveConfig(
      context({
        ...API_CONTEXT,
        'cld:consoleAuth': JSON.stringify({
          authorizationEndpoint: 'https://id.example.com/authorize',
          tokenEndpoint: 'https://id.example.com/token',
          clientId: 'console',
          scopes: ['openid', 'email'],
        }),
      }),
    );
    expect(consoleAuthOf(generic)).toEqual({
      kind: 'oidc',
      authorizationEndpoint: 'https://id.example.com/authorize',
      tokenEndpoint: 'https://id.example.com/token',
      clientId: 'console',
      scopes: ['openid', 'email'],
    });
    expect(consoleAuthOf(resolveConfig(context(API_CONTEXT)))).toBeUndefined();
  });
});

describe('the bundling hook', () => {
  it('builds the console into the asset: a page, one script within 150 KB gzipped, one stylesheet', async () => {
    const asset = mkdtempSync(join(tmpdir(), 'cld-console-asset-'));
    for (const command of consoleCommands(PROJECT_ROOT, asset)) execSync(command, { stdio: 'pipe' });

    // Sorted by extension: the hashes decide the names' own order.
    const files = readdirSync(join(asset, 'console')).sort(
      (a, b) => extname(a).localeCompare(extname(b)) || a.localeCompare(b),
    );
    expect(files).toEqual([
      expect.stringMatching(/^main-[A-Z0-9]{8}\.css$/),
      'index.html',
      expect.stringMatching(/^main-[A-Z0-9]{8}\.js$/),
    ]);
    const script = files.find((f) => f.endsWith('.js')) as string;
    const gzipped = gzipSync(readFileSync(join(asset, 'console', script)), { level: 9 }).length;
    expect(gzipped).toBeLessThanOrEqual(MAX_CONSOLE_JS_GZIP_BYTES);

    // What the function answers from that folder, with the CSP naming the token endpoint's origin.
    const auth: ConsoleAuth = consoleAuthOf(
      resolveConfig(
        (key) => ({ ...cdkJsonContext(), ...API_CONTEXT, 'cld:consoleAuth': { domain: DOMAIN } })[key],
      ),
    ) as ConsoleAuth;
    const page = await consoleResponse(join(asset, 'console'), 'index.html', auth, undefined);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`/console/${script}`);
    expect(page.headers.get('content-security-policy')).toContain(`connect-src 'self' ${DOMAIN}`);
  });
});

describe('findConsoleSource', () => {
  it('finds console/ from its own folder and from a bundle elsewhere in the project, and gives up at the root', () => {
    expect(findConsoleSource(CONSOLE_SOURCE)).toBe(CONSOLE_SOURCE);
    expect(findConsoleSource(join(PROJECT_ROOT, 'test', '.kill-bundle'))).toBe(join(PROJECT_ROOT, 'console'));
    const elsewhere = mkdtempSync(join(tmpdir(), 'cld-no-console-'));
    expect(findConsoleSource(elsewhere)).toBe(elsewhere);
  });
});
