import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { profileUrl, startStack, type Stack } from '../helpers/stack.js';

/**
 * The spec's freshness rules (§4.6: strict and besteffort "use the cache only when it is newer
 * than maxage") held against the time a provider call takes, a late joiner, a stored 404, and
 * besteffort's stale fallback against cache.staleTtl (each found in review; each failed before).
 */
const clock = new FakeClock(Date.UTC(2026, 5, 1));
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    clock,
    sim: { clock },
    config: {
      cache: { ttl: { profile: 100, company: 100 }, staleTtl: { profile: 1000, company: 1000 }, negativeTtl: { notFound: 3600, sourceNotFound: 86400 } },
      upstream: { deadlineMs: 600, breaker: { minimumCalls: 1000 } },
    },
  });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const seconds = (n: number) => clock.advance(n * 1000);
const realMs = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PROFILE = '/v1/profile?person.id=21';

describe('a stored 404 and maxage', () => {
  it.each(['strict', 'besteffort'])('%s&maxage=10 asks the provider again about a 404 stored 30 s ago', async (strategy) => {
    const path = '/v1/profile?' + profileUrl('missing-someone');
    expect((await s.get(path)).status).toBe(404);
    seconds(30);
    const r = await s.get(`${path}&strategy=${strategy}&maxage=10`);
    expect(r.status).toBe(404);
    expect(r.headers['x-cache-status']).not.toBe('HIT'); // was HIT: 30 s old for a maxage of 10
    expect(s.sim.callCount()).toBe(2);
    // Within its maxage it is still replayed.
    expect((await s.get(`${path}&strategy=${strategy}&maxage=10`)).headers['x-cache-status']).toBe('HIT');
  });
});

describe('how fresh an answer is known to be counts from when its call began', () => {
  it("a provider cache answer to strict&maxage=60 that took 20 s is not fresh enough for maxage=65 later", async () => {
    await s.get(`${PROFILE}&strategy=fetch`); // the provider keeps a copy
    s.app.cache.purge({ all: true });
    seconds(50);
    s.sim.inject({ fault: { kind: 'latency', ms: 400 }, times: 1 });
    const pending = s.get(`${PROFILE}&strategy=strict&maxage=60`);
    await realMs(150);
    seconds(20);
    expect((await pending).json.meta.cached).toBe(true);
    // The provider's copy is 70 s old now.
    const r = await s.get(`${PROFILE}&strategy=strict&maxage=65`);
    expect(r.headers['x-cache-status']).not.toBe('HIT'); // was HIT on 70-second-old data
  });

  it('a strict request that would join a call begun 20 s before it is not given data older than its maxage', async () => {
    await s.get(`${PROFILE}&strategy=fetch`);
    s.app.cache.purge({ all: true });
    seconds(50);
    s.sim.inject({ fault: { kind: 'latency', ms: 500 }, times: 1 });
    const leader = s.get(`${PROFILE}&strategy=strict&maxage=60`);
    await realMs(150);
    seconds(20);
    const follower = await s.get(`${PROFILE}&strategy=strict&maxage=60`);
    await leader;
    expect(follower.headers['cache-status']).not.toContain('collapsed'); // was collapsed onto the leader's 70 s old copy
    expect(follower.json.meta.cached).toBe(false);
    expect(s.sim.callCount()).toBe(3);
  });
});

describe("besteffort's stale fallback", () => {
  it('never serves an entry older than cache.staleTtl, however long the failing call took', async () => {
    await s.get(`${PROFILE}&strategy=fetch`);
    seconds(995);
    s.sim.inject({ fault: { kind: 'hang' }, times: 1 });
    const pending = s.get(`${PROFILE}&strategy=besteffort&maxage=10`);
    await realMs(150);
    seconds(10);
    const r = await pending;
    expect(r.status).toBe(502); // was 200 with Age: 1005, past the staleTtl of 1000
  });
});
