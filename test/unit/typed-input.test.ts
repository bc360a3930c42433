import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasLoneSurrogate, LATEST_INPUT_TIME, parseInputTime } from '../../src/domain/typed-input.js';

describe('parseInputTime', () => {
  it.each([
    ['2026-01-31', false, Date.UTC(2026, 0, 31)],
    ['2026-01-31', true, Date.UTC(2026, 1, 1)],
    ['2026-01-31T12:00:00Z', true, Date.UTC(2026, 0, 31, 12)],
    ['2028-02-29', false, Date.UTC(2028, 1, 29)],
    ['9999-12-30', true, LATEST_INPUT_TIME],
  ] as const)('%s (end of day: %s) is read', (v, end, t) => {
    expect(parseInputTime(v, end)).toBe(t);
  });

  it.each([
    '2030-02-30', // V8 reads it as 2030-03-02
    '2026-02-29',
    '2026-04-31',
    '2026-13-01',
    '2026-00-10',
    '2026-02-31T00:00:00Z',
    '10000-01-01',
    '+010000-01-01T00:00:00Z',
    '31/01/2026',
    '2026-01-31 junk',
    '',
  ])('%j is refused', (v) => {
    expect(parseInputTime(v)).toBeNull();
  });

  it('a date-only to of 9999-12-31 is refused: the day after it is no ISO date', () => {
    expect(parseInputTime('9999-12-31', false)).toBe(LATEST_INPUT_TIME);
    expect(parseInputTime('9999-12-31', true)).toBeNull();
  });

  it('property: every day the calendar has, in years 1970–9998, is read as its UTC midnight and prints back as itself', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date(Date.UTC(1970, 0, 1)), max: new Date(Date.UTC(9998, 11, 31)), noInvalidDate: true }), (d) => {
        const day = d.toISOString().slice(0, 10);
        const t = parseInputTime(day);
        expect(t).toBe(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
        expect(new Date(t!).toISOString().slice(0, 10)).toBe(day);
      }),
    );
  });
});

describe('hasLoneSurrogate', () => {
  it.each([
    ['plain', false],
    ['Zoë 名前 😀', false],
    ['n\ud800', true],
    ['\udc00x', true],
    ['a\ud83d', true],
  ])('%j → %s', (s, lone) => {
    expect(hasLoneSurrogate(s)).toBe(lone);
  });
});

describe('parseInputTime: the forms of a time', () => {
  it.each(['2026-01-31T09:30Z', '2026-01-31T09:30:00Z', '2026-01-31T09:30:00.123Z', '2026-01-31T10:30:00+01:00', '2026-01-31t09:30:00z'])('%s is read as 09:30 UTC', (v) => {
    expect(parseInputTime(v)).toBe(Date.parse('2026-01-31T09:30:00Z') + (v.includes('.123') ? 123 : 0));
  });
  it.each(['2026-01-31T09:30:00', '2026-01-31 09:30:00Z', '2026-01-31T9:30Z'])('%s (no offset, or not ISO 8601) is refused', (v) => {
    expect(parseInputTime(v)).toBeNull();
  });
});
