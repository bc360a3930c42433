import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { Fault } from '../../src/simulator/types.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * Issue #11 item 3, end to end with the shipped breaker defaults: one team's bad lookups
 * must not take the provider away from everyone, a provider that is really down must still
 * be cut off, and besteffort serves stale while the provider throttles.
 */
let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});
afterAll(async () => s?.close());

describe('one team cannot take the provider away from everyone', () => {
  it.each<[string, Fault]>([
    ['512 after retries', { kind: 'status', status: 512 }],
    ['an invalid answer', { kind: 'malformed' }],
    ['a provider 500 for that one entity', { kind: 'status', status: 500 }],
    ['513 (a deleted profile)', { kind: 'status', status: 513 }],
  ])('50 failing lookups of one entity (%s) leave other keys’ misses working', async (_name, fault) => {
    s = await startStack();
    const batch = s.newKey({ name: 'batch-job' });
    const other = s.newKey({ name: 'other-team' });
    s.sim.inject({ fault, match: 'person.id=666&' });
    for (let i = 0; i < 50; i++) {
      const r = await s.get('/v1/profile?person.id=666&strategy=fetch', { key: batch.secret });
      expect(r.status).not.toBe(200);
      // After the first five the old consecutive-failure breaker answered every miss with 502.
      if (i % 10 === 4) {
        const miss = await s.get(`/v1/company?org_id=${100 + i}`, { key: other.secret });
        expect([miss.status, miss.json.error?.message]).toEqual([200, undefined]);
      }
    }
    expect(s.app.upstream.breakerState()).toBe('closed');
  });
});

describe('a provider that is really down', () => {
  it('is cut off after a bounded number of misses; besteffort keeps serving stale', async () => {
    const clock = new FakeClock();
    s = await startStack({ clock, sim: { clock } });
    const { minimumCalls, minimumEntities } = s.app.config.upstream.breaker;
    expect((await s.get('/v1/profile?person.id=3&strategy=fetch')).status).toBe(200);
    clock.advance(120_000);
    s.sim.inject({ fault: { kind: 'status', status: 503 } });
    const keys = [s.newKey(), s.newKey(), s.newKey()];
    for (let i = 0; i < Math.max(minimumCalls, minimumEntities); i++) {
      expect((await s.get(`/v1/company?org_id=${i + 1}`, { key: keys[i % 3]!.secret })).json.error.code).toBe('UPSTREAM_ERROR');
    }
    expect(s.app.upstream.breakerState()).toBe('open');
    const reached = s.sim.callCount();
    const fast = await s.get('/v1/company?org_id=999');
    expect([fast.status, fast.json.error.code]).toEqual([502, 'UPSTREAM_UNAVAILABLE']);
    expect(fast.json.error.message).toMatch(/circuit breaker open/);
    const stale = await s.get('/v1/profile?person.id=3&strategy=besteffort&maxage=60');
    expect([stale.status, stale.headers['x-cache-status']]).toEqual([200, 'STALE']);
    expect(s.sim.callCount()).toBe(reached);
  });
});

describe('besteffort while the provider throttles (its 429)', () => {
  it('serves the stored entry as stale, during the 429 and during the pause after it', async () => {
    const clock = new FakeClock();
    s = await startStack({ clock, sim: { clock } });
    expect((await s.get('/v1/profile?person.id=8&strategy=fetch')).status).toBe(200);
    clock.advance(120_000);
    s.sim.inject({ fault: { kind: 'status', status: 429, retryAfter: 30 }, times: 1 });
    const during = await s.get('/v1/profile?person.id=8&strategy=besteffort&maxage=60');
    expect(during.status).toBe(200);
    expect(during.headers['x-cache-status']).toBe('STALE');
    expect(during.headers['cache-status']).toContain('fwd-status=429');
    expect(during.headers['cache-status']).toContain('detail=stale-if-error');
    expect(during.json.meta.cached).toBe(true);

    // The pause (30 s) outlasts the deadline: no provider call, stale again.
    const calls = s.sim.callCount();
    const paused = await s.get('/v1/profile?person.id=8&strategy=besteffort&maxage=60');
    expect([paused.status, paused.headers['x-cache-status']]).toEqual([200, 'STALE']);
    // Without a stored entry, or with another strategy, the caller still learns about the throttle.
    const miss = await s.get('/v1/profile?person.id=9&strategy=besteffort&maxage=60');
    expect([miss.status, miss.json.error.code, miss.headers['retry-after']]).toEqual([429, 'UPSTREAM_RATE_LIMITED', '30']);
    expect((await s.get('/v1/profile?person.id=8&strategy=fetch')).status).toBe(429);
    expect(s.sim.callCount()).toBe(calls);
  });
});
