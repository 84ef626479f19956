/**
 * The console tests' browser check (issue 23): without Chromium they fail with one line that says
 * how to install it, the line the README's quick start gives.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHROMIUM_INSTALL, chromiumPath, DEFAULT_CHROMIUM } from '../helpers/chromium.js';

describe('chromiumPath', () => {
  it('fails with one line naming the missing path and the install command', () => {
    const call = () => chromiumPath({ CLD_CHROMIUM: '/no/such/chromium' });
    expect(call).toThrow(
      'no Chromium at /no/such/chromium: install it with `sudo apt-get install chromium` (Debian, Ubuntu) or set CLD_CHROMIUM to a Chromium executable',
    );
    expect(() => call()).not.toThrow(/\n/);
  });

  it('looks at /usr/bin/chromium when CLD_CHROMIUM is not set, and returns a path that exists', () => {
    expect(DEFAULT_CHROMIUM).toBe('/usr/bin/chromium');
    expect(chromiumPath({ CLD_CHROMIUM: process.execPath })).toBe(process.execPath);
  });

  it("is the install line the README's quick start names", () => {
    const quickStart = readFileSync('README.md', 'utf8')
      .split(/^## /m)
      .find((s) => s.startsWith('Quick start'));
    expect(quickStart).toContain(CHROMIUM_INSTALL);
  });
});
