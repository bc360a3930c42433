import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * One team's provider calls that hang must not take the provider from another team: a team
 * holds at most upstream.teamSharePercent of upstream.maxConcurrency, so another team's call
 * starts at once instead of waiting out its deadline behind them in one queue.
 */
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { upstream: { maxConcurrency: 4, deadlineMs: 1_500 }, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

describe("one team's hanging lookups", () => {
  it("leave another team's healthy lookup its share of the provider", async () => {
    const a = s.newKey({ name: 'a', team: 'team-a' });
    const b = s.newKey({ name: 'b', team: 'team-b' });
    s.sim.inject({ fault: { kind: 'hang' }, match: 'org_id=7' });
    const batch = Array.from({ length: 8 }, (_, i) => s.get(`/v1/company?org_id=${700 + i}&strategy=fetch`, { key: a.secret }));
    await new Promise((r) => setTimeout(r, 50));
    const other = await s.get('/v1/company?org_id=900', { key: b.secret });
    expect(other.status, JSON.stringify(other.json)).toBe(200); // was 502 "timed out", its deadline spent in the queue
    // Team A's calls are cut at their deadline, as before; they held two of the four slots.
    const statuses = (await Promise.all(batch)).map((r) => r.status);
    expect(statuses.every((st) => st === 502)).toBe(true);
  });
});
