import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSV_DIMENSIONS, usageCsv, usageCsvParts, USAGE_CSV_HEADER, type RolledRow, type UsageDimension } from '../../src/admin/usage-breakdown.js';
import { csvLines, neutralise } from '../../src/admin/usage-csv.js';
import { SLICE_ROWS, slicesOf } from '../../src/admin/in-slices.js';
import { rollUp, type BreakdownRow } from '../helpers/usage-model.js';
import { compactTime, usageGroups } from '../../src/admin/usage.js';

/** Parsed as RFC 4180 by a real parser: CRLF records, quoted fields, nothing relaxed. */
const parseCsv = (text: string): string[][] => parse(text, { record_delimiter: '\r\n', relax_quotes: false, relax_column_count: false, skip_empty_lines: false, bom: false });

/** Text with everything CSV and spreadsheets care about: separators, quotes, line breaks, formula starts, and beyond ASCII. */
const nasty = fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', ',', '"', '\r', '\n', '\t', '=', '+', '-', '@', "'", ';', 'é', '😀'), maxLength: 12 });

const breakdownRow = fc.record({
  day: fc.constantFrom('2026-01-01', '2026-01-02', '2026-02-28'),
  team: fc.option(nasty, { nil: null }),
  key_id: fc.constantFrom('key_a', 'key_b', '=key', 'key,c'),
  key_name: fc.option(nasty, { nil: null }),
  endpoint: fc.constantFrom('profile', 'company', 'passthrough'),
  requests: fc.nat({ max: 1000 }),
  cache_hits: fc.nat({ max: 1000 }),
  credits: fc.nat({ max: 1_000_000 }),
  credits_saved: fc.nat({ max: 1_000_000 }),
});

/** Rows of one storage: a key has one name and one team (its current ones). */
const consistentRows = fc.array(breakdownRow, { maxLength: 40 }).map((rows) => {
  const first = new Map<string, BreakdownRow>();
  return rows.map((r) => {
    const k = first.get(r.key_id) ?? r;
    first.set(r.key_id, k);
    return { ...r, team: k.team, key_name: k.key_name };
  });
});

describe('usage CSV (RFC 4180)', () => {
  it('property: any fields survive a real parser unchanged, but for the leading quote of a would-be formula', () => {
    fc.assert(
      fc.property(fc.array(fc.array(nasty, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }), (records) => {
        const width = records[0]!.length;
        const rect = records.map((r) => Array.from({ length: width }, (_, i) => r[i] ?? ''));
        const text = csvLines(rect);
        expect(text.endsWith('\r\n')).toBe(true);
        expect(parseCsv(text)).toEqual(rect.map((r) => r.map(neutralise)));
      }),
      { numRuns: 500 },
    );
  });

  it('a field starting with = + - @ TAB or CR gets a leading quote; nothing else is touched', () => {
    for (const f of ['=1+1', '+1', '-1', '@SUM(A1)', '\t=1', '\r=1']) expect(neutralise(f)).toBe(`'${f}`);
    for (const f of ['', 'growth', ' =1', "'=1", '1', 'a=b']) expect(neutralise(f)).toBe(f);
    expect(csvLines([['a,b', 'say "hi"', 'x\r\ny', '=cmd|x']])).toBe('"a,b","say ""hi""","x\r\ny",\'=cmd|x\r\n');
  });

  it('property: usageCsv of the rows rolled up by day, team and key is a line each, under the header, parsed back to the same figures', () => {
    fc.assert(
      fc.property(consistentRows, (rows) => {
        const parsed = parseCsv(usageCsv(rollUp(rows, CSV_DIMENSIONS)));
        expect(parsed[0]).toEqual([...USAGE_CSV_HEADER]);
        const expected = rollUp(rows, ['day', 'team', 'key']).map((r) =>
          [r.day!, r.team ?? '', r.key_id!, r.key_name ?? '', r.requests, r.cache_hits, r.credits, r.credits_saved].map((v) => neutralise(String(v))),
        );
        expect(parsed.slice(1)).toEqual(expected);
        const total = (i: number) => parsed.slice(1).reduce((n, r) => n + Number(r[i]), 0);
        expect([total(4), total(5), total(6), total(7)]).toEqual(['requests', 'cache_hits', 'credits', 'credits_saved'].map((f) => rows.reduce((n, r) => n + (r[f as keyof BreakdownRow] as number), 0)));
      }),
      { numRuns: 300 },
    );
  });

  it('an empty window is the header alone', () => {
    expect(usageCsv([])).toBe('day,team,key_id,key_name,requests,cache_hits,credits_spent,credits_saved\r\n');
  });

  it('written in pages longer than a slice (usageCsvParts) is every row once, in order, the file usageCsv makes, without a seam', async () => {
    const rows: RolledRow[] = Array.from({ length: SLICE_ROWS * 2 + 7 }, (_, i) => ({ day: '2026-01-01', team: i % 3 ? 'growth' : null, key_id: `key_${String(i).padStart(5, '0')}`, key_name: i % 2 ? '=x' : null, endpoint: null, requests: i, cache_hits: 0, credits: 1, credits_saved: 2 }));
    async function* pages() {
      yield rows.slice(0, 3);
      yield rows.slice(3, SLICE_ROWS + 5);
      yield rows.slice(SLICE_ROWS + 5);
    }
    let text = '';
    for await (const part of usageCsvParts(pages())) text += part;
    const parsed = parseCsv(text);
    expect(parsed.length).toBe(rows.length + 1);
    expect(parsed.slice(1).map((r) => [r[2], r[3], r[4]])).toEqual(rows.map((r) => [r.key_id, r.key_name === null ? '' : "'=x", String(r.requests)]));
    expect(text).toBe(usageCsv(rows));
  });
});

describe('slicesOf', () => {
  it('gives the event loop a turn between slices: a timer due meanwhile runs before the last slice is made', async () => {
    const made: string[] = [];
    setImmediate(() => made.push('other work'));
    const parts: string[] = [];
    for await (const part of slicesOf([Array.from({ length: SLICE_ROWS + 1 }, (_, i) => i)], (s) => {
      made.push(`slice of ${s.length}`);
      return s.join(',');
    }, ',')) parts.push(part);
    expect(made).toEqual([`slice of ${SLICE_ROWS}`, 'other work', 'slice of 1']);
    expect(parts.join('').split(',').length).toBe(SLICE_ROWS + 1);
  });
});

describe('rollUp', () => {
  const dims: UsageDimension[] = ['team', 'key', 'endpoint', 'day'];
  it('property: any grouping keeps the totals, gives distinct combinations, nulls the other dimensions, and does not depend on the input order', () => {
    fc.assert(
      fc.property(consistentRows, fc.subarray(dims), (rows, by) => {
        const out = rollUp(rows, by);
        const sum = (rs: readonly { requests: number; credits: number; credits_saved: number; cache_hits: number }[]) =>
          rs.reduce((n, r) => [n[0]! + r.requests, n[1]! + r.cache_hits, n[2]! + r.credits, n[3]! + r.credits_saved], [0, 0, 0, 0]);
        expect(sum(out)).toEqual(sum(rows));
        const ids = out.map((r) => JSON.stringify([r.day, r.team, r.key_id, r.endpoint]));
        expect(new Set(ids).size).toBe(ids.length);
        for (const d of dims.filter((x) => !by.includes(x))) {
          for (const r of out) expect(d === 'key' ? [r.key_id, r.key_name] : [r[d]]).toEqual(d === 'key' ? [null, null] : [null]);
        }
        expect(rollUp([...rows].reverse(), by)).toEqual(out);
        expect(rollUp([...rows.slice(1), ...rows.slice(0, 1)], by)).toEqual(out);
      }),
      { numRuns: 300 },
    );
  });

  it('orders by the dimensions in the order given, ascending by code unit, null last', () => {
    const r = (day: string, team: string | null, key_id: string): BreakdownRow => ({ day, team, key_id, key_name: null, endpoint: 'profile', requests: 1, cache_hits: 0, credits: 1, credits_saved: 0 });
    const rows = [r('2026-01-02', 'b', 'k1'), r('2026-01-01', null, 'k2'), r('2026-01-01', 'B', 'k3'), r('2026-01-02', 'a', 'k4')];
    expect(rollUp(rows, ['team', 'day']).map((x) => [x.team, x.day])).toEqual([['B', '2026-01-01'], ['a', '2026-01-02'], ['b', '2026-01-02'], [null, '2026-01-01']]);
    expect(rollUp(rows, ['day', 'team']).map((x) => [x.day, x.team])).toEqual([['2026-01-01', 'B'], ['2026-01-01', null], ['2026-01-02', 'a'], ['2026-01-02', 'b']]);
    expect(rollUp(rows, [])).toEqual([{ day: null, team: null, key_id: null, key_name: null, endpoint: null, requests: 4, cache_hits: 0, credits: 4, credits_saved: 0 }]);
  });
});

describe('usageGroups (the `by` of /admin/usage and the CLI)', () => {
  const groups = ['key', 'team', 'day', 'endpoint'] as const;
  it('property: any groupings, each once, in any order, are read back in that order; one named twice or unknown is refused', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray([...groups], { minLength: 1 }), fc.boolean(), (picked, spaced) => {
        expect(usageGroups(picked.join(spaced ? ' , ' : ','))).toEqual(picked);
        expect(usageGroups([...picked, picked[0]!].join(','))).toBe('by: a grouping is named twice');
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (junk) => {
        fc.pre(!groups.includes(junk.trim() as (typeof groups)[number]));
        expect(usageGroups(`team,${junk}`)).toBe('by: expected key, team, day, endpoint');
      }),
    );
    expect(usageGroups(undefined)).toEqual(['key']);
    expect(usageGroups('')).toBe('by: expected key, team, day, endpoint');
  });

  it('compactTime is ISO 8601 basic format to the second', () => {
    expect(compactTime(Date.UTC(2026, 0, 31, 23, 59, 58, 999))).toBe('20260131T235958Z');
  });
});
