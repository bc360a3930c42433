import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { CircuitBreaker, entityOf, verdictFor, type BreakerSettings } from '../../src/upstream/breaker.js';
import type { BreakerState, UpstreamFailureKind, UpstreamOutcome } from '../../src/upstream/types.js';

const SETTINGS: BreakerSettings = { windowMs: 10_000, minimumCalls: 10, failureRatePercent: 50, minimumEntities: 3, cooldownMs: 1000, halfOpenProbes: 3 };

function setup(over: Partial<BreakerSettings> = {}) {
  const clock = new FakeClock();
  const changes: Array<[BreakerState, BreakerState]> = [];
  const breaker = new CircuitBreaker({ ...SETTINGS, ...over, clock, onChange: (f, t) => changes.push([f, t]) });
  const run = (verdict: 'success' | 'failure' | 'ignore', entity = 'e'): void => {
    const p = breaker.acquire(entity);
    if (!p) throw new Error('expected a permit');
    p.record(verdict);
  };
  /** Failures over `n` distinct entities. */
  const failMany = (n: number, from = 0): void => {
    for (let i = from; i < from + n; i++) run('failure', `e${i}`);
  };
  return { clock, breaker, changes, run, failMany };
}

const failed = (kind: UpstreamFailureKind): UpstreamOutcome => ({
  ok: false,
  kind,
  failure: { status: 502, code: 'X', message: 'x' },
  upstreamStatus: undefined,
  upstreamRequestId: undefined,
  ms: 0,
  attempts: 1,
});

describe('verdictFor: only signs of an unhealthy provider count', () => {
  it.each([
    ['server', 'failure'],
    ['unavailable', 'failure'],
    ['invalid', 'success'],
    ['temporary', 'success'],
    ['client', 'success'],
    ['not_found', 'success'],
    ['source_not_found', 'success'],
    ['auth', 'success'],
    ['rate_limited', 'success'],
  ] as const)('%s → %s', (kind, verdict) => {
    expect(verdictFor(failed(kind))).toBe(verdict);
  });
});

describe('entityOf', () => {
  const q = (...pairs: Array<[string, string]>) => pairs;
  it('is the endpoint family and identifier; strategy, maxage, filters and paging do not make a new one', () => {
    const base = entityOf({ path: '/v1/profile', query: q(['person.id', '5'], ['strategy', 'fetch']) });
    expect(base).toBe('/v1/profile?person.id=5');
    expect(entityOf({ path: '/v1/profile', query: q(['person.id', '5'], ['strategy', 'besteffort'], ['maxage', '9']) })).toBe(base);
    expect(entityOf({ path: '/v1/profile/posts', query: q(['person.id', '5'], ['offset', '40']) })).toBe(base);
    expect(entityOf({ path: '/v1/profile', query: q(['person.id', '6']) })).not.toBe(base);
    expect(entityOf({ path: '/v1/company', query: q(['org_id', '5']) })).not.toBe(base);
  });

  it('is the path for a call without an identifier (pass-through)', () => {
    expect(entityOf({ path: '/v1/credits', query: [] })).toBe('/v1/credits');
    expect(entityOf({ path: '/v1/extra/x', query: q(['a', '1']) })).toBe('/v1/extra/x');
    // A lookup's identifier names, given to a pass-through path, do not make new entities of it.
    expect(entityOf({ path: '/v1/credits', query: q(['org_id', '1']) })).toBe('/v1/credits');
    expect(entityOf({ path: '/v1/extra/posts', query: q(['url', 'x']) })).toBe('/v1/extra/posts');
  });
});

describe('CircuitBreaker (closed)', () => {
  it('opens on the failure rate once the window holds the minimum volume', () => {
    const { breaker, failMany, changes } = setup();
    failMany(9);
    expect(breaker.state()).toBe('closed');
    failMany(1, 9);
    expect(breaker.state()).toBe('open');
    expect(breaker.acquire('x')).toBeNull();
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('stays closed below the failure rate', () => {
    const { breaker, run, failMany } = setup();
    for (let i = 0; i < 11; i++) run('success');
    failMany(10);
    expect(breaker.state()).toBe('closed'); // 10 of 21 < 50%
    failMany(1, 10);
    expect(breaker.state()).toBe('open'); // 11 of 22
  });

  it('never opens on failures of fewer entities than minimumEntities, however many', () => {
    const { breaker, run } = setup();
    for (let i = 0; i < 500; i++) run('failure', i % 2 ? 'a' : 'b');
    expect(breaker.state()).toBe('closed');
    run('failure', 'c');
    expect(breaker.state()).toBe('open');
  });

  it('property: any history whose failures touch fewer than minimumEntities entities never opens', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('success', 'failure', 'ignore') as fc.Arbitrary<'success' | 'failure' | 'ignore'>, fc.constantFrom('a', 'b'), fc.nat(3000)), { maxLength: 300 }),
        (steps) => {
          const { breaker, clock, run } = setup();
          for (const [verdict, entity, ms] of steps) {
            clock.advance(ms);
            run(verdict, entity);
          }
          return breaker.state() === 'closed';
        },
      ),
    );
  });

  it('a provider failing everything is detected within max(minimumCalls, minimumEntities) calls', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 40 }), (minimumCalls, minimumEntities) => {
        const { breaker, run } = setup({ minimumCalls, minimumEntities });
        const bound = Math.max(minimumCalls, minimumEntities);
        for (let i = 0; i < bound - 1; i++) run('failure', `e${i}`);
        const before = breaker.state();
        run('failure', `e${bound}`);
        return before === 'closed' && breaker.state() === 'open';
      }),
    );
  });

  it('forgets failures that left the window', () => {
    const { breaker, clock, failMany } = setup();
    failMany(9);
    clock.advance(10_000);
    failMany(1, 9);
    expect(breaker.state()).toBe('closed');
    failMany(8, 10);
    expect(breaker.state()).toBe('closed');
    failMany(1, 18);
    expect(breaker.state()).toBe('open');
  });

  it('ignored calls count neither way', () => {
    const { breaker, run, failMany } = setup();
    for (let i = 0; i < 50; i++) run('ignore');
    failMany(9);
    expect(breaker.state()).toBe('closed');
    failMany(1, 9);
    expect(breaker.state()).toBe('open');
  });

  it('results of calls admitted before the breaker opened are not counted', () => {
    const { breaker, clock, failMany } = setup();
    const early = breaker.acquire('late')!;
    failMany(10);
    expect(breaker.state()).toBe('open');
    clock.advance(1000);
    early.record('failure');
    expect(breaker.state()).toBe('half_open');
  });

  it('records each permit once', () => {
    const { breaker, failMany } = setup();
    failMany(9);
    const p = breaker.acquire('x')!;
    p.record('success');
    p.record('failure');
    expect(breaker.state()).toBe('closed');
  });
});

describe('CircuitBreaker (half-open)', () => {
  function opened(over: Partial<BreakerSettings> = {}) {
    const t = setup(over);
    t.failMany(10);
    t.clock.advance(1000);
    return t;
  }

  it('half-opens after the cooldown and lets exactly halfOpenProbes probes out', () => {
    const { breaker, clock } = setup();
    setupFail(breaker);
    clock.advance(999);
    expect(breaker.state()).toBe('open');
    clock.advance(1);
    expect(breaker.state()).toBe('half_open');
    const probes = [breaker.acquire('a'), breaker.acquire('b'), breaker.acquire('c')];
    expect(probes.every((p) => p?.trial === true)).toBe(true);
    expect(breaker.acquire('d')).toBeNull();
  });

  it('closes when the probes succeed: one success is not enough to decide, a majority is', () => {
    // Two entities are enough to open it here, so two probe failures are enough to re-open it.
    const { breaker, changes } = opened({ minimumEntities: 2 });
    const [a, b, c] = [breaker.acquire('a')!, breaker.acquire('b')!, breaker.acquire('c')!];
    a.record('success');
    expect(breaker.state()).toBe('half_open');
    b.record('failure');
    expect(breaker.state()).toBe('half_open');
    c.record('success');
    expect(breaker.state()).toBe('closed');
    expect(changes).toEqual([['closed', 'open'], ['open', 'half_open'], ['half_open', 'closed']]);
    expect(breaker.acquire('x')?.trial).toBe(false);
  });

  it('re-opens for a full cooldown when the probes fail over distinct entities', () => {
    const { breaker, clock } = opened({ minimumEntities: 2 });
    const [a, b] = [breaker.acquire('a')!, breaker.acquire('b')!];
    a.record('failure');
    expect(breaker.state()).toBe('half_open');
    clock.advance(300);
    b.record('failure');
    expect(breaker.state()).toBe('open');
    clock.advance(999);
    expect(breaker.state()).toBe('open');
    clock.advance(1);
    expect(breaker.state()).toBe('half_open');
  });

  it('one entity failing again in half-open would say nothing new: it fails fast, and the probe slots go to others', () => {
    const { breaker } = opened();
    breaker.acquire('bad')!.record('failure');
    for (let i = 0; i < 20; i++) expect(breaker.acquire('bad')).toBeNull();
    expect(breaker.state()).toBe('half_open');
    breaker.acquire('good1')!.record('success');
    breaker.acquire('good2')!.record('success');
    expect(breaker.state()).toBe('closed');
  });

  it('re-opening takes as many failed entities as opening does (minimumEntities, at most every probe)', () => {
    // minimumEntities 3, 3 probes: a majority (2) of failures is not enough, as 2 entities could never open it.
    const { breaker } = opened();
    breaker.acquire('bad1')!.record('failure');
    breaker.acquire('bad2')!.record('failure');
    expect(breaker.state()).toBe('half_open');
    breaker.acquire('bad3')!.record('failure');
    expect(breaker.state()).toBe('open');
  });

  it("after an outage, a team's few entities the provider keeps failing on cannot hold it open for everyone", () => {
    const { breaker } = opened({ minimumEntities: 5, halfOpenProbes: 5 });
    // They ask first and take probes, and fail; asked again, they fail fast.
    for (let i = 0; i < 30; i++) breaker.acquire(i % 2 ? 'bad66' : 'bad77')?.record('failure');
    expect(breaker.state()).toBe('half_open');
    // Another team's lookup is a probe too, and the provider answers it: closed.
    breaker.acquire('healthy')!.record('success');
    expect(breaker.state()).toBe('closed');
  });

  it('an entity gets one probe at a time: its other calls fail fast while it is out, not the other entities\' calls', () => {
    const { breaker } = opened({ halfOpenProbes: 5, minimumEntities: 5 });
    // The provider hangs on 'slow': its probe is out until the deadline.
    const slow = breaker.acquire('slow');
    expect(slow?.trial).toBe(true);
    for (let i = 0; i < 10; i++) expect(breaker.acquire('slow')).toBeNull();
    const other = breaker.acquire('other');
    expect(other?.trial).toBe(true);
    other!.record('success');
    expect(breaker.state()).toBe('closed');
    slow!.record('failure'); // admitted before the transition: not counted
    expect(breaker.state()).toBe('closed');
  });

  it('an ignored probe frees its slot, and its entity may probe again', () => {
    const { breaker } = opened({ halfOpenProbes: 1 });
    breaker.acquire('a')!.record('ignore');
    const again = breaker.acquire('a');
    expect(again?.trial).toBe(true);
    again!.record('ignore');
    expect(breaker.state()).toBe('half_open');
  });

  it('an ignored probe frees its slot', () => {
    const { breaker } = opened({ halfOpenProbes: 1 });
    breaker.acquire('a')!.record('ignore');
    expect(breaker.state()).toBe('half_open');
    const p = breaker.acquire('b');
    expect(p?.trial).toBe(true);
    expect(breaker.acquire('c')).toBeNull();
    p!.record('success');
    expect(breaker.state()).toBe('closed');
  });

  it('after closing, the old window is forgotten', () => {
    const { breaker, failMany } = opened({ halfOpenProbes: 1 });
    breaker.acquire('a')!.record('success');
    expect(breaker.state()).toBe('closed');
    failMany(9, 100);
    expect(breaker.state()).toBe('closed');
  });
});

function setupFail(breaker: CircuitBreaker): void {
  for (let i = 0; i < 10; i++) breaker.acquire(`e${i}`)!.record('failure');
  expect(breaker.state()).toBe('open');
}

describe('a wall clock stepped back (NTP, a VM resumed)', () => {
  it('an open breaker turns half-open one cooldown later, not the length of the step later', () => {
    const { clock, breaker, failMany } = setup();
    failMany(10);
    expect(breaker.state()).toBe('open');
    clock.advance(-3_600_000);
    expect(breaker.state()).toBe('open');
    // Was open for the hour the clock went back, plus the cooldown: no call for any team meanwhile.
    clock.advance(SETTINGS.cooldownMs);
    expect(breaker.state()).toBe('half_open');
    expect(breaker.acquire('e-new')).not.toBeNull();
  });

  it('failures counted before the step do not stay in the window for the length of the step', () => {
    const { clock, breaker, failMany } = setup();
    failMany(9); // one call short of minimumCalls
    expect(breaker.state()).toBe('closed');
    // Half a bucket more than an hour back: the next failure lands in another bucket than those 9.
    clock.advance(-3_600_500);
    // An hour and more later in real time, those 9 are older than the 10 s window: one failure alone trips nothing.
    failMany(1, 100);
    expect(breaker.state()).toBe('closed');
  });
});
