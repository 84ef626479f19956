import { compress } from '@aws-lambda-powertools/event-handler/http/middleware';
import type { Middleware } from '@aws-lambda-powertools/event-handler/types';

/** Smallest response body (bytes) that is compressed: below it gzip saves little (Powertools' default). */
export const COMPRESS_THRESHOLD_BYTES = 1_024;

/**
 * Compresses HTTP API responses with gzip when the client accepts it (`Accept-Encoding: gzip`)
 * and the body is at least {@link COMPRESS_THRESHOLD_BYTES} of a compressible type (JSON, HTML,
 * JavaScript, CSS): Powertools' `compress` middleware, which returns the body base64-encoded
 * with `Content-Encoding: gzip` (payload format 2.0 `isBase64Encoded`; API Gateway HTTP APIs do
 * not compress on their own). Why: a Lambda function returns at most 6 MB (the synchronous
 * invocation payload quota), and the status view of a 1,000-task conversation is 2.0 MB of JSON
 * — 125 KB gzipped — so a conversation past about 3,000 tasks could not be read uncompressed.
 *
 * Only a request whose `Accept-Encoding` names `gzip` (or `*`) with a non-zero `q` gets gzip.
 * RFC 9110 §12.5.3 would allow any coding when the header is missing, but then `curl` without
 * `--compressed` would print binary; as nginx and Express do, no header means no compression.
 *
 * Around it, as RFC 9110 asks of a content coding: every response carries
 * `Vary: Accept-Encoding` (a cache must not give the gzipped body to a client that did not ask
 * for it), and to a client that accepts gzip the `ETag` is weak (`W/"…"`, §8.8.1: the gzipped
 * bytes are another representation than the one the strong tag names) — on every response to
 * it, the 304s and the bodies too small to compress included, so a client always sees one tag
 * for one state. `If-None-Match` compares weakly (console-assets.ts `noneMatch`), so a client
 * sending either form back gets its 304.
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
 * Whether an `Accept-Encoding` value accepts gzip: a `gzip`, `x-gzip` or `*` entry whose
 * `q` is not 0 (RFC 9110 §12.5.3; names case-insensitive). Undefined or empty: no.
 */
export function acceptsGzip(header: string | null | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((entry) => {
    const [coding = '', ...params] = entry.split(';').map((part) => part.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
