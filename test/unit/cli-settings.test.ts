/**
 * The CLI's one settings path (cli/settings.ts, issue 23): the environment every command parses
 * before it runs, with the schemas the functions use; a bad setting is a ConfigError naming the
 * variable and the key within it, which the CLI exits with code 2 for (cli/errors.ts).
 */
import { describe, expect, it } from 'vitest';
import { EXIT, exitCodeOf, UsageError } from '../../cli/errors.js';
import { loadCliSettings } from '../../cli/settings.js';
import { DEFAULT_LIMITS } from '../../shared/domain/limits.js';
import {
  ConfigError,
  InvalidUrnError,
  LimitExceededError,
  NotFoundError,
  ValidationError,
} from '../../shared/errors.js';

describe('loadCliSettings', () => {
  it('parses CLD_LIMITS over the defaults and CLD_TOOL_APPROVAL', () => {
    const settings = loadCliSettings({
      CLD_LIMITS: '{"conversationToolCalls":0}',
      CLD_TOOL_APPROVAL: '{"search":"always"}',
      CLD_OPERATOR_SUBJECTS: 'a, b',
    });
    expect(settings.limits).toEqual({ ...DEFAULT_LIMITS, conversationToolCalls: 0 });
    expect(settings.toolApproval).toEqual({ search: 'always' });
    expect(settings.channels.CLD_OPERATOR_SUBJECTS).toEqual(['a', 'b']);
    expect(settings.mcpServers).toEqual([]);
  });

  it('gives the defaults for an empty environment', () => {
    const settings = loadCliSettings({});
    expect(settings.limits).toEqual(DEFAULT_LIMITS);
    expect(settings.toolApproval).toEqual({});
    expect(settings.env.CLD_DATA_DIR).toBe('.cld');
  });

  it.each([
    ['CLD_LIMITS not JSON', { CLD_LIMITS: '{bad' }, /^CLD_LIMITS is not JSON$/],
    [
      'an unknown key of CLD_LIMITS',
      { CLD_LIMITS: '{"toolCalls":1}' },
      /^invalid CLD_LIMITS: .*"toolCalls"/s,
    ],
    [
      'a negative limit',
      { CLD_LIMITS: '{"conversationToolCalls":-1}' },
      /^invalid CLD_LIMITS: [\s\S]*at conversationToolCalls/,
    ],
    ['CLD_LIMITS that is not an object', { CLD_LIMITS: '[1]' }, /CLD_LIMITS/],
    ['CLD_TOOL_APPROVAL not JSON', { CLD_TOOL_APPROVAL: '{bad' }, /^CLD_TOOL_APPROVAL is not JSON$/],
    [
      'an unknown approval value',
      { CLD_TOOL_APPROVAL: '{"search":"sometimes"}' },
      /CLD_TOOL_APPROVAL[\s\S]*search/,
    ],
    ['an out-of-range channel limit', { CLD_HTTP_MAX_BODY_BYTES: '0' }, /CLD_HTTP_MAX_BODY_BYTES/],
    ['a malformed MCP server list', { CLD_MCP_SERVERS: 'not json' }, /CLD_MCP_SERVERS is not JSON/],
    ['a bad log level', { POWERTOOLS_LOG_LEVEL: 'LOUD' }, /POWERTOOLS_LOG_LEVEL/],
  ])('refuses %s with a ConfigError naming it (exit code 2)', (_what, env, message) => {
    let thrown: unknown;
    try {
      loadCliSettings(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toMatch(message);
    expect(exitCodeOf(thrown)).toBe(EXIT.USAGE);
  });
});

describe('exitCodeOf', () => {
  it.each([
    [new UsageError('x'), 2],
    [new ConfigError('x'), 2],
    [new ValidationError('x'), 2],
    [new InvalidUrnError('x'), 2],
    [Object.assign(new TypeError('Unknown option'), { code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }), 2],
    [new NotFoundError('x'), 3],
    [new LimitExceededError('x'), 1],
    [new Error('x'), 1],
  ])('maps %s to %i', (error, code) => {
    expect(exitCodeOf(error)).toBe(code);
  });
});
