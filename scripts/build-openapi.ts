import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { openApiFile } from '../shared/channels/openapi.js';

/**
 * `npm run build:openapi`: writes the HTTP API's OpenAPI 3.1 document, generated from the route
 * table and the zod schemas (shared/channels/openapi.ts), to `openapi.json` at the repository
 * root: the same bytes `GET /openapi.json` serves. test/channels/openapi.test.ts fails when the
 * committed file differs from a fresh generation (run this script, then commit the file).
 */
const target = fileURLToPath(new URL('../openapi.json', import.meta.url));
await writeFile(target, openApiFile().body);
console.log(`wrote ${target}`);
