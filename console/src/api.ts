import type { ConversationList } from '../../shared/channels/conversation-list.js';
import type { ConversationView } from '../../shared/channels/conversations.js';
import type { Accepted } from '../../shared/channels/http-api.js';

/**
 * The console's calls to the HTTP API (the routes of shared/channels/routes.ts, same origin). The
 * token goes in the `Authorization` header only. The status view is polled conditionally: each
 * poll sends the last `ETag` in `If-None-Match`, and an unchanged tree comes back as a 304 with no
 * body (API Gateway HTTP APIs do not stream, so this is how updates arrive without reloading).
 */

export type { Accepted, ConversationList, ConversationView };

/** An error response of the API (`{code, message}`), with its status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A client bound to a token; `onUnauthorized` runs on any 401 (the token expired or is wrong). */
export function createApi(token: string, onUnauthorized: () => void) {
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(path, {
      ...init,
      cache: 'no-store',
      headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
    });
    if (response.status === 401) onUnauthorized();
    if (!response.ok && response.status !== 304) {
      const body = (await response.json().catch(() => ({}))) as { code?: string; message?: string };
      throw new ApiError(response.status, body.code ?? 'HTTP', body.message ?? response.statusText);
    }
    return response;
  };
  const post = async (path: string, body: unknown): Promise<Accepted> =>
    (await call(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json())) as Accepted;
  return {
    /** `GET /conversations`: the caller's conversations, newest first. */
    list: async (): Promise<ConversationList> =>
      (await (await call('/conversations?limit=50')).json()) as ConversationList,
    /** `POST /conversations`: a new question. */
    ask: (message: string) => post('/conversations', { message }),
    /** `POST /conversations/{id}/messages`: a follow-up. */
    followUp: (id: string, message: string) =>
      post(`/conversations/${encodeURIComponent(id)}/messages`, { message }),
    /**
     * `GET /conversations/{id}` with `If-None-Match: etag`.
     * @returns the view and its ETag, or `unchanged` on a 304
     */
    view: async (
      id: string,
      etag: string | undefined,
    ): Promise<
      { unchanged: true } | { unchanged: false; view: ConversationView; etag: string | undefined }
    > => {
      const response = await call(`/conversations/${encodeURIComponent(id)}`, {
        headers: etag ? { 'if-none-match': etag } : {},
      });
      if (response.status === 304) return { unchanged: true };
      return {
        unchanged: false,
        view: (await response.json()) as ConversationView,
        etag: response.headers.get('etag') ?? undefined,
      };
    },
    /** `POST /conversations/{id}/approvals/{approvalId}`: approve or deny a pending tool call. */
    decide: async (id: string, approval: string, decision: 'approve' | 'deny', reason?: string) => {
      await call(`/conversations/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approval)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision, ...(reason ? { reason } : {}) }),
      });
    },
    /** `GET /resources/{urn}`: one resource (a cited chunk, its document). */
    resource: async <T>(urn: string): Promise<T> =>
      (await (await call(`/resources/${encodeURIComponent(urn)}`)).json()) as T,
  };
}

/** The API client type. */
export type Api = ReturnType<typeof createApi>;
