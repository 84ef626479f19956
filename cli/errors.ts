/** Bad command-line usage: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

/** A run that ended without the answer it was for: one `cld: ...` line, exit code 1. */
export class CliFailure extends Error {}
