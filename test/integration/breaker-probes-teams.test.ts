import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Reply, type Stack } from '../helpers/stack.js';

/**
 * After an outage, the half-open probes decide whether the provider is back, and every other
 * call fails fast until they do. One team's lookups of one entity the provider hangs on
 * (variants of it are distinct calls) must not take every probe and hold the breaker open for
 * every team until they time out, round after round: an entity gets one probe.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { keys: { defaults: { rate: null, credits: null } }, upstream: { deadlineMs: 800 } } });
});
afterAll(async () => s.close());

const FILTERS = ['default', 'current', 'revisions', 'distincts'];

it("team A's calls of one hanging entity take one half-open probe, not all of them: team B's lookup is a probe and closes it", async () => {
  const a = s.newKey({ name: 'a', team: 'team-a' });
  const b = s.newKey({ name: 'b', team: 'team-b' });
  // A real outage, seen through team B's lookups: the breaker opens.
  s.sim.inject({ fault: { kind: 'status', status: 503 } });
  for (let i = 0; i < 10; i++) await s.get(`/v1/company?org_id=${100 + i}&strategy=fetch`, { key: b.secret });
  expect(s.app.upstream.breakerState()).toBe('open');
  // The outage ends, but the provider hangs on one person team A keeps asking for.
  s.sim.clearFaults();
  s.sim.inject({ fault: { kind: 'hang' }, match: 'person.id=66' });
  clock.advance(30_001);
  const calls = s.sim.callCount();
  let answered = 0;
  // Five variants of the same person: five distinct provider calls, as many as there are probes.
  const asked: Array<Promise<Reply>> = FILTERS.concat('default').map((f, i) =>
    s.get(`/v1/profile?person.id=66&experience_filter=${f}${i === 4 ? '&summary_filter=last_complete' : ''}`, { key: a.secret }).then((r) => {
      answered++;
      return r;
    }),
  );
  // Each of them is either at the provider, hanging, or already answered (failed fast).
  while (s.sim.callCount() - calls + answered < asked.length) await new Promise((r) => setTimeout(r, 5));
  const other = await s.get('/v1/company?org_id=900', { key: b.secret });
  expect(other.status, JSON.stringify(other.json)).toBe(200); // was 502 "circuit breaker open" while A's five probes hung
  expect(s.app.upstream.breakerState()).toBe('closed');
  await Promise.all(asked);
});
