import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.js';
import { CircuitBreaker, verdictFor } from '../../src/upstream/breaker.js';
import type { BreakerState, UpstreamFailureKind, UpstreamOutcome } from '../../src/upstream/types.js';

function setup(threshold = 3, cooldownMs = 1000) {
  const clock = new FakeClock();
  const changes: Array<[BreakerState, BreakerState]> = [];
  const breaker = new CircuitBreaker({ failureThreshold: threshold, cooldownMs, clock, onChange: (f, t) => changes.push([f, t]) });
  const run = (verdict: 'success' | 'failure' | 'ignore'): void => {
    const p = breaker.acquire();
    if (!p) throw new Error('expected a permit');
    p.record(verdict);
  };
  return { clock, breaker, changes, run };
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

describe('verdictFor', () => {
  it.each([
    ['server', 'failure'],
    ['invalid', 'failure'],
    ['unavailable', 'failure'],
    ['temporary', 'failure'],
    ['client', 'success'],
    ['not_found', 'success'],
    ['source_not_found', 'success'],
    ['auth', 'success'],
    ['rate_limited', 'success'],
  ] as const)('%s → %s', (kind, verdict) => {
    expect(verdictFor(failed(kind))).toBe(verdict);
  });
});

describe('CircuitBreaker', () => {
  it('opens after N consecutive failures', () => {
    const { breaker, run, changes } = setup(3);
    run('failure');
    run('failure');
    expect(breaker.state()).toBe('closed');
    run('failure');
    expect(breaker.state()).toBe('open');
    expect(breaker.acquire()).toBeNull();
    expect(changes).toEqual([['closed', 'open']]);
  });

  it('a success or a healthy answer resets the count; ignore does not', () => {
    const { breaker, run } = setup(3);
    run('failure');
    run('failure');
    run('success');
    run('failure');
    run('failure');
    expect(breaker.state()).toBe('closed');
    run('ignore');
    run('failure');
    expect(breaker.state()).toBe('open');
  });

  it('half-opens after the cooldown and lets exactly one trial through', () => {
    const { breaker, clock, run } = setup(1, 1000);
    run('failure');
    clock.advance(999);
    expect(breaker.state()).toBe('open');
    clock.advance(1);
    expect(breaker.state()).toBe('half_open');
    const trial = breaker.acquire();
    expect(trial?.trial).toBe(true);
    expect(breaker.acquire()).toBeNull();
    trial!.record('success');
    expect(breaker.state()).toBe('closed');
    expect(breaker.acquire()).not.toBeNull();
  });

  it('a failed trial re-opens for a full cooldown', () => {
    const { breaker, clock, run } = setup(1, 1000);
    run('failure');
    clock.advance(1000);
    const trial = breaker.acquire()!;
    clock.advance(300);
    trial.record('failure');
    expect(breaker.state()).toBe('open');
    clock.advance(999);
    expect(breaker.state()).toBe('open');
    clock.advance(1);
    expect(breaker.state()).toBe('half_open');
  });

  it('an ignored trial frees the probe slot', () => {
    const { breaker, clock, run } = setup(1, 1000);
    run('failure');
    clock.advance(1000);
    breaker.acquire()!.record('ignore');
    expect(breaker.state()).toBe('half_open');
    expect(breaker.acquire()?.trial).toBe(true);
  });

  it('results of calls admitted before the breaker opened do not close it', () => {
    const { breaker } = setup(1, 1000);
    const early = breaker.acquire()!;
    breaker.acquire()!.record('failure');
    expect(breaker.state()).toBe('open');
    early.record('success');
    expect(breaker.state()).toBe('open');
  });

  it('records each permit once', () => {
    const { breaker } = setup(2);
    const p = breaker.acquire()!;
    p.record('failure');
    p.record('failure');
    expect(breaker.state()).toBe('closed');
  });
});
