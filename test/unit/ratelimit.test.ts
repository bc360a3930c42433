import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ADVISORY,
  formatRatePolicies,
  InvalidPolicy,
  isCurrentWindow,
  mostConstraining,
  parseRatePolicies,
  rateDecision,
  rateHeaders,
  rateStates,
  resetSeconds,
  windowStart,
  type PolicyCount,
  type RatePolicy,
} from '../../src/domain/rate-limit.js';

const T0 = Date.UTC(2026, 0, 1, 10, 30, 15, 250);

describe('rate policy parsing', () => {
  it.each<[string, Array<[number, number, string]>]>([
    ['600/minute', [[600, 60_000, 'minute']]],
    ['20000/day', [[20_000, 86_400_000, 'day']]],
    ['600/minute,20000/day', [[600, 60_000, 'minute'], [20_000, 86_400_000, 'day']]],
    [' 20000 / day , 600/minute ', [[600, 60_000, 'minute'], [20_000, 86_400_000, 'day']]],
    ['10/second', [[10, 1_000, 'second']]],
    ['100/10s', [[100, 10_000, '10s']]],
    ['5/15m', [[5, 900_000, '15m']]],
    ['50/hours', [[50, 3_600_000, 'hour']]],
    ['7/90m', [[7, 5_400_000, '90m']]],
    ['1000/7d', [[1000, 604_800_000, '7d']]],
    ['3/60s', [[3, 60_000, 'minute']]],
    ['9/min', [[9, 60_000, 'minute']]],
  ])('%s', (text, want) => {
    const got = parseRatePolicies(text).map((p) => [p.limit, p.windowMs, p.name]);
    expect(got).toEqual(want);
  });

  it.each(['', ' , ', '600', 'minute', '0/minute', '-1/minute', '1.5/minute', '10/fortnight', '10/minute,20/60s', '10/400d', '10/0s', '1e3/day'])(
    '%j is refused with a message',
    (text) => {
      expect(() => parseRatePolicies(text)).toThrow(InvalidPolicy);
    },
  );

  it('formats canonically and round-trips', () => {
    const p = parseRatePolicies('20000/days, 100/10s,5/15m');
    expect(formatRatePolicies(p)).toBe('100/10s,5/15m,20000/day');
    expect(parseRatePolicies(formatRatePolicies(p))).toEqual(p);
  });
});

describe('window math', () => {
  const [minute, day] = parseRatePolicies('600/minute,20000/day') as [RatePolicy, RatePolicy];

  it('aligns windows to the epoch: a day window is the UTC day', () => {
    expect(windowStart(day, T0)).toBe(Date.UTC(2026, 0, 1));
    expect(windowStart(minute, T0)).toBe(Date.UTC(2026, 0, 1, 10, 30));
  });

  it('reset is whole seconds to the window end, at least 1, and waiting it reaches a new window', () => {
    expect(resetSeconds(minute, T0)).toBe(45); // 44.75 s rounded up
    expect(resetSeconds(minute, Date.UTC(2026, 0, 1, 10, 30, 59, 999))).toBe(1);
    expect(resetSeconds(minute, Date.UTC(2026, 0, 1, 10, 31))).toBe(60);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), (now) => {
        for (const p of [minute, day]) {
          const r = resetSeconds(p, now);
          expect(r).toBeGreaterThanOrEqual(1);
          expect(windowStart(p, now + r * 1000)).toBeGreaterThan(windowStart(p, now));
          expect(windowStart(p, now + (r - 1) * 1000)).toBe(windowStart(p, now));
        }
      }),
    );
  });

  it('a counted window applies only at times within it: neither an ended one nor one from the future (the clock stepped back)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: -3e9, max: 3e9 }), (now, shift) => {
        for (const p of [minute, day]) {
          const start = windowStart(p, now + shift);
          expect(isCurrentWindow(p, start, now)).toBe(start <= now && now < start + p.windowMs);
        }
      }),
    );
    expect(isCurrentWindow(minute, Date.UTC(2026, 0, 1, 10, 31), T0)).toBe(false); // the next minute
    expect(isCurrentWindow(minute, Date.UTC(2026, 0, 1, 10, 30), T0)).toBe(true);
  });

  it('refuses when any enforced policy is exhausted, Retry-After is the longest such wait', () => {
    const counts: PolicyCount[] = [
      { policy: minute, count: 600 },
      { policy: day, count: 20_000 },
    ];
    expect(rateDecision(counts, T0)).toEqual({ allowed: false, retryAfter: resetSeconds(day, T0) });
    expect(rateDecision([{ policy: minute, count: 600 }, { policy: day, count: 5 }], T0)).toEqual({ allowed: false, retryAfter: 45 });
    expect(rateDecision([{ policy: minute, count: 599 }, { policy: day, count: 5 }], T0)).toEqual({ allowed: true });
    expect(rateDecision([{ policy: ADVISORY[0]!, count: 5_000_000 }], T0)).toEqual({ allowed: true });
  });

  it('reports the most constraining policy: fewest remaining, then longest reset', () => {
    const h = rateHeaders(rateStates([{ policy: minute, count: 10 }, { policy: day, count: 19_995 }], T0));
    expect(h).toMatchObject({ 'x-ratelimit-limit': '20000', 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': String(resetSeconds(day, T0)) });
    expect(h['ratelimit-policy']).toBe('"minute";q=600;w=60, "day";q=20000;w=86400');
    expect(h.ratelimit).toBe(`"day";r=5;t=${resetSeconds(day, T0)}`);
    const tie = mostConstraining(rateStates([{ policy: minute, count: 600 }, { policy: day, count: 20_000 }], T0));
    expect(tie.policy).toBe(day);
    expect(rateHeaders([])).toEqual({});
  });

  it('never advertises the advisory window as an IETF quota; its X- fields never say 0', () => {
    const advisory = ADVISORY[0]!;
    const h = rateHeaders(rateStates([{ policy: advisory, count: 7 }], T0));
    expect(h).toEqual({ 'x-ratelimit-limit': '1000000', 'x-ratelimit-remaining': '999993', 'x-ratelimit-reset': '45' });
    // Past the advisory count the key is still admitted, so Remaining must not claim 0.
    const past = rateHeaders(rateStates([{ policy: advisory, count: 5_000_000 }], T0));
    expect(past['x-ratelimit-remaining']).toBe('1');
    expect(rateDecision([{ policy: advisory, count: 5_000_000 }], T0).allowed).toBe(true);
    // A mixed list (not built today) would advertise only the enforced policy.
    const mixed = rateHeaders(rateStates([{ policy: minute, count: 1 }, { policy: advisory, count: 999_999 }], T0));
    expect(mixed['ratelimit-policy']).toBe('"minute";q=600;w=60');
    expect(mixed.ratelimit).toBe('"minute";r=599;t=45');
    expect(mixed['x-ratelimit-remaining']).toBe('1');
  });
});

/** A fixed-window counter model driven only by the pure functions, like LimitStore. */
function model(policies: readonly RatePolicy[]) {
  const w = policies.map(() => ({ start: -1, count: 0 }));
  const counts = (now: number): PolicyCount[] =>
    policies.map((policy, i) => {
      if (w[i]!.start !== windowStart(policy, now)) w[i] = { start: windowStart(policy, now), count: 0 };
      return { policy, count: w[i]!.count };
    });
  return {
    request(now: number): { allowed: boolean; headers: Record<string, string> } {
      const c = counts(now);
      if (!rateDecision(c, now).allowed) return { allowed: false, headers: rateHeaders(rateStates(c, now)) };
      w.forEach((x) => x.count++);
      return { allowed: true, headers: rateHeaders(rateStates(counts(now), now)) };
    },
  };
}

const policiesArb = fc
  .uniqueArray(fc.constantFrom(1, 2, 5, 10, 60, 3600), { minLength: 1, maxLength: 3 })
  .chain((windows) => fc.tuple(...windows.map((s) => fc.integer({ min: 1, max: 6 }).map((limit) => `${limit}/${s}s`))))
  .map((parts) => parseRatePolicies(parts.join(',')));

describe('truthful headers (property)', () => {
  it('a client that sends while Remaining > 0 and waits Reset seconds at 0 is never refused', () => {
    fc.assert(
      fc.property(policiesArb, fc.integer({ min: 0, max: 1e12 }), fc.array(fc.integer({ min: 0, max: 2500 }), { minLength: 1, maxLength: 60 }), (policies, start, gaps) => {
        const m = model(policies);
        let now = start;
        let remaining = Infinity;
        let reset = 0;
        for (const gap of gaps) {
          now += remaining === 0 ? reset * 1000 : gap;
          const r = m.request(now);
          expect(r.allowed).toBe(true);
          remaining = Number(r.headers['x-ratelimit-remaining']);
          reset = Number(r.headers['x-ratelimit-reset']);
        }
      }),
    );
  });

  it('Remaining is exactly how many further requests pass at that instant', () => {
    fc.assert(
      fc.property(policiesArb, fc.integer({ min: 0, max: 1e12 }), fc.integer({ min: 1, max: 20 }), (policies, now, first) => {
        const m = model(policies);
        let last = { allowed: true, headers: {} as Record<string, string> };
        for (let i = 0; i < first && last.allowed; i++) last = m.request(now);
        if (!last.allowed) return;
        const remaining = Number(last.headers['x-ratelimit-remaining']);
        for (let i = 0; i < remaining; i++) expect(m.request(now).allowed).toBe(true);
        expect(m.request(now).allowed).toBe(false);
      }),
    );
  });
});
