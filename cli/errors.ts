import { ConfigError, InvalidUrnError, NotFoundError, ValidationError } from '../shared/errors.js';

/**
 * The CLI's exit codes, the same for every command (issue 23; README "Exit codes"):
 * - `OK` 0: done (`ask`: answered; `replay`: projections equal; `resume`: nothing left open);
 * - `FAILED` 1: the run ended without what it was for (no answer, an answer with an error, a limit
 *   hit — a message over 16,000 characters included —, projections that differ, messages still
 *   open, a server that could not be discovered);
 * - `USAGE` 2: bad usage or bad input, before any work: unknown command or option, a missing
 *   argument, a malformed URN, a file or folder that does not exist, a setting (`CLD_*`) that is
 *   malformed, has an unknown key or is out of range — the message names it;
 * - `NOT_FOUND` 3: a well-formed URN or name with nothing stored under it (`show`, `replay`,
 *   `resume <urn>`, `tools approve|revoke`);
 * - `PARTIAL` 4: `ask`'s answer is partial (issue 21): printed in full, some parts answered and
 *   the others named under "Not answered:" with why;
 * - `APPROVAL_NEEDED` 5: `ask` without a terminal stopped at a tool call that waits for approval; it
 *   printed the request and the `cld approvals approve|deny <request-urn>` commands that decide it;
 * - `INTERRUPTED` 130: stopped by Ctrl-C (128 + SIGINT), what was stored stays.
 */
export const EXIT = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  NOT_FOUND: 3,
  PARTIAL: 4,
  APPROVAL_NEEDED: 5,
  INTERRUPTED: 130,
} as const;

/** Bad command-line usage: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/** A run that ended without the answer it was for: one `cld: ...` line, exit code 1. */
export class CliFailure extends Error {}

/**
 * The exit code for what a command threw ({@link EXIT}): usage errors, node:util `parseArgs`'
 * `ERR_PARSE_ARGS_*`, configuration, validation and malformed URNs → 2; not found → 3; everything
 * else (CliFailure, LimitExceededError, what a run throws) → 1.
 */
export function exitCodeOf(error: unknown): number {
  if (error instanceof NotFoundError) return EXIT.NOT_FOUND;
  if (
    error instanceof UsageError ||
    error instanceof ConfigError ||
    error instanceof ValidationError ||
    error instanceof InvalidUrnError
  )
    return EXIT.USAGE;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) return EXIT.USAGE;
  return EXIT.FAILED;
}
