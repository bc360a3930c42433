import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { adminCaller, startStack, type Stack } from '../helpers/stack.js';

/*
 * "A running server stops serving purged entries at once" (README, Caching). A besteffort
 * request read its stale entry when it came, then forwarded; the entry was purged while the
 * call was out, the call failed, and the purged entry was served as the stale fallback. The
 * fallback is now the entry held when the failure comes.
 */
const TOKEN = 'admin-token-for-stale-after-purge-0123';
const clock = new FakeClock(Date.UTC(2026, 5, 1));
let s: Stack;
const admin = adminCaller(() => s, TOKEN);
beforeAll(async () => {
  s = await startStack({
    clock,
    sim: { clock },
    config: {
      adminToken: TOKEN,
      cache: { ttl: { profile: 100, company: 100 }, staleTtl: { profile: 1000, company: 1000 } },
      upstream: { deadlineMs: 600, breaker: { minimumCalls: 1000 } },
    },
  });
});
afterAll(async () => s.close());
beforeEach(() => s.reset());

const P = '/v1/profile?person.id=31';
const BE = `${P}&strategy=besteffort&maxage=10`;

/** A besteffort request whose provider call hangs until the deadline, and `during` run while it is out. */
async function failingCallWith(during: () => Promise<void>) {
  expect((await s.get(`${P}&strategy=fetch`)).status).toBe(200);
  clock.advance(60_000); // too old for maxage 10, young enough to fall back on
  s.sim.inject({ fault: { kind: 'hang' }, times: 1 });
  const calls = s.sim.callCount();
  const pending = s.get(BE);
  const end = Date.now() + 5_000;
  while (s.sim.callCount() === calls && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  expect(s.sim.callCount()).toBe(calls + 1);
  await during();
  return pending;
}

describe('besteffort fallback and a purge during the call', () => {
  it('an entry purged while the call was out is not served when the call fails (was 200 STALE)', async () => {
    const r = await failingCallWith(async () => {
      const purged = await admin('POST', '/cache/purge', { id: 'person.id=31' });
      expect(purged.json, JSON.stringify(purged.json)).toEqual({ purged: 1 });
    });
    expect(r.status).toBe(502);
    expect(r.json.error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(r.headers['x-cache-status']).not.toBe('STALE');
  });

  it('without a purge the same failure falls back to the stale entry, as before', async () => {
    const r = await failingCallWith(async () => {});
    expect(r.status).toBe(200);
    expect(r.headers['x-cache-status']).toBe('STALE');
  });
});
