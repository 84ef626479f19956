import { existsSync } from 'node:fs';

/** Where the console tests look for Chromium when `CLD_CHROMIUM` is not set: Debian's `chromium` package. */
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

/** The one line that says how to get the browser the console tests drive. */
export const CHROMIUM_INSTALL = 'sudo apt-get install chromium';

/**
 * The Chromium executable the console tests drive with playwright-core: `CLD_CHROMIUM`, else
 * {@link DEFAULT_CHROMIUM}.
 * @throws Error with one line naming the path looked at and the install command, when there is no
 *   file there (so a first `npm test` without a browser says what to do instead of a stack trace)
 */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  const path = env.CLD_CHROMIUM || DEFAULT_CHROMIUM;
  if (!existsSync(path))
    throw new Error(
      `no Chromium at ${path}: install it with \`${CHROMIUM_INSTALL}\` (Debian, Ubuntu) or set CLD_CHROMIUM to a Chromium executable`,
    );
  return path;
}
