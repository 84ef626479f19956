/**
 * Powertools' `SecretsProvider` (Secrets Manager, parameters utility), on its own: a function
 * bundle carries this module as a file of its asset ({@link ASSET_MODULES}`.secrets`,
 * shared/aws/asset-modules.ts) loaded at the first read of a secret by ARN, not in `index.mjs`,
 * where esbuild would hoist its static import of `@aws-sdk/client-secrets-manager` to the top of
 * the file and load the client at every cold start (≈ 70 ms of CPU).
 */
export { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
