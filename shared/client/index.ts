import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './openapi.js';

/**
 * The typed client of cld's HTTP API (issue 26): `openapi-fetch` over the types that
 * `openapi-typescript` generates from `openapi.json` (shared/client/openapi.ts, written by
 * `npm run build:openapi`). Every path, path parameter, query, header, request body and response
 * body (per status) is checked by the compiler against the document the server is built from, so
 * a route or schema change that breaks a caller fails `tsc`, not a user.
 *
 * ```ts
 * import { createCldClient } from 'cld/client';
 * const cld = createCldClient({ baseUrl: 'https://api.example.com', token });
 * const { data, error } = await cld.POST('/conversations', { body: { message: 'How do I …?' } });
 * const view = await cld.GET('/conversations/{id}', { params: { path: { id: data!.id } } });
 * ```
 *
 * Calls resolve to `{ data, response }` on a 2xx and `{ error, response }` otherwise (`error` is
 * the API's `{ code, message }` body; a 304 has `error: ''` and no body); they reject only when
 * the request cannot be made (network, CORS). Path parameters are percent-encoded (a URN with its
 * `:` and `/` can be passed as is to `/resources/{urn}`).
 */

export type { components, operations, paths } from './openapi.js';

/** The API's named schemas (`components.schemas` of openapi.json). */
export type Schemas = components['schemas'];
/** `GET /conversations/{id}`: a conversation's status, messages with their task trees and answers, approvals and budget. */
export type ConversationView = Schemas['Conversation'];
/** One user message of a {@link ConversationView} and what the system did with it. */
export type TurnView = Schemas['Message'];
/** One task of a turn's tree, with its calls, verdicts, citations and subtasks. */
export type TaskView = Schemas['Task'];
/** A turn's answer (`done`, `partial` or `failed`) with its citations. */
export type AnswerView = Schemas['Answer'];
/** A tool call awaiting, or after, a human decision. */
export type ApprovalView = Schemas['Approval'];
/** One step of a turn's timeline (plan, task, tool, verdict, answer) with its times. */
export type TimelineStep = Schemas['TimelineStep'];
/** `GET /conversations`: the caller's conversations, newest first. */
export type ConversationList = Schemas['ConversationList'];
/** One row of a {@link ConversationList}. */
export type ConversationSummary = Schemas['ConversationSummary'];
/** The 202 body of `POST /conversations` and `…/messages`. */
export type Accepted = Schemas['Accepted'];
/** An error body: a stable `code` and a `message`. */
export type ApiErrorBody = Schemas['Error'];
/** A conversation's or task's status. */
export type ConversationStatus = Schemas['ConversationStatus'];

/** The typed client: `GET`, `POST`, … on the API's paths, plus `use()` for middleware (openapi-fetch). */
export type CldClient = Client<paths>;

/** Options of {@link createCldClient}. */
export interface CldClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The API's origin and stage, e.g. `http://127.0.0.1:3000` or the stack's `ApiUrl` (a trailing `/` is ignored). */
  baseUrl: string;
  /** A bearer token (a JWT of the configured issuer, or a `CLD_API_TOKENS` token locally), sent as `Authorization: Bearer …`. */
  token?: string;
}

/**
 * A client of the API at `baseUrl`.
 * @param options `baseUrl`, an optional `token`, and any openapi-fetch option (`fetch`, `headers`,
 *   `cache`, …; a `headers.authorization` given here wins over `token`)
 * @returns an openapi-fetch client typed by openapi.json's paths
 */
export function createCldClient(options: CldClientOptions): CldClient {
  const { token, ...rest } = options;
  const client = createClient<paths>(rest);
  if (token)
    client.use({
      onRequest: ({ request }) => {
        if (!request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
        return request;
      },
    });
  return client;
}
