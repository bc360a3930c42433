/**
 * The maintenance pass in bounded steps (issue 16, item 1): at a million entries the hit-count
 * flush and eviction held the event loop 100–250 ms as one transaction each. Here the steps are
 * counted, never timed: each writes at most `maintenanceStep.rows` hit counts or one eviction
 * batch, the server's port gives the event loop a turn between two, and what the pass writes is
 * the same as in one go.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CACHE_MIGRATIONS, CacheStore } from '../../src/store/sqlite/cache.js';
import { ServingCache } from '../../src/store/sqlite/serving-cache.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import type { NewEntry } from '../../src/domain/cache-entry.js';

let dir: string;
const open: DB[] = [];
beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'tollgate-cache-steps-'))));
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

const ROWS_PER_STEP = 100;
const N = 2_500;

function store(): { db: DB; cache: CacheStore } {
  const db = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
  open.push(db);
  // No time budget: the step bound is the row count alone, so the counts below are exact.
  return { db, cache: new CacheStore(db, { memoryMaxBytes: 0, maintenanceStep: { rows: ROWS_PER_STEP, budgetMs: Infinity } }) };
}

const entry = (id: number): NewEntry => ({
  key: `profile|profile:person.id:${id}|experience_filter=default`,
  endpoint: 'profile',
  identity: `profile:person.id:${id}`,
  status: 200,
  data: JSON.stringify({ person_id: String(id), filler: 'x'.repeat(200) }),
  meta: null,
  errorCode: null,
  errorMessage: null,
  storedAt: 1_000 + id,
  freshAsOf: 1_000 + id,
  credits: 3,
});

/** N entries, each hit once (entry i at time 10,000 + i), the counts not yet written. */
function filledAndHit(): { db: DB; cache: CacheStore } {
  const s = store();
  s.db.transaction(() => {
    for (let i = 0; i < N; i++) s.cache.put(entry(i));
  })();
  for (let i = 0; i < N; i++) s.cache.recordHit(s.cache.get(entry(i).key)!, 10_000 + i);
  return s;
}

const hitsWritten = (db: DB) => db.prepare<[], { n: number; hits: number }>('SELECT COUNT(*) AS n, SUM(hits) AS hits FROM access WHERE hits > 0').get()!;
const noneDead = () => 0;

describe('the maintenance pass in bounded steps', () => {
  it('writes N hit counts in N / rows-per-step transactions, then evicts in batches, the same result as one flush', () => {
    const { db, cache } = filledAndHit();
    const sizes: number[] = [];
    let steps = 0;
    const before = cache.totalBytes();
    // Each step is one transaction: count the rows each one wrote.
    let last = 0;
    for (const removed of cache.maintainSteps(before / 2, noneDead)) {
      steps++;
      const now = hitsWritten(db).n;
      sizes.push(now - last);
      last = now;
      expect(removed).toBeLessThanOrEqual(500);
    }
    const flushSteps = Math.ceil(N / ROWS_PER_STEP);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(ROWS_PER_STEP);
    expect(sizes.slice(0, flushSteps).every((n) => n === ROWS_PER_STEP)).toBe(true);
    // Eviction down to 90% of half the bytes: more than one batch of 500, each a step of its own.
    expect(steps).toBeGreaterThan(flushSteps + 2);
    expect(cache.totalBytes()).toBeLessThanOrEqual((before / 2) * 0.9);
    const counters = db.prepare<[], { name: string; value: number }>("SELECT name, value FROM counters WHERE name = 'hits'").get()!;
    expect(counters.value).toBe(N);
  });

  it("under a time budget, a drain's setup is a step of its own, and the pass still writes every count exactly", () => {
    const { db, cache } = filledAndHit();
    // A budget no step reaches: the rows per step stay at the bound, so the steps can be counted.
    const step = () => cache.flushStep(ROWS_PER_STEP, 1e9);
    expect(step()).toBe(true); // the drain begins: nothing written yet
    expect(hitsWritten(db)).toEqual({ n: 0, hits: null });
    expect(step()).toBe(true);
    expect(hitsWritten(db).n).toBe(ROWS_PER_STEP);
    let steps = 2;
    while (step()) steps++;
    steps++; // the last, which wrote the drain's last rows and said none remain
    expect(steps).toBe(1 + Math.ceil(N / ROWS_PER_STEP));
    expect(hitsWritten(db)).toEqual({ n: N, hits: N });
    expect(db.prepare<[], number>("SELECT value FROM counters WHERE name = 'hits'").pluck().get()).toBe(N);
  });

  it('keeps hits counted during a drain for the next one, and drops the count of an entry deleted mid-drain', () => {
    const { db, cache } = filledAndHit();
    expect(cache.flushStep()).toBe(true); // rows 0–99 written, a drain under way
    cache.recordHit(cache.get(entry(0).key)!, 20_000); // counted again: waits for the next drain
    const doomed = db.prepare<[string], number>('SELECT rowid FROM entries WHERE key = ?').pluck().get(entry(N - 1).key)!;
    cache.purge({ identity: entry(N - 1).identity }); // deleted before its count was written
    cache.flush();
    const hitsOf = (id: number) => db.prepare<[number], number>('SELECT hits FROM access WHERE id = ?').pluck().get(id);
    expect(hitsOf(db.prepare<[string], number>('SELECT rowid FROM entries WHERE key = ?').pluck().get(entry(0).key)!)).toBe(2);
    expect(hitsOf(doomed)).toBeUndefined();
    expect(hitsWritten(db)).toEqual({ n: N - 1, hits: N });
    // The totals count every hit, that of the deleted entry too.
    expect(db.prepare<[], number>("SELECT value FROM counters WHERE name = 'hits'").pluck().get()).toBe(N + 1);
  });

  it("the server's port gives the event loop a turn between two steps", async () => {
    const { db, cache } = filledAndHit();
    const port = new ServingCache(cache);
    let turns = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const before = cache.totalBytes();
    const removed = await port.maintain(before / 2, noneDead);
    running = false;
    expect(removed).toBeGreaterThan(0);
    expect(hitsWritten(db).hits).toBeGreaterThan(0);
    // One turn at least per flush chunk: the loop ran between every two.
    expect(turns).toBeGreaterThanOrEqual(Math.ceil(N / ROWS_PER_STEP));
  });

  it('stops between two steps when the database closes (shutdown), without an error', async () => {
    const { db, cache } = filledAndHit();
    const port = new ServingCache(cache);
    const pass = port.maintain(1e12, noneDead);
    await new Promise((r) => setImmediate(r));
    db.close();
    await expect(pass).resolves.toBe(0);
  });

  it('a failed step keeps its counts for the next flush', () => {
    const { db, cache } = filledAndHit();
    const other = openDatabase(join(dir, 'cache.db'), CACHE_MIGRATIONS);
    open.push(other);
    db.pragma('busy_timeout = 0');
    other.prepare('BEGIN IMMEDIATE').run();
    expect(() => cache.flushStep()).toThrow(/locked|busy/i);
    other.prepare('COMMIT').run();
    cache.flush();
    expect(hitsWritten(db)).toEqual({ n: N, hits: N });
    expect(db.prepare<[], number>("SELECT value FROM counters WHERE name = 'hits'").pluck().get()).toBe(N);
  });
});
