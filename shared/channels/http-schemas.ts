import * as z from 'zod';
import { MAX_MESSAGE_CHARS } from '../domain/limits.js';

/*
 * The HTTP API's request bodies and paths as strict zod schemas (unknown fields → 400): what
 * http-api.ts validates with and what the OpenAPI document (openapi.ts) is generated from.
 */

const Hint = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a catalog name');

/** Body of `POST /conversations`. */
export const StartConversationBodySchema = z.strictObject({
  /** The user's message. */
  message: z.string().trim().min(1).max(MAX_MESSAGE_CHARS),
  /** Name of a catalog Assistant the caller prefers (checked against the catalog). */
  assistant: Hint.optional(),
  /** Name of a catalog Tool the caller prefers (checked against the catalog). */
  tool: Hint.optional(),
});

/** Body of `POST /conversations/{id}/messages`. */
export const AddMessageBodySchema = StartConversationBodySchema;

/** Path of the `/conversations/{id}` routes. */
export const PathId = z.strictObject({ id: z.uuid({ message: 'conversation id must be a UUID' }) });

/** Path of `POST /conversations/{id}/approvals/{approvalId}`. */
export const ApprovalPath = z.strictObject({
  id: PathId.shape.id,
  approvalId: z.string().regex(/^[0-9a-f]{16}$/, 'approval id must be 16 lowercase hex digits'),
});

/** Body of `POST /conversations/{id}/approvals/{approvalId}`. */
export const DecideBodySchema = z.strictObject({
  /** `approve` runs the call; `deny` answers it DENIED (the model sees the reason). */
  decision: z.enum(['approve', 'deny']),
  /** Why (optional, at most 1,000 characters). */
  reason: z.string().trim().min(1).max(1_000).optional(),
});
