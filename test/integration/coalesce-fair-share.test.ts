import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * Coalescing must not undo the provider's fair share: a team's call waiting in its own team's
 * queue (the team at its share of slots) is no call another team's identical request should
 * wait behind. That request would have started at once on a slot of its own; following the
 * queued call, it spent its deadline in the other team's queue and was answered 502.
 */
let s: Stack;
beforeAll(async () => {
  s = await startStack({ config: { upstream: { maxConcurrency: 4, deadlineMs: 1_500 }, keys: { defaults: { rate: null, credits: null } } } });
});
afterAll(async () => s.close());

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await pause(10);
  expect(cond()).toBe(true);
}

describe("another team's queued call", () => {
  it('is not joined: the identical lookup of a team under its share starts at once', async () => {
    const a = s.newKey({ name: 'a', team: 'team-a' });
    const b = s.newKey({ name: 'b', team: 'team-b' });
    // Each key once first: its first request verifies its secret, which takes a while.
    for (const k of [a, b]) expect((await s.get('/v1/company?org_id=900', { key: k.secret })).status).toBe(200);
    s.sim.inject({ fault: { kind: 'hang' }, match: 'org_id=70' });
    // Team A holds its two slots with hanging calls and queues two more hanging ones, then org 800.
    const hanging = [700, 701, 702, 703].map((id) => s.get(`/v1/company?org_id=${id}&strategy=fetch`, { key: a.secret }));
    await until(() => s.app.upstream.inFlight() === 2 && s.app.upstream.queueDepth() === 2);
    const queued = s.get('/v1/company?org_id=800&strategy=fetch', { key: a.secret });
    await until(() => s.app.upstream.queueDepth() === 3);
    const t0 = Date.now();
    const other = await s.get('/v1/company?org_id=800&strategy=fetch', { key: b.secret });
    const tookMs = Date.now() - t0;
    expect(other.status, JSON.stringify([other.json, other.headers])).toBe(200); // was 502: timed out in team A's queue
    expect(other.headers['cache-status']).not.toContain('collapsed');
    expect(tookMs).toBeLessThan(1_000);
    await Promise.all([...hanging, queued]);
  });
});
