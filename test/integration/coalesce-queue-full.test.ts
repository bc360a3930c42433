import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdWriteLock } from '../helpers/lock.js';
import { startStack, type Stack } from '../helpers/stack.js';

/**
 * A request that joined another team's call before that call reached the provider queue (its
 * leader still writing its reservation) must not be answered that team's queue refusal: the
 * leader's team had its queue full, the joined team had slots and queue places of its own.
 */
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    config: {
      upstream: { maxConcurrency: 4, queueSize: 1, deadlineMs: 1_500 },
      keys: { defaults: { rate: null, credits: null } },
      // The webhook delivery's poll, meeting the held lock, would shut tollgate.db's write gate.
      notifications: { delivery: { pollIntervalMs: 3_600_000 } },
    },
  });
});
afterAll(async () => s.close());

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await pause(10);
  expect(cond()).toBe(true);
}

describe("another team's call refused for its team's full queue", () => {
  it('does not refuse the request of another team that joined it before it was queued', async () => {
    const a = s.newKey({ name: 'a', team: 'team-a' });
    const b = s.newKey({ name: 'b', team: 'team-b' });
    // Each key once first: its first request verifies its secret, which takes a while.
    for (const k of [a, b]) expect((await s.get('/v1/company?org_id=900', { key: k.secret })).status).toBe(200);
    s.sim.inject({ fault: { kind: 'hang' }, match: 'org_id=70' });
    // Team A holds its two slots and fills its queue of one.
    const hanging = [700, 701, 702].map((id) => s.get(`/v1/company?org_id=${id}&strategy=fetch`, { key: a.secret }));
    await until(() => s.app.upstream.inFlight() === 2 && s.app.upstream.queueDepth() === 1);
    // Team A's lookup of org 800 waits to write its reservation; team B's identical one joins it meanwhile.
    const lock = await holdWriteLock(join(s.dataDir, 'tollgate.db'));
    const leader = s.get('/v1/company?org_id=800&strategy=fetch', { key: a.secret });
    await pause(100);
    const other = s.get('/v1/company?org_id=800&strategy=fetch', { key: b.secret });
    await pause(100);
    await lock.release();
    const [l, o] = await Promise.all([leader, other]);
    expect(l.status).toBe(502); // team A's own queue is full
    expect(o.status, JSON.stringify([o.json, o.headers])).toBe(200); // was 502 "provider queue full", collapsed
    await Promise.all(hanging);
  });
});
