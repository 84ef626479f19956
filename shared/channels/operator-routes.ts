import { ForbiddenError, type Router } from '@aws-lambda-powertools/event-handler/http';
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import type { Actor } from '../policy/port.js';
import { decideTool, type RegistryEntry, type RegistryView, readRegistry } from '../tools/registry.js';
import type { ChannelDeps, Channels } from './context.js';
import { callerSubject } from './gateway.js';

/**
 * The HTTP API's operator routes (issue 14 part 2): the tool registry for people operating the
 * system, not for conversation users.
 * - `GET /tools?limit=&cursor=` → `{servers: [{server, discoveredAt, tools: [{name, status, server,
 *   tool, schemaHash, description, decisions: [{decision, by, at, reason?}]}]}], nextCursor?}`:
 *   at most `limit` tools (default 100, at most 500) per page, the next page at `cursor=<nextCursor>`
 * - `POST /tools/{name}/approve` and `POST /tools/{name}/revoke` `{reason?}` → 200 `{name,
 *   status, decision: {decision, by, at, schemaHash, reason?}}`; 404 for a name that is no
 *   current discovered tool.
 * An operator is a caller whose JWT `sub` is listed in `CLD_OPERATOR_SUBJECTS` (the stack sets
 * it from the `cld:operatorSubjects` context); anyone else gets 403. The operator acts as
 * `{kind: operator, id: http:<sub>}`, whose only write the policy allows is a `tool.ToolApproval`
 * (rule `operator-decide-tools`); the decision records that id as `by`.
 */

/** Body of the decision routes. */
export const DecisionBodySchema = z.strictObject({
  /** Why, for the record (at most 2,000 characters). */
  reason: z.string().trim().min(1).max(2_000).optional(),
});

/** Path of `POST /tools/{name}/approve|revoke`. */
export const PathName = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z][a-z0-9-]*__[A-Za-z0-9_-]{1,62}$/, 'a discovered tool name, <server>__<tool>'),
});

/** Tools per `GET /tools` page by default, and at most. */
export const TOOLS_PAGE = { default: 100, max: 500 } as const;

/** Query of `GET /tools`: `limit` (1–500, default 100) and the `cursor` a previous page returned. */
export const ToolsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(TOOLS_PAGE.max).default(TOOLS_PAGE.default),
  cursor: z
    .string()
    .max(400)
    .regex(/^[A-Za-z0-9_-]+$/, 'a cursor from nextCursor')
    .optional(),
});

/** An entry's position in the view's order (server, then tool name). */
function positionOf(entry: Pick<RegistryEntry, 'server' | 'name'>): string {
  return `${entry.server} ${entry.name}`;
}

/**
 * One page of the registry: at most `limit` tools, in the view's order (servers by name, tools
 * by name), after the position `cursor` encodes (base64url of `<server> <tool name>`: a space
 * sorts before any character of either), so a tool discovered or gone between pages moves no
 * other tool. `nextCursor` is set when more
 * follow. A server none of whose tools is on the page is left out of it.
 * @throws ValidationError for a cursor that is not one this route returned
 */
export function pageOf(
  view: RegistryView,
  limit: number,
  cursor: string | undefined,
): { servers: RegistryView['servers']; nextCursor?: string } {
  let after: string | undefined;
  if (cursor !== undefined) {
    after = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!/^[a-z][a-z0-9-]* [A-Za-z0-9_-]{1,64}$/.test(after))
      throw new ValidationError('cursor: not a cursor from nextCursor');
  }
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const all = view.servers
    .flatMap((s) => s.entries.map((entry) => ({ server: s, entry, at: positionOf(entry) })))
    .sort((a, b) => order(a.at, b.at))
    .filter((item) => after === undefined || item.at > after);
  const taken = all.slice(0, limit);
  const servers = new Map<string, RegistryView['servers'][number]>();
  for (const { server, entry } of taken) {
    const page = servers.get(server.server) ?? { ...server, entries: [] };
    page.entries.push(entry);
    servers.set(server.server, page);
  }
  const last = taken.at(-1);
  return {
    servers: [...servers.values()],
    ...(all.length > limit && last ? { nextCursor: Buffer.from(last.at, 'utf8').toString('base64url') } : {}),
  };
}

/** Whether a request path is one of the operator routes (`/tools`, `/tools/...`). */
export function isOperatorPath(path: string): boolean {
  return path === '/tools' || path.startsWith('/tools/');
}

/**
 * The operator actor of a caller, `{kind: operator, id: http:<sub>}`.
 * @param subject the caller's JWT `sub`
 * @param operators `CLD_OPERATOR_SUBJECTS`
 * @throws ForbiddenError (403) when `subject` is not listed — checked before the request is
 *   validated, so a non-operator learns nothing of the routes' input
 */
export function operatorActor(subject: string, operators: readonly string[]): Actor {
  if (!operators.includes(subject))
    throw new ForbiddenError('only an operator (CLD_OPERATOR_SUBJECTS) may see or decide on tools');
  return { kind: 'operator', id: `http:${subject}` };
}

/** Registers the operator routes on the HTTP API's router (after its authentication middleware). */
export function registerOperatorRoutes(
  app: Router<{ store: { request: { user: string } } }>,
  options: { deps: () => Promise<ChannelDeps>; channels: () => Channels },
): void {
  const operatorOf = (event: unknown): Actor =>
    operatorActor(callerSubject(event) as string, options.channels().config.CLD_OPERATOR_SUBJECTS);

  app.get(
    '/tools',
    async (reqCtx) => {
      const operator = operatorOf(reqCtx.event);
      const view = await readRegistry((await options.deps()).resources, operator);
      const { limit, cursor } = reqCtx.valid.req.query;
      const page = pageOf(view, limit, cursor);
      return Response.json({
        servers: page.servers.map(({ server, discovery, entries }) => ({
          server,
          discoveredAt: discovery.at,
          tools: entries.map((e) => ({
            name: e.name,
            status: e.status,
            server,
            tool: e.tool.mcp?.tool,
            schemaHash: e.tool.mcp?.schemaHash,
            description: e.tool.function.description,
            decisions: e.approvals.map((a) => ({
              decision: a.decision,
              by: a.by,
              at: a.at,
              ...(a.reason ? { reason: a.reason } : {}),
            })),
          })),
        })),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      });
    },
    { validation: { req: { query: ToolsQuery } } },
  );

  for (const verb of ['approve', 'revoke'] as const) {
    app.post(
      `/tools/:name/${verb}`,
      async (reqCtx) => {
        const operator = operatorOf(reqCtx.event);
        const deps = await options.deps();
        const { entry, approval } = await decideTool(
          deps.resources,
          operator,
          {
            name: reqCtx.valid.req.path.name,
            decision: verb === 'approve' ? 'approved' : 'revoked',
            by: operator.id,
            reason: reqCtx.valid.req.body.reason,
          },
          deps.now(),
        );
        return Response.json({
          name: entry.name,
          status: entry.status,
          decision: {
            decision: approval.decision,
            by: approval.by,
            at: approval.at,
            schemaHash: approval.schemaHash,
            ...(approval.reason ? { reason: approval.reason } : {}),
          },
        });
      },
      { validation: { req: { path: PathName, body: DecisionBodySchema } } },
    );
  }
}
