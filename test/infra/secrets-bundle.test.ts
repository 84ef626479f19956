import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { FUNCTIONS, type FunctionSpec } from '../../infra/lib/functions.js';
import { buildBundle, externalImports } from '../../scripts/bundles.js';
import { MCP_SDK_FILE } from '../../shared/tools/mcp/client.js';

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

describe('Secrets Manager in the tool function asset', () => {
  it('is left out of index.mjs and loads with the MCP SDK file, whose SecretsProvider reads a secret', async () => {
    const built = await buildBundle('tool', FUNCTIONS.tool, work);
    // The client would load at every cold start of the tool function if index.mjs imported it.
    expect(externalImports(built.metafile)).not.toContain('@aws-sdk/client-secrets-manager');
    const sdkFile = join(built.dir, MCP_SDK_FILE);
    expect(readFileSync(sdkFile, 'utf8')).toContain('"@aws-sdk/client-secrets-manager"');

    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:cld/mcp-token-AbCdEf';
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const { SecretId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { SecretId: string };
        res.setHeader('content-type', 'application/x-amz-json-1.1');
        res.end(JSON.stringify({ ARN: SecretId, Name: 'cld/mcp-token', SecretString: 'token-from-sm' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const sdk = (await import(
        pathToFileURL(sdkFile).href
      )) as typeof import('../../shared/tools/mcp/sdk.js');
      const provider = new sdk.SecretsProvider({
        clientConfig: {
          region: 'eu-west-1',
          endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
        },
      });
      expect(await provider.get(arn)).toBe('token-from-sm');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 120_000);
});
