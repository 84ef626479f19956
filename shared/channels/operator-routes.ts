import { ForbiddenError, type Router } from '@aws-lambda-powertools/event-handler/http';
import * as z from 'zod';
import type { Actor } from '../policy/port.js';
import { decideTool, readRegistry } from '../tools/registry.js';
import type { ChannelDeps, Channels } from './context.js';
import { callerSubject } from './gateway.js';

/**
 * The HTTP API's operator routes (issue 14 part 2): the tool registry for people operating the
 * system, not for conversation users.
 * - `GET /tools` → `{servers: [{server, discoveredAt, tools: [{name, status, server, tool,
 *   schemaHash, description, decisions: [{decision, by, at, reason?}]}]}]}`
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

const PathName = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z][a-z0-9-]*__[A-Za-z0-9_-]{1,62}$/, 'a discovered tool name, <server>__<tool>'),
});

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

  app.get('/tools', async (reqCtx) => {
    const operator = operatorOf(reqCtx.event);
    const view = await readRegistry((await options.deps()).resources, operator);
    return Response.json({
      servers: view.servers.map(({ server, discovery, entries }) => ({
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
    });
  });

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
