/**
 * The CLI's usage text and what reads it: a command's own usage (`cld ask --help`) and the command
 * a typo was likely meant to be. Kept apart from cli/main.ts, which runs the CLI when imported.
 */

/** Usage of every command, and the exit codes. */
export const USAGE = `usage:
  cld ingest <dir-or-file>...             split documents into chunks and index them
                                          (into the deployed bucket when CLD_BUCKET is set)
  cld ask [--docs <dir>]... [--conversation <urn-or-name> [--new]] "<message>" | - | --file <path>
                                          plan, run and answer (ingests --docs first); the
                                          message as arguments, from standard input (-) or a
                                          file, at most 16,000 characters; --conversation adds
                                          it to the conversation whose URN ask printed, or to a
                                          stored name (--new: start it); a tool call waiting for
                                          approval is asked y/N (piped: exit 5, see approvals)
  cld show <urn>                          a chunk's source file and text, or a stored subtree
  cld resume [<conversation-urn>]         re-drive what an interrupted run left pending
  cld replay <conversation-urn> [--rebuild]
                                          recompute projections from storage, print differences
  cld serve [--port 8787] [--data-dir <dir>] [--docs <dir>]...
                                          HTTP API, Slack and Teams endpoints on 127.0.0.1
  cld tools list [--json]                 discovered MCP tools and their approval status
  cld tools discover [<server>]...        tools/list the configured MCP servers (CLD_MCP_SERVERS
                                          or CLD_MCP_CONFIG); a changed tool is pending again
  cld tools approve|revoke <server>__<tool> [--reason <text>]
                                          record an operator's decision on a discovered tool
  cld approvals list [--all] [<conversation-urn>]
                                          tool calls waiting for your approval
  cld approvals approve|deny <request-urn> [--reason <text>]
                                          decide one, then run the conversation on and answer
exit codes: 0 done, 1 failed, 2 bad usage, input or setting (CLD_*), 3 not found,
  4 partial answer (some parts not answered), 5 waiting for an approval (ask without a
  terminal), 130 interrupted`;

/** The commands {@link USAGE} describes. */
export const COMMANDS = ['ingest', 'ask', 'show', 'resume', 'replay', 'serve', 'tools', 'approvals'] as const;

/** True for a command {@link USAGE} describes. */
export function isCommand(name: string): boolean {
  return (COMMANDS as readonly string[]).includes(name);
}

/** Options that ask for help wherever they stand (`cld ask --help`). */
export const HELP = new Set(['--help', '-h']);

/**
 * The lines of {@link USAGE} about `command` (each entry with its continuation lines), then the
 * exit codes; all of it for a command it does not describe.
 */
export function usageOf(command: string): string {
  const lines = USAGE.split('\n');
  const exits = lines.findIndex((line) => line.startsWith('exit codes:'));
  const picked: string[] = [];
  let keep = false;
  for (const line of lines.slice(1, exits)) {
    if (/^ {2}cld /.test(line)) keep = line.startsWith(`  cld ${command} `) || line === `  cld ${command}`;
    if (keep) picked.push(line);
  }
  return picked.length === 0 ? USAGE : ['usage:', ...picked, ...lines.slice(exits)].join('\n');
}

/**
 * The command `typed` was likely meant to be: one of {@link COMMANDS} within two edits, a command
 * it begins preferred (for two letters, only one it begins; for one, none); undefined when none is.
 */
export function meant(typed: string): string | undefined {
  const distance = (a: string, b: string): number => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i += 1) {
      const next = [i];
      for (let j = 1; j <= b.length; j += 1)
        next[j] = Math.min(
          (row[j] as number) + 1,
          (next[j - 1] as number) + 1,
          (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
        );
      row = next;
    }
    return row[b.length] as number;
  };
  // A word of two letters names only a command it begins ("sh" → show); one letter names none.
  if (typed.length < 2) return undefined;
  if (typed.length === 2) return COMMANDS.find((c) => c.startsWith(typed));
  // A command it begins wins a tie.
  return COMMANDS.map((c) => [c, distance(typed, c) - (c.startsWith(typed) ? 0.5 : 0)] as const)
    .filter(([, d]) => d <= 2)
    .sort((x, y) => x[1] - y[1])[0]?.[0];
}
