import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Middleware } from 'openapi-fetch';
import { expect } from 'vitest';
import { openApiDocument, openApiPath } from '../../shared/channels/openapi.js';
import { matchRoute } from '../../shared/channels/routes.js';

/**
 * The HTTP API contract (issue 26): every response a test receives from the served API is checked
 * against the OpenAPI document the code generates (the one committed as openapi.json): its status
 * must be one the operation documents, its media type one that response documents, its JSON body
 * must match that response's schema (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1; the
 * view schemas are strict, so an undocumented field fails too), and the headers it documents
 * (`Location`, `ETag`, `Cache-Control`) must be there. A path no route matches (the gateway's own
 * 404) must still carry an `Error` body.
 */
const contract = openApiDocument() as {
  paths: Record<string, Record<string, { responses: Record<string, ContractResponse> }>>;
};
type ContractResponse = { headers?: Record<string, unknown>; content?: Record<string, unknown> };
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(contract, 'openapi.json');

/** Response headers as fetch (`Headers`) or node:http (`IncomingHttpHeaders`) gives them. */
export type AnyHeaders = Headers | Record<string, string | string[] | undefined>;

let checked = 0;

/** Routes whose 200 the document describes as "Acknowledged (no body)" or a JSON body. */
const EMPTY_OK = ['/slack/events', '/slack/commands'];

/** How many responses `expectContract` has checked in this test file (for reports and sanity asserts). */
export function contractChecks(): number {
  return checked;
}

/** A JSON Pointer (RFC 6901) as a URI fragment (`{` in `{file}` percent-encoded, RFC 3986). */
function pointer(...tokens: string[]): string {
  return tokens.map((t) => encodeURIComponent(t.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');
}

function header(headers: AnyHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Fails (vitest `expect`) unless a response — status, headers, body text — is what openapi.json
 * says of the operation `method` `path` (a raw request path, query allowed) resolves to.
 */
export function expectContract(
  method: string,
  path: string,
  status: number,
  headers: AnyHeaders,
  text: string,
): void {
  checked++;
  const where = `${method} ${path} → ${status}`;
  // HEAD is GET without a body (RFC 9110 §9.3.2): the GET operation's statuses and headers. The
  // document has no `head` operation, so a route that does not answer HEAD (API Gateway matches a
  // `GET` route for GET only) answers the gateway's 404, bodiless too.
  const head = method.toUpperCase() === 'HEAD';
  if (head) {
    expect(text, `${where}: a HEAD response with a body`).toBe('');
    if (status === 404) return;
  }
  const verb = head ? 'get' : method.toLowerCase();
  const matched = matchRoute(verb, path.split('?')[0] as string);
  if (!matched) {
    // The gateway's own 404: no route, so no operation; still an `Error` body.
    const validate = ajv.getSchema('openapi.json#/components/schemas/Error');
    expect(validate?.(JSON.parse(text)), `${where}: ${ajv.errorsText(validate?.errors)}`).toBe(true);
    return;
  }
  const template = openApiPath(matched.route.path);
  const operation = contract.paths[template]?.[verb];
  const documented = operation?.responses[String(status)];
  expect(
    documented,
    `${where}: status not documented (${Object.keys(operation?.responses ?? {})})`,
  ).toBeDefined();
  for (const name of Object.keys(documented?.headers ?? {}))
    expect(header(headers, name), `${where}: documented header ${name} missing`).toBeDefined();
  const content = documented?.content ?? {};
  if (head) return;
  if (Object.keys(content).length === 0) {
    expect(text, `${where}: a body the document does not describe`).toBe('');
    return;
  }
  // An empty body where content is documented: only the webhooks' bare acknowledgement, which the
  // document describes as "Acknowledged (no body)" (OpenAPI cannot mark a response body optional).
  if (text === '') {
    expect(EMPTY_OK, `${where}: an empty body where the document describes one`).toContain(
      matched.route.path,
    );
    return;
  }
  const media = (header(headers, 'content-type') ?? '').split(';')[0]?.trim() ?? '';
  expect(Object.keys(content), `${where}: media type ${media || '(none)'} not documented`).toContain(media);
  if (media !== 'application/json') return;
  const body = JSON.parse(text) as unknown;
  // A JSON response documented without a schema (the console's sign-in configuration): JSON is all it promises.
  if (!(content['application/json'] as { schema?: unknown }).schema) return;
  const ref = `openapi.json#/${pointer('paths', template, verb, 'responses', String(status), 'content', 'application/json', 'schema')}`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  expect(validate(body), `${where}: ${ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`).toBe(true);
}

/** An openapi-fetch middleware that checks every response the typed client receives. */
export const contractChecked: Middleware = {
  async onResponse({ request, response }) {
    const url = new URL(request.url);
    const text = await response.clone().text();
    expectContract(request.method, url.pathname + url.search, response.status, response.headers, text);
  },
};

/**
 * `fetch`, with each response checked by `expectContract` before it is returned (its body read
 * from a clone, so the caller still reads it). Use for requests to the served API only.
 */
export async function contractFetch(input: string | URL, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  const url = new URL(String(input));
  expectContract(
    init?.method ?? 'GET',
    url.pathname + url.search,
    response.status,
    response.headers,
    await response.clone().text(),
  );
  return response;
}
