import { compress } from '@aws-lambda-powertools/event-handler/http/middleware';
import type { Middleware } from '@aws-lambda-powertools/event-handler/types';

/** Smallest response body (bytes) that is compressed: below it gzip saves little (Powertools' default). */
export const COMPRESS_THRESHOLD_BYTES = 1_024;

/**
 * Compresses HTTP API responses with gzip when the client accepts it and the body is over
 * {@link COMPRESS_THRESHOLD_BYTES}, using Powertools' `compress` middleware. It returns the body
 * base64-encoded with `Content-Encoding: gzip` (payload format 2.0 `isBase64Encoded`); API
 * Gateway HTTP APIs do not compress on their own.
 *
 * Why: a Lambda function returns at most 6 MB (the synchronous invocation payload quota). The
 * status view of a 1,000-task conversation is 2.0 MB of JSON, 125 KB gzipped, so a conversation
 * past about 3,000 tasks could not be read uncompressed.
 *
 * Who gets gzip: a request whose `Accept-Encoding` accepts it ({@link acceptsGzip}). RFC 9110
 * §12.5.3 would allow any coding when the header is missing, but then `curl` without
 * `--compressed` would print binary; as in nginx and Express, no header means no compression.
 * Powertools 2.35 does not look at the content type (every body this API sends is text), and it
 * does not compress when the header mentions `identity` at all.
 *
 * What else changes, as RFC 9110 asks of a content coding:
 * - Every response a route or middleware returns carries `Vary: Accept-Encoding`, so a cache
 *   does not give the gzipped body to a client that did not ask for it. Errors thrown to the
 *   error handlers do not pass here, and are never compressed.
 * - To a client that accepts gzip the `ETag` is weak (`W/"…"`, §8.8.1: the gzipped bytes are
 *   another representation than the one a strong tag names). This holds on every response to
 *   that client, 304s and bodies too small to compress included, so it sees one tag per state.
 *   `If-None-Match` compares weakly (console-assets.ts `noneMatch`), so either form sent back
 *   gets its 304.
 */
export function compression(): Middleware {
  const gzip = compress({ encoding: 'gzip', threshold: COMPRESS_THRESHOLD_BYTES });
  return async (args) => {
    const accepts = acceptsGzip(args.reqCtx.req.headers.get('accept-encoding'));
    if (accepts) await gzip(args);
    else await args.next();
    const headers = args.reqCtx.res.headers;
    const vary = headers.get('vary');
    if (!vary?.toLowerCase().includes('accept-encoding'))
      headers.set('vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding');
    const etag = headers.get('etag');
    if (accepts && etag && !etag.startsWith('W/')) headers.set('etag', `W/${etag}`);
  };
}

/**
 * Whether an `Accept-Encoding` value accepts gzip (RFC 9110 §12.5.3; names case-insensitive):
 * the `q` of a `gzip` or `x-gzip` entry when there is one (so `gzip;q=0, *` refuses it), else of
 * a `*` entry; accepted when that `q` is not 0. Undefined, empty or neither listed: no.
 */
export function acceptsGzip(header: string | null | undefined): boolean {
  if (!header) return false;
  const entries = header.split(',').map((entry) => {
    const [coding = '', ...params] = entry.split(';').map((part) => part.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return { coding, accepted: q === undefined || Number(q.slice(2)) > 0 };
  });
  const named = entries.filter((e) => e.coding === 'gzip' || e.coding === 'x-gzip');
  const chosen = named.length > 0 ? named : entries.filter((e) => e.coding === '*');
  return chosen.some((e) => e.accepted);
}
