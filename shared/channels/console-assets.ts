import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import * as z from 'zod';
import { ConfigError, NotFoundError } from '../errors.js';

/**
 * The web console's static assets (issue 15), served by the HTTP API function itself — locally by
 * `serve` at `/`, in AWS by the same function behind the same HTTP API — from a folder the build
 * wrote (`CLD_CONSOLE_DIR`: `serve` builds into its data folder at start, the stack's bundling into
 * the function's asset). Routes: `GET /` (the page) and `GET /console/{file}` (its script and
 * style, content-hashed names, and `config.json`: how to sign in). No route here needs a caller:
 * the page holds no data; every call it makes goes to the authenticated routes.
 */

/** How the console signs in: a pasted bearer token (`serve`), or OIDC authorization code + PKCE. */
export const ConsoleAuthSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('token') }),
  z.strictObject({
    kind: z.literal('oidc'),
    /** The issuer's authorization endpoint (Cognito: `https://<domain>/oauth2/authorize`). */
    authorizationEndpoint: z.url({ protocol: /^https$/ }),
    /** The issuer's token endpoint (Cognito: `https://<domain>/oauth2/token`). */
    tokenEndpoint: z.url({ protocol: /^https$/ }),
    /** Public client (no secret) registered with the console's URL as a callback URL. */
    clientId: z.string().min(1).max(256),
    scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/)).default(['openid']),
  }),
]);

/** Parsed `CLD_CONSOLE_AUTH`. */
export type ConsoleAuth = z.infer<typeof ConsoleAuthSchema>;

/**
 * Parses `CLD_CONSOLE_AUTH` (JSON of {@link ConsoleAuthSchema}); undefined → `{kind: 'token'}`.
 * @throws ConfigError for invalid JSON or fields
 */
export function parseConsoleAuth(json: string | undefined): ConsoleAuth {
  if (json === undefined || json === '') return { kind: 'token' };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new ConfigError('CLD_CONSOLE_AUTH is not JSON', { cause: error });
  }
  const parsed = ConsoleAuthSchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(`invalid CLD_CONSOLE_AUTH: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** One asset, ready to send. */
export interface ConsoleAsset {
  body: string;
  contentType: string;
  /** Strong validator (quoted SHA-256 prefix of the body). */
  etag: string;
  /** `no-cache` for the page and the config; a year, immutable, for content-hashed files. */
  cacheControl: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
};

/** A file name the console routes serve: `[A-Za-z0-9._-]`, one segment, a known extension. */
const FILE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

const loaded = new Map<string, Promise<Map<string, ConsoleAsset>>>();

/**
 * The assets of `dir` (read once per process and folder): every `.html`, `.js`, `.css` file.
 * @throws ConfigError when the folder does not exist or has no `index.html`
 */
export function consoleAssets(dir: string): Promise<Map<string, ConsoleAsset>> {
  let assets = loaded.get(dir);
  if (!assets) {
    assets = readAssets(dir);
    assets.catch(() => loaded.delete(dir));
    loaded.set(dir, assets);
  }
  return assets;
}

/** Drops what {@link consoleAssets} read from `dir` (after a rebuild into it). */
export function forgetConsoleAssets(dir: string): void {
  loaded.delete(dir);
}

async function readAssets(dir: string): Promise<Map<string, ConsoleAsset>> {
  const names = await readdir(dir).catch((error: unknown) => {
    throw new ConfigError(`CLD_CONSOLE_DIR ${dir} cannot be read`, { cause: error });
  });
  const assets = new Map<string, ConsoleAsset>();
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (!type || !FILE.test(name)) continue;
    const body = await readFile(join(dir, name), 'utf8');
    const hashed = /-[A-Z0-9]{8}\.(js|css)$/.test(name);
    assets.set(name, {
      body,
      contentType: type,
      etag: strongEtag(body),
      cacheControl: hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  if (!assets.has('index.html')) throw new ConfigError(`CLD_CONSOLE_DIR ${dir} has no index.html`);
  return assets;
}

/** A strong entity tag (RFC 9110 §8.8.3) of a body: the quoted base64url SHA-256, 22 characters. */
export function strongEtag(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
}

/**
 * Whether an `If-None-Match` header matches `etag` (RFC 9110 §13.1.2: `*`, or a list of tags
 * compared weakly — a `W/` prefix ignored).
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** The security headers of the page: no framing, no referrer, scripts and styles from this origin only. */
export function pageHeaders(auth: ConsoleAuth): Record<string, string> {
  const tokenOrigin = auth.kind === 'oidc' ? ` ${new URL(auth.tokenEndpoint).origin}` : '';
  return {
    'content-security-policy': [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      `connect-src 'self'${tokenOrigin}`,
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  };
}

/**
 * The response for a console file (`index.html` for `/`): 304 when `If-None-Match` matches.
 * @throws NotFoundError for a name that is not an asset
 */
export async function consoleResponse(
  dir: string,
  name: string,
  auth: ConsoleAuth,
  ifNoneMatch: string | undefined,
): Promise<Response> {
  if (name === 'config.json') {
    const body = JSON.stringify(auth);
    return conditional(
      { body, contentType: TYPES['.json'] as string, etag: strongEtag(body), cacheControl: 'no-cache' },
      ifNoneMatch,
      {},
    );
  }
  if (!FILE.test(name)) throw new NotFoundError('no such console file');
  const asset = (await consoleAssets(dir)).get(name);
  if (!asset) throw new NotFoundError('no such console file');
  return conditional(
    asset,
    ifNoneMatch,
    name === 'index.html' ? pageHeaders(auth) : { 'x-content-type-options': 'nosniff' },
  );
}

function conditional(asset: ConsoleAsset, ifNoneMatch: string | undefined, extra: Record<string, string>) {
  const headers = { etag: asset.etag, 'cache-control': asset.cacheControl, ...extra };
  if (noneMatch(ifNoneMatch, asset.etag)) return new Response(null, { status: 304, headers });
  return new Response(asset.body, {
    status: 200,
    headers: { ...headers, 'content-type': asset.contentType },
  });
}
