import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

/*
 * Two provider calls for one entity in flight at once (a `fetch` does not join a `cached`
 * call under way): the one that began first answers last. The cache keeps the fresher answer.
 */

const clock = new FakeClock(Date.UTC(2026, 5, 1));
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    clock,
    sim: { clock },
    config: { cache: { ttl: { profile: 100 }, staleTtl: { profile: 1000 } }, upstream: { breaker: { minimumCalls: 1000 } } },
  });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const sec = (n: number) => clock.advance(n * 1000);
const P = '/v1/profile?person.id=77';

/** Wait (bounded) until the simulator has received `n` profile calls. */
async function simReceived(n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (s.sim.callCount('/v1/profile') < n) {
    if (Date.now() > deadline) throw new Error(`the simulator received ${s.sim.callCount('/v1/profile')} calls, not ${n}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A `cached` request whose provider call is slow, a `fetch` that overtakes it 60 s later; both answers. */
async function overtaken(): Promise<{ older: Reply; fetched: Reply }> {
  s.sim.inject({ fault: { kind: 'latency', ms: 1500 }, times: 1, path: '/v1/profile', match: 'strategy=cached' });
  const calls = s.sim.callCount('/v1/profile');
  let slowAnswered = false;
  const slow = s.get(P).finally(() => (slowAnswered = true));
  await simReceived(calls + 1);
  sec(60);
  const fetched = await s.get(`${P}&strategy=fetch`);
  expect(slowAnswered).toBe(false); // the premise: the fetch overtook the slow call
  expect(fetched.headers['x-cache-status']).toBe('BYPASS');
  expect(fetched.headers['cache-status']).toBe('tollgate; fwd=request; stored');
  const older = await slow;
  expect(older.status).toBe(200);
  expect(older.headers['x-cache-status']).toBe('MISS');
  return { older, fetched };
}

describe('an older call answering after a newer one', () => {
  it('a fresh fetch that began earlier does not replace the later fetch: strict and cached still hit it', async () => {
    const { older, fetched } = await overtaken();
    expect(older.json.meta.cached).toBe(false); // the provider fetched it then, 60 s before the other
    sec(10);
    const strict = await s.get(`${P}&strategy=strict&maxage=30`);
    expect(strict.headers['x-cache-status']).toBe('HIT');
    const hit = await s.get(P);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(hit.headers.age).toBe('10');
    expect(hit.json.data).toEqual(fetched.json.data);
    expect(s.sim.callCount('/v1/profile')).toBe(2);
    // It was answered, not stored: the cache holds the later fetch.
    expect(older.headers['cache-status']).toBe('tollgate; fwd=uri-miss');
  });

  it("the provider's own copy, asked for before the fetch, does not replace the fetch", async () => {
    await s.get(`${P}&strategy=fetch`); // the provider now holds a copy
    s.app.cache.purge({ all: true });
    sec(3600);
    const { older } = await overtaken();
    expect(older.json.meta.cached).toBe(true); // of unknown age
    sec(10);
    expect((await s.get(`${P}&strategy=strict&maxage=30`)).headers['x-cache-status']).toBe('HIT');
    expect(s.sim.callCount('/v1/profile')).toBe(3);
    expect(older.headers['cache-status']).toBe('tollgate; fwd=uri-miss');
  });

  it('after the clock steps back, an entry stored in its future is fetched once and replaced, not paid for on every request', async () => {
    await s.get(P);
    clock.advance(-3_600_000);
    const calls = s.sim.callCount('/v1/profile');
    const again = await s.get(P);
    expect(again.headers['x-cache-status']).toBe('MISS'); // dated an hour ahead: its age is unknown
    expect(again.headers['cache-status']).toBe('tollgate; fwd=uri-miss; stored');
    const hit = await s.get(P);
    expect(hit.headers['x-cache-status']).toBe('HIT');
    expect(s.sim.callCount('/v1/profile')).toBe(calls + 1);
  });
});

