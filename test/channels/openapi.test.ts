import { readFile } from 'node:fs/promises';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { generateOpenApiTypes, OPENAPI_TYPES_FILE } from '../../scripts/openapi-types.js';
import { openApiDocument, openApiFile, openApiPath } from '../../shared/channels/openapi.js';
import { API_ROUTES } from '../../shared/channels/routes.js';

/**
 * The OpenAPI document (issue 26): the committed `openapi.json` is what the code generates now,
 * a maintained validator accepts it, and it names every route of API_ROUTES with its security.
 * That every real response matches it is test/channels/http-api.test.ts's job.
 */

type Operation = { security: Record<string, string[]>[]; responses: Record<string, unknown> };
const document = openApiDocument() as { paths: Record<string, Record<string, Operation>> };

describe('the OpenAPI document', () => {
  it('is committed as openapi.json, byte for byte what npm run build:openapi generates', async () => {
    const committed = await readFile(new URL('../../openapi.json', import.meta.url), 'utf8');
    expect(committed, 'openapi.json is stale: run npm run build:openapi and commit it').toBe(
      openApiFile().body,
    );
  });

  it('has its client types committed as shared/client/openapi.ts, what openapi-typescript generates from it now', async () => {
    const committed = await readFile(new URL(`../../${OPENAPI_TYPES_FILE}`, import.meta.url), 'utf8');
    const fresh = await generateOpenApiTypes();
    expect(fresh).toMatch(/^export interface paths \{$/m);
    expect(fresh).toContain('"/conversations/{id}": {');
    expect(committed, `${OPENAPI_TYPES_FILE} is stale: run npm run build:openapi and commit it`).toBe(fresh);
  });

  it('is a valid OpenAPI 3.1 document (@apidevtools/swagger-parser validate: schema and $refs)', async () => {
    const api = await SwaggerParser.validate(structuredClone(openApiDocument()) as never);
    expect((api as { openapi: string }).openapi).toBe('3.1.1');
  });

  it('has one operation per route of API_ROUTES, JWT-secured exactly where the route is', () => {
    const operations = Object.entries(document.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(API_ROUTES.map((r) => `${r.method} ${openApiPath(r.path)}`).sort());
    for (const route of API_ROUTES) {
      const operation = document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()] as Operation;
      const schemes = operation.security.flatMap((s) => Object.keys(s));
      if (route.auth === 'jwt') expect(schemes).toEqual(['bearerAuth']);
      else if (route.function === 'slack') expect(schemes).toEqual(['slackSignature', 'slackTimestamp']);
      else if (route.function === 'teams') expect(schemes).toEqual(['teamsHmac']);
      else expect(schemes).toEqual([]);
      if (route.auth === 'jwt') expect(Object.keys(operation.responses)).toContain('401');
    }
  });

  it('names the conversation statuses (partial included) and the error codes of the HTTP edge', () => {
    const text = openApiFile().body;
    const schemas = JSON.parse(text).components.schemas;
    expect(schemas.ConversationStatus.enum).toEqual([
      'pending',
      'running',
      'stalled',
      'done',
      'failed',
      'partial',
    ]);
    for (const code of [
      'VALIDATION',
      'IDEMPOTENCY_CONFLICT',
      'BUDGET_EXCEEDED',
      'MESSAGE_ENDED',
      'DECISION_CONFLICT',
    ])
      expect(schemas.Error.properties.code.enum).toContain(code);
    expect(schemas.ErrorInfo.description).toContain('`STALLED`');
    const start = JSON.parse(text).paths['/conversations'].post;
    expect(start.responses['422'].content['application/json'].schema.allOf[1].properties.code.enum).toEqual([
      'IDEMPOTENCY_CONFLICT',
    ]);
    expect(start.parameters).toContainEqual({ $ref: '#/components/parameters/Idempotency-Key' });
    expect(start.responses['202'].headers).toHaveProperty('Location');
  });
});
