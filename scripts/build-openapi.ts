import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { openApiFile } from '../shared/channels/openapi.js';
import { generateOpenApiTypes, OPENAPI_TYPES_FILE } from './openapi-types.js';

/**
 * `npm run build:openapi`: writes the HTTP API's OpenAPI 3.1 document, generated from the route
 * table and the zod schemas (shared/channels/openapi.ts), to `openapi.json` at the repository
 * root: the same bytes `GET /openapi.json` serves; and the TypeScript types generated from it
 * by openapi-typescript (scripts/openapi-types.ts) to `shared/client/openapi.ts`, which the typed
 * client (shared/client/index.ts) and the console use. test/channels/openapi.test.ts fails when
 * either committed file differs from a fresh generation (run this script, then commit both).
 */
const root = new URL('../', import.meta.url);
const target = fileURLToPath(new URL('openapi.json', root));
await writeFile(target, openApiFile().body);
console.log(`wrote ${target}`);
const types = fileURLToPath(new URL(OPENAPI_TYPES_FILE, root));
await writeFile(types, await generateOpenApiTypes());
console.log(`wrote ${types}`);
