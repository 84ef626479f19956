import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FUNCTIONS, type FunctionSpec } from '../../infra/lib/functions.js';
import { buildBundle, externalImports } from '../../scripts/bundles.js';

/**
 * The channel functions' bundles carry Powertools' SecretsProvider and the Secrets Manager client
 * exactly when the function table gives the function a secret (shared/channels/secrets.ts): the
 * `http` function reads none, so its bundle neither contains the provider nor imports the client
 * (an external `@aws-sdk/*` import would load it at every cold start). Bundles are built as the
 * stack builds them (scripts/bundles.ts `buildBundle`), into a temporary directory.
 */

const CHANNEL_FUNCTIONS = ['http', 'slack', 'teams', 'reply'] as const;
const work = mkdtempSync(join(tmpdir(), 'cld-secrets-bundle-'));

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('Secrets Manager in the channel bundles', () => {
  it.each(
    CHANNEL_FUNCTIONS,
  )('%s: the client and provider are in the bundle iff the function reads a secret', async (name) => {
    const spec: FunctionSpec = FUNCTIONS[name];
    const readsSecrets = Object.keys(spec.secrets ?? {}).length > 0;
    const built = await buildBundle(name, spec, work);
    const inputs = Object.values(built.metafile.outputs).flatMap((output) =>
      Object.entries(output.inputs).flatMap(([input, { bytesInOutput }]) =>
        bytesInOutput > 0 ? [input] : [],
      ),
    );

    expect(name === 'http' ? !readsSecrets : readsSecrets).toBe(true);
    expect(externalImports(built.metafile).includes('@aws-sdk/client-secrets-manager')).toBe(readsSecrets);
    expect(inputs.some((input) => input.includes('@aws-lambda-powertools/parameters/'))).toBe(readsSecrets);
  });
});
