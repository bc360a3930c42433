import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupedJsonText, groupedView, type RolledRow, type UsageDimension } from '../../src/admin/usage-breakdown.js';

/** Text JSON must escape: quotes, backslashes, controls, lone surrogates, beyond the BMP. */
const text = fc.string({ unit: fc.constantFrom('a', '"', '\\', '\n', '\u0000', '\u2028', '\ud800', 'é', '😀', '/'), maxLength: 10 });
const sum = fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e15, noNaN: true }));
const rolledRow: fc.Arbitrary<RolledRow> = fc.record({
  day: fc.option(fc.constantFrom('2026-01-01', '2026-02-28'), { nil: null }),
  team: fc.option(text, { nil: null }),
  key_id: fc.option(text, { nil: null }),
  key_name: fc.option(text, { nil: null }),
  endpoint: fc.option(text, { nil: null }),
  requests: sum,
  cache_hits: sum,
  credits: sum,
  credits_saved: sum,
});
/** Any non-empty grouping, in any order, each dimension once (as usageGroups admits). */
const grouping = fc.shuffledSubarray<UsageDimension>(['team', 'key', 'endpoint', 'day'], { minLength: 1 });

describe('groupedJsonText: a multi-group report written without an object per row', () => {
  it('property: the same text as JSON.stringify of groupedView, row for row, for any rows and grouping', () => {
    fc.assert(
      fc.property(fc.array(rolledRow, { maxLength: 20 }), grouping, (rows, by) => {
        const text = groupedJsonText(by)(rows);
        expect(text).toBe(groupedView(rows, by).map((r) => JSON.stringify(r)).join(','));
        expect(JSON.parse(`[${text}]`)).toEqual(groupedView(rows, by));
      }),
      { numRuns: 500 },
    );
  });

  it('writes the dimensions in the order asked for, then the sums', () => {
    const row: RolledRow = { day: '2026-01-01', team: 'ops', key_id: 'key_a', key_name: 'A "quoted"', endpoint: null, requests: 3, cache_hits: 1, credits: 2, credits_saved: 1 };
    expect(groupedJsonText(['day', 'key'])([row, row])).toBe(
      '{"day":"2026-01-01","key_id":"key_a","key_name":"A \\"quoted\\"","requests":3,"cache_hits":1,"credits":2,"credits_saved":1},' +
        '{"day":"2026-01-01","key_id":"key_a","key_name":"A \\"quoted\\"","requests":3,"cache_hits":1,"credits":2,"credits_saved":1}',
    );
    expect(groupedJsonText(['team'])([])).toBe('');
  });
});
