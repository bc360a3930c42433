import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * The half-open probes decide for every team whether the provider is back, and every call
 * without one fails fast meanwhile. A probe taken by a call that then waits in its own team's
 * provider queue (the team at its share of slots, held by calls the provider hangs on) decides
 * nothing while it waits: one team's queued calls must not hold every probe, and every other
 * team failing fast, for as long as its hanging calls last (a deadline longer than the cooldown).
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    clock,
    config: {
      keys: { defaults: { rate: null, credits: null } },
      // One slot per team; the cooldown shorter than the deadline.
      upstream: { maxConcurrency: 2, teamSharePercent: 50, deadlineMs: 3000, breaker: { cooldownMs: 1000 } },
    },
  });
});
afterAll(async () => s.close());

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(cond()).toBe(true);
};

it("team A's calls queued behind its own hanging call do not take the half-open probes from team B", async () => {
  const a = s.newKey({ name: 'a', team: 'team-a' });
  const b = s.newKey({ name: 'b', team: 'team-b' });
  // Team A's one slot: a call the provider hangs on, until the deadline.
  s.sim.inject({ fault: { kind: 'hang' }, match: 'person.id=66' });
  const hanging = s.get('/v1/profile?person.id=66', { key: a.secret });
  await until(() => s.app.upstream.inFlight() === 1);
  // An outage seen through team B's lookups: the breaker opens.
  s.sim.inject({ fault: { kind: 'status', status: 503 } });
  for (let i = 0; i < 10; i++) await s.get(`/v1/company?org_id=${100 + i}&strategy=fetch`, { key: b.secret });
  expect(s.app.upstream.breakerState()).toBe('open');
  s.sim.clearFaults();
  clock.advance(1001);
  // Half-open: team A asks for five people; its slot is still held, so they wait in its queue.
  const queued: Array<Promise<Reply>> = [1, 2, 3, 4, 5].map((id) => s.get(`/v1/profile?person.id=${id}`, { key: a.secret }));
  await new Promise((r) => setTimeout(r, 100));
  const other = await s.get('/v1/company?org_id=900', { key: b.secret });
  expect(other.status, JSON.stringify(other.json)).toBe(200); // was 502 "circuit breaker open": A's queued calls held every probe
  expect(s.app.upstream.breakerState()).toBe('closed');
  // Team A's calls took no probe: they failed fast, as every call without one does while half-open.
  expect((await Promise.all(queued)).map((r) => r.json.error?.message)).toEqual(Array(5).fill('The provider could not be reached: circuit breaker open.'));
  await hanging;
});
