/**
 * How `cld` names itself in the commands it suggests (`continue with: … ask --conversation …`):
 * the way the user ran it, so a line copied from the output runs (a fresh user had no `cld` on
 * PATH after `npm ci` and ran `npm start --`, as the README says).
 */
import { describe, expect, it } from 'vitest';
import { invocation } from '../../cli/ask.js';
import { meant, usageOf } from '../../cli/usage.js';

describe('invocation', () => {
  it('is `npm start --` under npm start, `npx cld` under npx, and `cld` as the installed bin', () => {
    expect(invocation({ npm_lifecycle_event: 'start', npm_command: 'run-script' })).toBe('npm start --');
    expect(invocation({ npm_command: 'exec', npm_lifecycle_event: 'npx' })).toBe('npx cld');
    expect(invocation({ npm_lifecycle_event: 'test', npm_command: 'test' })).toBe('cld');
    expect(invocation({})).toBe('cld');
  });
});

describe('usage', () => {
  it("is a command's own lines with the exit codes, and all of it for an unknown command", () => {
    const ask = usageOf('ask');
    expect(ask.split('\n')[0]).toBe('usage:');
    expect(ask).toContain('cld ask [--docs <dir>]');
    expect(ask).not.toContain('cld show');
    expect(ask).toContain('exit codes:');
    expect(usageOf('tools')).toContain('cld tools approve|revoke');
    expect(usageOf('nonsense')).toContain('cld ingest');
  });

  it('names the command a typo was likely meant to be, within two edits', () => {
    expect(meant('aks')).toBe('ask');
    expect(meant('ingets')).toBe('ingest');
    expect(meant('approval')).toBe('approvals');
    expect(meant('frobnicate')).toBeUndefined();
    // Short words: within half their length, a command they begin first.
    expect(meant('sh')).toBe('show');
    expect(meant('a')).toBeUndefined();
  });
});
