/**
 * Times and durations as the reader's locale writes them (issue 23), with `Intl.DateTimeFormat`:
 * a time of today as `10:00:39 PM`, of another day with its date (`Nov 24, 2026, 10:00:39 PM`);
 * a duration as `420 ms`, `2.31 s` or `14.2 s`.
 */

/** Options for tests and for a fixed reader: locale and time zone (default the browser's). */
export interface TimeFormat {
  locale?: string;
  timeZone?: string;
}

/**
 * An ISO 8601 time for people.
 * @param iso the time; `—` when absent or unreadable
 * @param now the reference for "today" (default the current time)
 * @returns the time (medium style: seconds, no milliseconds), with the date when not the same
 *   calendar day as `now` in the reader's time zone
 */
export function formatTime(iso: string | undefined, now: Date = new Date(), format: TimeFormat = {}): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  const zone = format.timeZone ? { timeZone: format.timeZone } : {};
  const day = new Intl.DateTimeFormat('en-CA', { ...zone, dateStyle: 'short' });
  const today = day.format(date) === day.format(now);
  return new Intl.DateTimeFormat(format.locale, {
    ...zone,
    ...(today ? {} : { dateStyle: 'medium' }),
    timeStyle: 'medium',
  }).format(date);
}

/**
 * A duration for people.
 * @param ms milliseconds (negative is read as 0)
 * @returns `N ms` under a second, `N.NN s` under ten seconds, `N.N s` under a minute, else `M min S s`
 */
export function formatDuration(ms: number): string {
  const value = Math.max(ms, 0);
  if (value < 1_000) return `${Math.round(value)} ms`;
  if (value < 60_000) return `${(value / 1_000).toFixed(value < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(value / 60_000);
  return `${minutes} min ${Math.floor((value - minutes * 60_000) / 1_000)} s`;
}

/** Milliseconds between two ISO 8601 times, or undefined when either is absent. */
export function between(from: string | undefined, to: string | undefined): number | undefined {
  if (!from || !to) return undefined;
  return Date.parse(to) - Date.parse(from);
}
