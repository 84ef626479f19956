import {
  type Accepted,
  type AnswerView,
  type ApprovalView,
  type CldClient,
  type ConversationList,
  type ConversationSummary,
  type ConversationView,
  createCldClient,
  type Schemas,
  type TaskView,
  type TimelineStep,
  type TurnView,
} from '../../shared/client/index.js';

/**
 * The console's calls to the HTTP API (same origin), through the typed client of
 * shared/client/index.ts (openapi-fetch over the types openapi-typescript generates from
 * openapi.json): every path, parameter and body here is checked against the document the server
 * is built from. The token goes in the `Authorization` header only. The status view is polled
 * conditionally: each poll sends the last `ETag` in `If-None-Match`, and an unchanged tree comes
 * back as a 304 with no body (API Gateway HTTP APIs do not stream, so this is how updates arrive
 * without reloading).
 */

export type {
  Accepted,
  AnswerView,
  ApprovalView,
  ConversationList,
  ConversationSummary,
  ConversationView,
  TaskView,
  TimelineStep,
  TurnView,
};

/**
 * One cited resource with a readable label (`aws-ssm README › Lookups`: the document and the
 * chunk's heading). The view carries `sources` next to `citations` (answer and task) where the
 * server names them; where it does not, the console falls back to the URN.
 */
export type Source = { urn: string; label: string };

/** The cited sources of an answer or a task: `sources` when the view has them, else the URNs as labels. */
export function sourcesOf(item: { citations: string[]; sources?: Source[] | undefined }): Source[] {
  const labels = new Map((item.sources ?? []).map((s) => [s.urn, s.label]));
  return item.citations.map((urn) => ({ urn, label: labels.get(urn) || urn }));
}

/** A resource as `GET /resources/{urn}` returns it (its `meta`, and the type's own fields). */
export type ResourceBody = Schemas['Resource'];

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

/**
 * The data of a typed call, or an {@link ApiError} thrown from its error body; `onUnauthorized`
 * runs on a 401.
 */
async function expectData<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
  onUnauthorized: () => void,
): Promise<T> {
  const { data, error, response } = await call;
  if (response.status === 401) onUnauthorized();
  if (!response.ok) {
    const body = (typeof error === 'object' && error ? error : {}) as { code?: string; message?: string };
    throw new ApiError(response.status, body.code ?? 'HTTP', body.message ?? response.statusText);
  }
  return data as T;
}

/** A client bound to a token; `onUnauthorized` runs on any 401 (the token expired or is wrong). */
export function createApi(token: string, onUnauthorized: () => void, client?: CldClient) {
  const cld = client ?? createCldClient({ baseUrl: window.location.origin, token, cache: 'no-store' });
  const path = (id: string) => ({ params: { path: { id } } });
  return {
    /** `GET /conversations`: the caller's conversations, newest first. */
    list: (): Promise<ConversationList> =>
      expectData(cld.GET('/conversations', { params: { query: { limit: 50 } } }), onUnauthorized),
    /** `POST /conversations`: a new question. */
    ask: (message: string): Promise<Accepted> =>
      expectData(cld.POST('/conversations', { body: { message } }), onUnauthorized),
    /** `POST /conversations/{id}/messages`: a follow-up. */
    followUp: (id: string, message: string): Promise<Accepted> =>
      expectData(
        cld.POST('/conversations/{id}/messages', { ...path(id), body: { message } }),
        onUnauthorized,
      ),
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
      const call = cld.GET('/conversations/{id}', {
        params: { path: { id }, header: etag ? { 'If-None-Match': etag } : {} },
      });
      const { response } = await call;
      if (response.status === 304) return { unchanged: true };
      const view = await expectData(call, onUnauthorized);
      return { unchanged: false, view, etag: response.headers.get('etag') ?? undefined };
    },
    /** `POST /conversations/{id}/approvals/{approvalId}`: approve or deny a pending tool call. */
    decide: async (id: string, approvalId: string, decision: 'approve' | 'deny', reason?: string) => {
      await expectData(
        cld.POST('/conversations/{id}/approvals/{approvalId}', {
          params: { path: { id, approvalId } },
          body: { decision, ...(reason ? { reason } : {}) },
        }),
        onUnauthorized,
      );
    },
    /** `GET /resources/{urn}`: one resource (a cited chunk, its document). */
    resource: (urn: string): Promise<ResourceBody> =>
      expectData(cld.GET('/resources/{urn}', { params: { path: { urn } } }), onUnauthorized),
  };
}

/** The API client type. */
export type Api = ReturnType<typeof createApi>;
