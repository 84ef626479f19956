import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';

/**
 * The `fetch` the MCP client's Streamable HTTP transport uses (issue 22 finding 8): node:http(s)
 * with two guards a plain `fetch` lacks.
 *
 * 1. **Where it connects.** Every address the host resolves to is checked *at connect time* (a
 *    `lookup` hook on the socket, so a DNS answer that changes between a check and the connection
 *    — DNS rebinding — cannot slip through) against {@link BLOCKED_RANGES}: loopback, private
 *    (RFC 1918, unique-local `fc00::/7`), link-local (`169.254.0.0/16`, `fe80::/10`, which hold the
 *    instance metadata services `169.254.169.254` and `fd00:ec2::254`), carrier-grade NAT, the
 *    unspecified, multicast and reserved ranges; IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is checked
 *    as its IPv4 address (node:net `BlockList` does so). For `https` as for `http`. A server on
 *    such an address is reachable only when its configuration opts in (`allowPrivateAddresses`,
 *    addresses or CIDR blocks), or — as the configuration allows `http:` there — when its URL
 *    names a loopback host literally (`127.0.0.1`, `[::1]`, `localhost`) and the address is
 *    loopback. Redirects are not followed (an MCP endpoint has no reason to redirect).
 * 2. **How much it reads.** The response body is counted while it streams; past `maxBytes` the
 *    connection is destroyed and the body errors, so a response never sits in memory whole.
 */

/** Ranges no MCP server may resolve to without an opt-in, as `[address, prefix, family]`. */
export const BLOCKED_RANGES: readonly (readonly [string, number, 'ipv4' | 'ipv6'])[] = [
  ['0.0.0.0', 8, 'ipv4'], // "this network", unspecified
  ['10.0.0.0', 8, 'ipv4'], // RFC 1918
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['169.254.0.0', 16, 'ipv4'], // link-local, instance metadata 169.254.169.254
  ['172.16.0.0', 12, 'ipv4'], // RFC 1918
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.168.0.0', 16, 'ipv4'], // RFC 1918
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['::1', 128, 'ipv6'], // loopback
  ['64:ff9b::', 96, 'ipv6'], // NAT64: an IPv4 address behind it could be any of the above
  ['fc00::', 7, 'ipv6'], // unique-local, instance metadata fd00:ec2::254
  ['fe80::', 10, 'ipv6'], // link-local
  ['ff00::', 8, 'ipv6'], // multicast
];

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', '::1', 'localhost']);

/** `BLOCKED_RANGES` as a node:net `BlockList` (which also matches IPv4-mapped IPv6 addresses). */
export function blockedAddresses(): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of BLOCKED_RANGES) list.addSubnet(address, prefix, family);
  return list;
}

const BLOCKED = blockedAddresses();
const LOOPBACK = (() => {
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addAddress('::1', 'ipv6');
  return list;
})();

/**
 * An allow-list from `allowPrivateAddresses` entries (`10.0.12.7`, `10.0.12.0/24`, `fd12::/64`).
 * @throws TypeError for an entry that is neither an IP address nor a CIDR block
 */
export function allowList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    if (family === 0) throw new TypeError(`not an IP address or CIDR block: ${entry}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

/** Why an address may not be reached, or undefined when it may. */
export function refusal(
  address: string,
  options: { allowed: BlockList; loopbackHost: boolean },
): string | undefined {
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  if (!BLOCKED.check(address, family)) return undefined;
  if (options.allowed.check(address, family)) return undefined;
  if (options.loopbackHost && LOOPBACK.check(address, family)) return undefined;
  return `${address} is a loopback, private, link-local or reserved address (allowPrivateAddresses opts in)`;
}

/** The connection was refused by the address guard (not retried: the configuration must change). */
export class BlockedAddressError extends Error {
  readonly code = 'MCP_BLOCKED_ADDRESS';
  constructor(message: string) {
    super(message);
    this.name = 'BlockedAddressError';
  }
}

/** The response was longer than the limit (the connection was closed while reading). */
export class ResponseTooLargeError extends Error {
  readonly code = 'MCP_RESPONSE_TOO_LARGE';
  constructor(readonly limit: number) {
    super(`the MCP server's response exceeds ${limit} bytes (maxResponseBytes); reading stopped`);
    this.name = 'ResponseTooLargeError';
  }
}

/** Options of {@link guardedFetch}. */
export interface GuardedFetchOptions {
  /** Largest response body read, in bytes. */
  maxBytes: number;
  /** Addresses and CIDR blocks that may be reached though they are in {@link BLOCKED_RANGES}. */
  allowPrivateAddresses?: readonly string[];
  /** DNS lookup (default node:dns `lookup`); tests resolve names to chosen addresses with it. */
  lookup?: typeof dnsLookup;
}

/**
 * A `fetch` (the MCP SDK's `FetchLike`) with the address guard and the streamed size limit.
 * Errors: {@link BlockedAddressError} (as the cause of a rejected request), a rejected body read
 * with {@link ResponseTooLargeError}, and the network errors of node:http(s).
 */
export function guardedFetch(
  options: GuardedFetchOptions,
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  const allowed = allowList(options.allowPrivateAddresses ?? []);
  const resolve = options.lookup ?? dnsLookup;
  return async (input, init = {}) => {
    const url = new URL(String(input));
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new TypeError(`unsupported protocol ${url.protocol}`);
    const loopbackHost = LOOPBACK_HOSTS.has(url.hostname);
    const guard: LookupFunction = (hostname, lookupOptions, callback) => {
      resolve(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
        if (error) return callback(error, '', 0);
        const list = addresses as unknown as LookupAddress[];
        for (const { address } of list) {
          const why = refusal(address, { allowed, loopbackHost });
          if (why) return callback(new BlockedAddressError(`${hostname}: ${why}`), '', 0);
        }
        if (lookupOptions.all)
          return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
        const first = list[0];
        if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
        callback(null, first.address, first.family);
      });
    };
    // A literal IP host skips `lookup` in node:net: check it here.
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(literal)) {
      const why = refusal(literal, { allowed, loopbackHost });
      if (why) throw new TypeError('fetch failed', { cause: new BlockedAddressError(`${literal}: ${why}`) });
    }
    const headers = new Headers(init.headers);
    const body = await bodyOf(init.body);
    if (body !== undefined) headers.set('content-length', String(body.length));
    const outgoing: Record<string, string> = {};
    headers.forEach((value, name) => {
      outgoing[name] = value;
    });
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const response = await new Promise<IncomingMessage>((done, fail) => {
      const req = request(url, {
        method: init.method ?? 'GET',
        headers: outgoing,
        lookup: guard,
        ...(init.signal ? { signal: init.signal } : {}),
      });
      req.once('response', done);
      // As `fetch` does: an abort rejects with the AbortError itself, anything else is a TypeError.
      req.once('error', (error) =>
        fail(error.name === 'AbortError' ? error : new TypeError('fetch failed', { cause: error })),
      );
      req.end(body);
    });
    return toResponse(response, options.maxBytes);
  };
}

async function bodyOf(body: RequestInit['body']): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return Buffer.from(await new Response(body).arrayBuffer());
}

/** A Web `Response` whose body streams from `message`, cut off past `maxBytes`. */
function toResponse(message: IncomingMessage, maxBytes: number): Response {
  const status = message.statusCode ?? 502;
  const headers = new Headers();
  for (const [name, value] of Object.entries(message.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  let read = 0;
  message.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > maxBytes) message.destroy(new ResponseTooLargeError(maxBytes));
  });
  const nullBody = status === 204 || status === 205 || status === 304 || status < 200;
  if (nullBody) {
    message.resume();
    return new Response(null, { status, statusText: message.statusMessage ?? '', headers });
  }
  const body = Readable.toWeb(message) as unknown as ReadableStream<Uint8Array>;
  return new Response(body, { status, statusText: message.statusMessage ?? '', headers });
}
