import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { companyUrl, profileUrl, type Reply, type Stack, startStack } from '../helpers/stack.js';

/**
 * Issue #16 item 1: a miss's own writes to tollgate.db (its reservation, its charged ledger row)
 * never wait for another connection's lock on the event loop. The lock is held here by a second
 * connection in this process (the gateway runs in it too), as the Checkpointer's worker holds
 * it while it truncates the WAL: had the gateway's write waited in SQLite's busy handler, the
 * timer that commits the other connection's transaction could not run, and neither could the
 * cache hit asked meanwhile. The assertions are on order (which answer came before the lock
 * was released), not on durations.
 */
const ALL = Number.MAX_SAFE_INTEGER;
const clock = new FakeClock(Date.UTC(2026, 2, 11, 9, 0, 0));
const HIT = `/v1/company?${companyUrl('no-wait-warm')}`;
let s: Stack;
let other: Database.Database;
let otherCache: Database.Database;

beforeAll(async () => {
  s = await startStack({ clock });
  other = new Database(join(s.dataDir, 'tollgate.db'), { timeout: 0 });
  otherCache = new Database(join(s.dataDir, 'cache.db'), { timeout: 0 });
  expect((await s.get(HIT)).status).toBe(200);
  expect((await s.get(HIT)).headers['x-cache-status']).toBe('HIT');
});
// Nothing an earlier test left (a lock it failed before releasing, a write gate shut for a
// backoff on this clock) is in this one's way.
beforeEach(() => {
  for (const db of [other, otherCache]) if (db.inTransaction) db.exec('COMMIT');
  clock.advance(10_000);
});
afterAll(async () => {
  other.close();
  otherCache.close();
  await s.close();
});

function charged(): { requests: number; credits: number } {
  const rows = s.app.costs.ledger.usage(0, ALL, 'key');
  return { requests: rows.reduce((a, r) => a + r.requests, 0), credits: rows.reduce((a, r) => a + r.credits, 0) };
}

/** Resolves on the first turn where `cond` holds; bounded, so a gateway that never gets there fails the test. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 4_000; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/**
 * Resolves once `cond` holds, looking every `everyMs` on a timer: for what waits on another
 * process (the simulator's latency), which a few thousand event-loop turns may not outlast.
 * Bounded too, so a provider that never charges fails the test with its name.
 */
async function untilPolled(cond: () => boolean, what: string, everyMs: number, limitMs = 10_000): Promise<void> {
  const deadline = performance.now() + limitMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`never happened within ${limitMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Holds tollgate.db's write lock from the other connection until the returned release(), which says when. */
function hold(db = other): () => number {
  if (db.inTransaction) db.exec('COMMIT');
  db.exec('BEGIN IMMEDIATE');
  return () => {
    if (db.inTransaction) db.exec('COMMIT');
    return performance.now();
  };
}

/** Holds tollgate.db's write lock from the other connection; commits after `ms` on a timer of this event loop. */
function holdFor(ms: number, db = other): Promise<number> {
  const release = hold(db);
  return new Promise((resolve) => setTimeout(() => resolve(release()), ms));
}

/** `path` asked now; the time its answer came with it. */
function timed(path: string): Promise<{ r: Reply; at: number }> {
  return s.get(path).then((r) => ({ r, at: performance.now() }));
}

describe('tollgate.db write lock held by another connection while a miss writes', () => {
  it("the reservation waits off the event loop: a hit is answered meanwhile, the miss after the lock's release", async () => {
    const before = charged();
    const chargedBefore = s.sim.creditsCharged();
    const release = hold();
    const miss = timed(`/v1/profile?${profileUrl('no-wait-reservation')}`);
    // The miss holds its reservation in memory while its write waits for the lock.
    await until(() => s.app.costs.budgets.inFlight() > 0, 'the reservation is waiting');
    // Released once the hit is answered, not after a fixed time that a loaded machine's hit outlasted.
    const hit = await timed(HIT);
    const releasedAt = release();
    const { r, at } = await miss;

    expect(hit.r.headers['x-cache-status']).toBe('HIT');
    expect(hit.at).toBeLessThan(releasedAt);
    expect(at).toBeGreaterThan(releasedAt);
    expect(r.status).toBe(200);
    expect(r.json.meta.credits_used).toBe(3);
    const after = charged();
    expect(after.requests - before.requests).toBe(2); // the miss and the hit
    expect(after.credits - before.credits).toBe(3);
    expect(s.sim.creditsCharged() - chargedBefore).toBe(3);
    expect(s.app.costs.budgets.inFlight()).toBe(0);
  });

  it('the charged ledger row waits off the event loop, and is written before the answer leaves', async () => {
    const before = charged();
    const calls = s.sim.callCount();
    s.sim.inject({ fault: { kind: 'latency', ms: 20 }, times: 1 });
    const chargedBefore = s.sim.creditsCharged();
    let answered = false;
    const miss = timed(`/v1/profile?${profileUrl('no-wait-row')}&strategy=fetch`).then((m) => ((answered = true), m));
    // The reservation is written and the provider called: the lock is taken before its answer comes back.
    await until(() => s.sim.callCount() > calls, 'the provider call');
    const release = hold();
    // Released on order, not after a fixed time (a hit slower than that on a loaded machine
    // failed the test): once the hit is answered and the provider has charged the miss.
    const hit = await timed(HIT);
    await untilPolled(() => s.sim.creditsCharged() !== chargedBefore, 'the provider charged the miss', 5);
    await new Promise((r) => setTimeout(r, 30)); // the answer reaches the gateway; its row meets the lock
    expect(answered).toBe(false);
    const releasedAt = release();
    const { r, at } = await miss;

    expect(hit.r.headers['x-cache-status']).toBe('HIT');
    expect(hit.at).toBeLessThan(releasedAt);
    // The answer waited for its row, which waited for the lock.
    expect(at).toBeGreaterThan(releasedAt);
    expect(r.status).toBe(200);
    expect(s.app.costs.ledger.backlog().retrying).toBe(0);
    const after = charged();
    expect(after.requests - before.requests).toBe(2); // the miss and the hit
    expect(after.credits - before.credits).toBe(3);
    expect(s.app.costs.budgets.inFlight()).toBe(0);
  });

  it('a lock held past the busy budget still ends in 503 STORAGE_UNAVAILABLE, nothing called or charged, hits served meanwhile', async () => {
    const before = charged();
    const calls = s.sim.callCount();
    const chargedBefore = s.sim.creditsCharged();
    // The main connection's budget is 250 ms (SERVER_BUSY_TIMEOUT_MS.main).
    const released = holdFor(600);
    const miss = timed(`/v1/profile?${profileUrl('no-wait-too-long')}`);
    await until(() => s.app.costs.budgets.inFlight() > 0, 'the reservation is waiting');
    const hit = await timed(HIT);
    const { r, at } = await miss;
    const releasedAt = await released;

    expect(hit.r.headers['x-cache-status']).toBe('HIT');
    expect(hit.at).toBeLessThan(at);
    expect(at).toBeLessThan(releasedAt);
    expect(r.status).toBe(503);
    expect(r.json.error.code).toBe('STORAGE_UNAVAILABLE');
    expect(r.headers['x-request-id']).toBe(r.json.error.request_id);
    expect(s.sim.callCount()).toBe(calls);
    expect(s.sim.creditsCharged()).toBe(chargedBefore);
    // The reservation held in memory while it waited is dropped with its failed write.
    expect(s.app.costs.budgets.inFlight()).toBe(0);

    // Past the gate's backoff the same miss goes through, charged once.
    clock.advance(10_000);
    const again = await s.get(`/v1/profile?${profileUrl('no-wait-too-long')}`);
    expect(again.status).toBe(200);
    const after = charged();
    expect(after.credits - before.credits).toBe(3);
    expect(after.credits - before.credits).toBe(s.sim.creditsCharged() - chargedBefore);
  });

  it('a cache.db write (the provider answer stored) waits off the event loop too, within its 100 ms budget', async () => {
    const path = `/v1/profile?${profileUrl('no-wait-cache-put')}&strategy=fetch`;
    const calls = s.sim.callCount();
    s.sim.inject({ fault: { kind: 'latency', ms: 20 }, times: 1 });
    const chargedBefore = s.sim.creditsCharged();
    const miss = timed(path);
    await until(() => s.sim.callCount() > calls, 'the provider call');
    const release = hold(otherCache);
    // Released on order, well within the 100 ms budget: once the hit is answered and the provider has charged the miss.
    const hit = await timed(HIT);
    await untilPolled(() => s.sim.creditsCharged() !== chargedBefore, 'the provider charged the miss', 2);
    await new Promise((r) => setTimeout(r, 5));
    const releasedAt = release();
    const { r, at } = await miss;

    expect(hit.r.headers['x-cache-status']).toBe('HIT');
    expect(hit.at).toBeLessThan(releasedAt);
    expect(at).toBeGreaterThan(releasedAt);
    expect(r.status).toBe(200);
    expect(r.headers['cache-status']).toMatch(/stored/);
    expect((await s.get(path.replace('&strategy=fetch', ''))).headers['x-cache-status']).toBe('HIT');
  });
});
