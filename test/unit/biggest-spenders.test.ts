import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RolledRow } from '../../src/admin/usage-breakdown.js';
import { biggestSpenders } from '../../src/dashboard/usage.js';

const row = (i: number, credits: number, requests: number): RolledRow => ({ day: null, team: null, key_id: `k${i}`, key_name: null, endpoint: null, requests, cache_hits: 0, credits, credits_saved: 0 });

describe('biggestSpenders: the usage chart\'s rows without sorting the whole report', () => {
  it('property: is the first n of the rows sorted by credits, then requests, ties in their order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 5 }), fc.nat({ max: 3 })), { maxLength: 120 }), fc.integer({ min: 1, max: 50 }), (spec, n) => {
        const rows = spec.map(([c, r], i) => row(i, c, r));
        const sorted = [...rows].sort((a, b) => b.credits - a.credits || b.requests - a.requests);
        expect(biggestSpenders(rows, n)).toEqual(sorted.slice(0, n));
      }),
      { numRuns: 500 },
    );
  });
});
