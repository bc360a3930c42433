import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * One team's lookups of two entities the provider always fails on (5xx) never open the
 * breaker by themselves (minimumEntities); after a real outage they must not hold it open
 * for every team either, however often they win the half-open probes.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

it("after an outage, team A's two failing entities do not keep team B from a healthy provider", async () => {
  const a = s.newKey({ name: 'a', team: 'team-a' });
  const b = s.newKey({ name: 'b', team: 'team-b' });
  s.sim.inject({ fault: { kind: 'status', status: 500 }, match: 'org_id=66' });
  s.sim.inject({ fault: { kind: 'status', status: 500 }, match: 'org_id=77' });
  for (let i = 0; i < 20; i++) expect((await s.get(`/v1/company?org_id=${i % 2 ? 66 : 77}&strategy=fetch`, { key: a.secret })).status).toBe(502);
  expect(s.app.upstream.breakerState()).toBe('closed');
  // A real outage, seen through team B's lookups: the breaker opens.
  s.sim.inject({ fault: { kind: 'status', status: 503 } });
  for (let i = 0; i < 10; i++) await s.get(`/v1/company?org_id=${100 + i}&strategy=fetch`, { key: b.secret });
  expect(s.app.upstream.breakerState()).toBe('open');
  // The outage ends; team A's two entities still fail.
  s.sim.clearFaults();
  s.sim.inject({ fault: { kind: 'status', status: 500 }, match: 'org_id=66' });
  s.sim.inject({ fault: { kind: 'status', status: 500 }, match: 'org_id=77' });
  for (let round = 0; round < 3; round++) {
    clock.advance(30_001);
    // Team A asks first, and its entities fail again.
    await Promise.all([66, 77].map((id) => s.get(`/v1/company?org_id=${id}&strategy=fetch`, { key: a.secret })));
    const other = await s.get(`/v1/company?org_id=${900 + round}`, { key: b.secret });
    expect(other.status, JSON.stringify(other.json)).toBe(200); // was 502 "circuit breaker open", round after round
  }
  expect(s.app.upstream.breakerState()).toBe('closed');
});
