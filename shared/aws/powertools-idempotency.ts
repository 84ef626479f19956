/**
 * Powertools' DynamoDB persistence layer for idempotency, on its own: a function bundle carries
 * this module as a file of its asset ({@link ASSET_MODULES}`.idempotency`, shared/aws/asset-modules.ts)
 * loaded at the first use of the layer, not in `index.mjs`. The layer's module imports
 * `@aws-sdk/client-dynamodb` and `@aws-sdk/util-dynamodb` statically, and esbuild hoists a bundled
 * module's imports of external packages to the top of the file, so inside `index.mjs` both
 * clients loaded at every cold start of six functions (≈ 180 ms of CPU, docs/numbers.md).
 */
export { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
