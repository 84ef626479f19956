import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../infra/lib/config.js';
import { FUNCTIONS, KEYS } from '../../infra/lib/functions.js';
import { buildBundle } from '../../scripts/bundles.js';
import { ConfigError } from '../../shared/errors.js';
import { MCP_SDK_FILE } from '../../shared/tools/mcp/client.js';
import { startTestMcpServer } from '../mcp/server.js';
import {
  cdkJsonContext,
  isAllowed,
  logicalId,
  roleStatements,
  type Synthesized,
  synthesize,
} from './helpers.js';

/**
 * Issue 14 part 5: the stack takes the MCP servers and their secret ARNs from CDK context
 * (`cld:mcpServers`) and the operators from `cld:operatorSubjects`; the tool function gets the
 * server list and GetSecretValue on exactly the named secrets, nothing else gets either, and no
 * new wildcard is granted.
 */

const TOKEN_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:cld/weather-token-Ab12Cd';
const SERVERS = [
  {
    name: 'weather',
    url: 'https://mcp.weather.example/mcp',
    headers: { Authorization: { secret: TOKEN_ARN }, 'X-Client': 'cld' },
  },
  { name: 'docs', url: 'https://mcp.docs.example/mcp' },
];
const NAMES = Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[];

let app: Synthesized;

function fn(name: string) {
  const prefix = `${name[0]?.toUpperCase()}${name.slice(1)}Step`;
  const id = logicalId(app.json, 'AWS::Lambda::Function', `${prefix}Function`);
  const role = logicalId(app.json, 'AWS::IAM::Role', `${prefix}Role`);
  const env = (app.json.Resources[id]?.Properties?.Environment as { Variables: Record<string, unknown> })
    .Variables;
  return { env, statements: roleStatements(app.json, role) };
}

beforeAll(() => {
  app = synthesize({
    context: { 'cld:mcpServers': JSON.stringify(SERVERS), 'cld:operatorSubjects': 'ops-1,ops-2' },
  });
}, 120_000);

describe('MCP servers and operators in the stack', () => {
  it('gives the tool function the server list, and no other function', () => {
    for (const name of NAMES) {
      const { env } = fn(name);
      if (name === 'tool')
        expect(JSON.parse(env.CLD_MCP_SERVERS as string)).toEqual(
          resolveConfig((k) => ({ ...cdkJsonContext(), 'cld:mcpServers': SERVERS })[k]).mcpServers,
        );
      else expect(env.CLD_MCP_SERVERS, name).toBeUndefined();
    }
  });

  it('lets only the tool function read exactly the MCP header secrets, with GetSecretValue only', () => {
    for (const name of NAMES) {
      const { statements } = fn(name);
      expect(isAllowed(statements, 'secretsmanager:GetSecretValue', TOKEN_ARN), name).toBe(name === 'tool');
      expect(
        isAllowed(statements, 'secretsmanager:GetSecretValue', `${TOKEN_ARN.slice(0, -6)}Zz99Yy`),
        name,
      ).toBe(false);
      expect(isAllowed(statements, 'secretsmanager:DescribeSecret', TOKEN_ARN), name).toBe(false);
    }
    const reads = fn('tool').statements.filter((s) => s.Sid === 'ReadMcpServerSecrets');
    expect(reads).toHaveLength(1);
    expect([reads[0]?.Resource].flat()).toEqual([TOKEN_ARN]);
  });

  it('gives the http function the operators, and no other function', () => {
    for (const name of NAMES)
      expect(fn(name).env.CLD_OPERATOR_SUBJECTS, name).toBe(name === 'http' ? 'ops-1,ops-2' : undefined);
  });

  it('lets the steps read the registry, only the http function create decisions, and nobody create Tools', () => {
    const registryTool =
      'cld/tool.Registry.0123456789abcdef/tool.Server.0123456789abcdef/common.Tool.0123456789abcdef_Registry-Server-Tool.json';
    const decision = registryTool.replace(
      '_Registry-Server-Tool.json',
      '/tool.ToolApproval.0123456789abcdef_Registry-Server-Tool-ToolApproval.json',
    );
    const bucket = logicalId(app.json, 'AWS::S3::Bucket', 'ResourcesBucket');
    const object = (key: string) => `<${bucket}.Arn>/${key}`;
    for (const name of NAMES) {
      const { statements } = fn(name);
      const reads = ['assistant', 'tool', 'http'].includes(name);
      expect(isAllowed(statements, 's3:GetObject', object(registryTool)), name).toBe(reads);
      expect(isAllowed(statements, 's3:PutObject', object(registryTool)), name).toBe(false);
      expect(isAllowed(statements, 's3:PutObject', object(decision), { 's3:if-none-match': '*' }), name).toBe(
        name === 'http',
      );
    }
    expect(KEYS.toolApprovals.endsWith('_Registry-Server-Tool-ToolApproval.json')).toBe(true);
  });
});

describe('cld:mcpServers validation', () => {
  const resolve = (servers: unknown) => () =>
    resolveConfig((key) => ({ ...cdkJsonContext(), 'cld:mcpServers': servers })[key]);

  it.each([
    [[{ name: 'local', url: 'http://127.0.0.1:3000/mcp' }], /https: URL/],
    [[{ name: 'files', command: 'npx' }], /only url/],
    [
      [{ name: 'a', url: 'https://x.example/mcp', headers: { Authorization: { env: 'TOKEN' } } }],
      /no \{ "env" \}/,
    ],
    [
      [
        {
          name: 'a',
          url: 'https://x.example/mcp',
          headers: {
            Authorization: { secret: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:tok-*' },
          },
        },
      ],
      /complete Secrets Manager ARN/,
    ],
  ])('rejects %j', (servers, message) => {
    expect(resolve(servers)).toThrow(ConfigError);
    expect(resolve(servers)).toThrow(message);
  });

  it('defaults to no servers and no operators', () => {
    const config = resolveConfig((key) => cdkJsonContext()[key]);
    expect([config.mcpServers, config.operatorSubjects]).toEqual([[], []]);
  });
});

describe('the tool function asset', () => {
  it('carries the MCP SDK as a separate file, loaded at the first MCP call, not in index.mjs', async () => {
    const built = await buildBundle('tool', FUNCTIONS.tool, mkdtempSync(join(tmpdir(), 'cld-mcp-bundle-')));
    expect(
      Object.keys(built.metafile.inputs).filter((input) => input.includes('@modelcontextprotocol')),
    ).toEqual([]);
    const file = join(built.dir, MCP_SDK_FILE);
    expect(existsSync(file)).toBe(true);
    // The separate file is a working SDK client: it lists a real server's tools.
    const sdk = (await import(pathToFileURL(file).href)) as typeof import('../../shared/tools/mcp/sdk.js');
    const server = await startTestMcpServer();
    try {
      const client = new sdk.Client({ name: 'cld-test', version: '1' });
      await client.connect(new sdk.StreamableHTTPClientTransport(new URL(server.url)));
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('forecast');
      await client.close();
    } finally {
      await server.close();
    }
  }, 120_000);
});
