import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastUseOf, lruPass, type LruCandidate } from '../../src/domain/lru-order.js';

const c = (id: string, placedAt: number, lastHit: number | null = null): LruCandidate<string> => ({ id, placedAt, lastHit });

describe('lruPass: the head of the LRU index, and what eviction does with it', () => {
  it.each([
    ['nothing stored', [], false, [], []],
    ['no hits since their places: all may go, in order', [c('a', 1), c('b', 2)], false, ['a', 'b'], []],
    ['hit after the head ends: moved to its hit, kept', [c('a', 1, 9), c('b', 2), c('c', 3)], false, ['b', 'c'], [['a', 9]]],
    ['hit within the head: ranked by its hit among the head', [c('a', 1, 2.5), c('b', 2), c('c', 3)], false, ['b', 'a', 'c'], []],
    ['hit exactly at the head end: may go, after its place-mates', [c('a', 1, 3), c('b', 3)], false, ['a', 'b'], []],
    ['the whole index read: nothing is promoted, all ranked by last use', [c('a', 1, 9), c('b', 2)], true, ['b', 'a'], []],
    ['a hit older than its place (stored again since) is no use', [c('a', 5, 1), c('b', 6)], false, ['a', 'b'], []],
    ['every head entry used since: all moved, none goes', [c('a', 1, 8), c('b', 2, 9)], false, [], [['a', 8], ['b', 9]]],
  ] as const)('%s', (_, head, whole, victims, promote) => {
    expect(lruPass(head, whole)).toEqual({ victims, promote });
  });

  it('repeated over any index, read a head at a time, evicts in exact order of last use', () => {
    const entry = fc.record({ placedAt: fc.integer({ min: 0, max: 50 }), hitAfter: fc.option(fc.integer({ min: -10, max: 60 }), { nil: null }) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 30 }), fc.integer({ min: 1, max: 8 }), (entries, headSize) => {
        // The index: entries by (place, id), as SQLite and PostgreSQL order it.
        const index = entries.map((e, i) => c(`e${i}`, e.placedAt, e.hitAfter === null ? null : e.placedAt + e.hitAfter));
        const exact = [...index].sort((a, b) => lastUseOf(a) - lastUseOf(b) || a.placedAt - b.placedAt || a.id.localeCompare(b.id));
        const evicted: string[] = [];
        let passes = 0;
        while (index.length > 0) {
          expect(++passes).toBeLessThanOrEqual(2 * entries.length);
          index.sort((a, b) => a.placedAt - b.placedAt || a.id.localeCompare(b.id));
          const head = index.slice(0, headSize);
          const pass = lruPass(head, head.length < headSize);
          for (const [id, at] of pass.promote) {
            const e = index.find((x) => x.id === id)!;
            index[index.indexOf(e)] = c(id, at, e.lastHit);
          }
          // Eviction takes one victim a pass here: the sharpest test of the order.
          const first = pass.victims[0];
          if (first !== undefined) {
            evicted.push(first);
            index.splice(
              index.findIndex((x) => x.id === first),
              1,
            );
          }
        }
        expect(evicted.map((id) => lastUseOf(exact.find((e) => e.id === id)!))).toEqual(exact.map(lastUseOf));
      }),
      { numRuns: 300 },
    );
  });
});
