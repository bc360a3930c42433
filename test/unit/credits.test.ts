import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  budgetState,
  creditHeaders,
  formatBudgets,
  InvalidBudget,
  parseBudgets,
  periodEnd,
  periodStart,
  refusingBudget,
  remaining,
  type Budget,
  type Period,
} from '../../src/domain/credits.js';

const iso = (t: number) => new Date(t).toISOString();

describe('budget parsing', () => {
  it.each<[string, string]>([
    ['1000/month', '1000/month'],
    ['1000/months', '1000/month'],
    [' 1000 / month , 50/day ', '50/day,1000/month'],
    ['0/week', '0/week'],
    ['5/DAY', '5/day'],
  ])('%s → %s', (text, canonical) => {
    expect(formatBudgets(parseBudgets(text))).toBe(canonical);
  });

  it.each(['', '1000', '1000/year', '-1/day', '1.5/day', '10/day,20/days', 'x/month'])('%j is refused', (text) => {
    expect(() => parseBudgets(text)).toThrow(InvalidBudget);
  });
});

describe('UTC calendar periods', () => {
  it.each<[Period, string, string, string]>([
    ['day', '2026-01-01T10:30:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'],
    ['day', '2026-01-01T23:59:59.999Z', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'],
    // 2026-01-01 is a Thursday: its ISO week began on Monday 2025-12-29.
    ['week', '2026-01-01T10:30:00.000Z', '2025-12-29T00:00:00.000Z', '2026-01-05T00:00:00.000Z'],
    ['week', '2026-01-05T00:00:00.000Z', '2026-01-05T00:00:00.000Z', '2026-01-12T00:00:00.000Z'],
    ['week', '2026-01-04T23:59:59.999Z', '2025-12-29T00:00:00.000Z', '2026-01-05T00:00:00.000Z'],
    ['month', '2026-01-31T23:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
    ['month', '2028-02-29T12:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
    ['month', '2026-12-15T00:00:00.000Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
  ])('%s of %s is [%s, %s)', (period, at, start, end) => {
    const t = Date.parse(at);
    expect(iso(periodStart(period, t))).toBe(start);
    expect(iso(periodEnd(period, t))).toBe(end);
  });

  it('every instant lies in its period, and the next period starts at its end', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), fc.constantFrom<Period>('day', 'week', 'month'), (t, p) => {
        const s = periodStart(p, t);
        const e = periodEnd(p, t);
        expect(s).toBeLessThanOrEqual(t);
        expect(e).toBeGreaterThan(t);
        expect(periodStart(p, e)).toBe(e);
        expect(periodStart(p, e - 1)).toBe(s);
      }),
    );
  });
});

describe('reservation decision', () => {
  const T = Date.UTC(2026, 0, 10, 12);
  const month: Budget = { limit: 100, period: 'month' };
  const day: Budget = { limit: 10, period: 'day' };

  it('admits while used + reserved + estimate fit, and always needs one credit of headroom', () => {
    expect(refusingBudget([budgetState(month, 90, 7, T)], 3)).toBeNull();
    expect(refusingBudget([budgetState(month, 90, 8, T)], 3)?.budget).toBe(month);
    expect(refusingBudget([budgetState(month, 99, 0, T)], 0)).toBeNull();
    expect(refusingBudget([budgetState(month, 100, 0, T)], 0)?.budget).toBe(month);
    expect(refusingBudget([budgetState({ limit: 0, period: 'day' }, 0, 0, T)], 0)).not.toBeNull();
    expect(refusingBudget([], 5)).toBeNull();
  });

  it('names the budget that refuses; with several, the one that resets last', () => {
    const states = [budgetState(day, 10, 0, T), budgetState(month, 100, 0, T)];
    expect(refusingBudget(states, 1)?.budget).toBe(month);
    expect(refusingBudget([budgetState(day, 10, 0, T), budgetState(month, 50, 0, T)], 1)?.budget).toBe(day);
  });

  const MONTH_RESET = (Date.UTC(2026, 1, 1) - T) / 1000;
  const DAY_RESET = (Date.UTC(2026, 0, 11) - T) / 1000;

  it('headers report the most constraining budget', () => {
    const h = creditHeaders([budgetState(day, 4, 1, T), budgetState(month, 97, 1, T)], [], 1);
    expect(h).toEqual({ 'x-credits-used': '97', 'x-credits-remaining': '2', 'x-credits-reset': String(MONTH_RESET) });
    expect(creditHeaders([], [budgetState(month, 0, 0, T)], 1)).toEqual({});
    expect(remaining(budgetState(day, 12, 3, T))).toBe(0);
  });

  // [what, own budgets, provider budgets, the endpoint's estimate, expected [used, remaining, reset]]
  it.each<[string, Array<[Budget, number, number]>, Array<[Budget, number, number]>, number, [number, number, number]]>([
    ['the issue: 2 left, a miss needs 3 → 0', [[{ limit: 5, period: 'day' }, 3, 0]], [], 3, [3, 0, DAY_RESET]],
    ['3 left, a miss needs 3 → 3', [[{ limit: 6, period: 'day' }, 3, 0]], [], 3, [3, 3, DAY_RESET]],
    ['2 left, a posts miss needs 2 → 2', [[{ limit: 5, period: 'day' }, 3, 0]], [], 2, [3, 2, DAY_RESET]],
    ['reservations in flight count', [[{ limit: 10, period: 'day' }, 3, 5]], [], 3, [3, 0, DAY_RESET]],
    ['an estimate of 0 still needs 1 credit', [[{ limit: 5, period: 'day' }, 4, 0]], [], 0, [4, 1, DAY_RESET]],
    ['an estimate of 0 at the limit → 0', [[{ limit: 5, period: 'day' }, 5, 0]], [], 0, [5, 0, DAY_RESET]],
    ['a cache-only key', [[{ limit: 0, period: 'month' }, 0, 0]], [], 3, [0, 0, MONTH_RESET]],
    ['the refusing budget that resets last gives Reset', [[day, 9, 0], [month, 99, 0]], [], 3, [99, 0, MONTH_RESET]],
    ['only the day refuses: its reset', [[day, 9, 0], [month, 50, 0]], [], 3, [9, 0, DAY_RESET]],
    ['the provider budget bounds Remaining', [[month, 10, 0]], [[{ limit: 20, period: 'day' }, 12, 0]], 3, [10, 8, DAY_RESET]],
    ['the provider budget refuses → 0 with its reset', [[month, 10, 0]], [[{ limit: 20, period: 'day' }, 18, 0]], 3, [10, 0, DAY_RESET]],
    ['a roomy provider budget changes nothing', [[month, 10, 0]], [[{ limit: 1000, period: 'day' }, 0, 0]], 3, [10, 90, MONTH_RESET]],
  ])('%s', (_what, own, shared, estimate, [used, left, reset]) => {
    const state = ([b, u, r]: [Budget, number, number]) => budgetState(b, u, r, T);
    expect(creditHeaders(own.map(state), shared.map(state), estimate)).toEqual({
      'x-credits-used': String(used),
      'x-credits-remaining': String(left),
      'x-credits-reset': String(reset),
    });
  });

  it('Remaining is 0 exactly when the call it describes would be refused (property)', () => {
    const periods = fc.constantFrom<Period>('day', 'week', 'month');
    const state = fc
      .record({ limit: fc.integer({ min: 0, max: 30 }), period: periods, used: fc.integer({ min: 0, max: 35 }), reserved: fc.integer({ min: 0, max: 10 }) })
      .map((x) => budgetState({ limit: x.limit, period: x.period }, x.used, x.reserved, T));
    fc.assert(
      fc.property(fc.array(state, { minLength: 1, maxLength: 3 }), fc.array(state, { maxLength: 2 }), fc.integer({ min: 0, max: 6 }), (own, shared, estimate) => {
        const left = Number(creditHeaders(own, shared, estimate)['x-credits-remaining']);
        const refused = refusingBudget(own, estimate) !== null || refusingBudget(shared, estimate) !== null;
        expect(left === 0).toBe(refused);
        // Told > 0: the call fits in every budget, so it is admitted.
        if (left > 0) expect(left).toBeGreaterThanOrEqual(Math.max(1, estimate));
      }),
      { numRuns: 2000 },
    );
  });

  /**
   * Concurrent calls as an interleaving of starts (reserve) and ends (settle). Whatever the
   * order, usage never exceeds the limit by more than what admitted calls cost beyond their
   * estimates; with honest estimates it never exceeds it at all.
   */
  it('bounds the overshoot by what in-flight calls cost beyond their estimates (property)', () => {
    const call = fc.record({ estimate: fc.integer({ min: 0, max: 5 }), actual: fc.integer({ min: 0, max: 8 }) });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.array(call, { minLength: 1, maxLength: 64 }), fc.array(fc.boolean(), { maxLength: 200 }), (limit, calls, coin) => {
        const budget: Budget = { limit, period: 'month' };
        let used = 0;
        let reserved = 0;
        let excess = 0;
        const inFlight: Array<{ estimate: number; actual: number }> = [];
        let next = 0;
        let flip = 0;
        while (next < calls.length || inFlight.length > 0) {
          const start = next < calls.length && (inFlight.length === 0 || coin[flip++ % Math.max(1, coin.length)] !== false);
          if (start) {
            const c = calls[next++]!;
            if (!refusingBudget([budgetState(budget, used, reserved, 0)], c.estimate)) {
              reserved += c.estimate;
              excess += Math.max(0, c.actual - c.estimate);
              inFlight.push(c);
            }
          } else {
            const c = inFlight.shift()!;
            reserved -= c.estimate;
            used += c.actual;
          }
          expect(used).toBeLessThanOrEqual(limit + excess);
        }
        if (calls.every((c) => c.actual <= c.estimate)) expect(used).toBeLessThanOrEqual(limit);
      }),
    );
  });
});
