import { describe, expect, it } from 'vitest';
import { between, formatDuration, formatTime } from '../../console/src/time.js';

/**
 * The console's times and durations (issue 23: a time read `10:00:39 PM.665`): `Intl.DateTimeFormat`
 * in the reader's locale and zone, the date added for another day, durations in ms, s or min.
 * Locale, zone and "now" are fixed, so nothing depends on the machine's clock or settings.
 */
const US_UTC = { locale: 'en-US', timeZone: 'UTC' };
const NOW = new Date('2026-11-24T23:30:00.000Z');

describe('formatTime', () => {
  it.each([
    ['a time of today, to the second', '2026-11-24T22:00:39.665Z', NOW, US_UTC, '10:00:39 PM'],
    [
      'a time of another day, with its date',
      '2026-11-23T22:00:39.665Z',
      NOW,
      US_UTC,
      'Nov 23, 2026, 10:00:39 PM',
    ],
    [
      'the same instant in a zone where it is the next day',
      '2026-11-24T22:00:39.665Z',
      NOW,
      { locale: 'en-GB', timeZone: 'Asia/Tokyo' },
      '07:00:39',
    ],
    ['another locale', '2026-11-24T22:00:39.665Z', NOW, { locale: 'de-DE', timeZone: 'UTC' }, '22:00:39'],
    ['no time', undefined, NOW, US_UTC, '—'],
    ['an unreadable time', 'yesterday', NOW, US_UTC, '—'],
  ])('writes %s', (_, iso, now, format, expected) => {
    expect(formatTime(iso, now, format).replace(/\u202f/g, ' ')).toBe(expected);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0 ms'],
    [420.4, '420 ms'],
    [-5, '0 ms'],
    [2_310, '2.31 s'],
    [14_200, '14.2 s'],
    [125_900, '2 min 5 s'],
  ])('writes %d ms as %s', (ms, expected) => {
    expect(formatDuration(ms)).toBe(expected);
  });

  it('measures between two ISO times, or nothing when one is missing', () => {
    expect(between('2026-01-02T22:00:37.355Z', '2026-01-02T22:00:39.665Z')).toBe(2_310);
    expect(between(undefined, '2026-01-02T22:00:39.665Z')).toBeUndefined();
  });
});
