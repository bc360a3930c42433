import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * A pass-through call's entity, for the breaker, is its path (README "The provider client"):
 * a query parameter that happens to be named like a lookup's identifier (`org_id`, `url`, …)
 * must not make each value a new entity, or one team could open the breaker for every team
 * with one provider path that fails, by varying `?org_id=` over minimumEntities values.
 */
const clock = new FakeClock(Date.UTC(2026, 2, 10, 9, 0, 0));
let s: Stack;
beforeAll(async () => {
  s = await startStack({ clock, config: { passthrough: { paths: ['/v1/credits'] }, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

it("team A's failing pass-through path, asked with varying identifier-named parameters, does not open the breaker for team B", async () => {
  const a = s.newKey({ name: 'a', team: 'team-a' });
  const b = s.newKey({ name: 'b', team: 'team-b' });
  s.sim.inject({ fault: { kind: 'status', status: 500 }, path: '/v1/credits' });
  for (let i = 0; i < 20; i++) expect((await s.get(`/v1/credits?org_id=${i}`, { key: a.secret })).status).toBe(502);
  expect(s.app.upstream.breakerState()).toBe('closed'); // was 'open': twenty "entities" of one path
  const other = await s.get('/v1/company?org_id=42', { key: b.secret });
  expect(other.status, JSON.stringify(other.json)).toBe(200);
});
