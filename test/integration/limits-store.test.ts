/**
 * LimitStore against a real tollgate.db and a fake clock: windows roll over in place, durable
 * (hour and longer) windows are written behind and read back, the sweep forgets ended windows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { RatePolicy } from '../../src/domain/rate-limit.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LimitStore } from '../../src/store/sqlite/limits.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';

const HOUR = 3_600_000;
const hour: RatePolicy = { limit: 100, windowMs: HOUR, name: 'hour', enforced: true };
const tenS: RatePolicy = { limit: 5, windowMs: 10_000, name: '10s', enforced: true };
const T0 = Date.UTC(2026, 0, 1, 10); // on an hour boundary

let dir: string;
const dbs: DB[] = [];
const stores: LimitStore[] = [];
beforeEach(() => void (dir = mkdtempSync(join(tmpdir(), 'tollgate-limits-'))));
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const db of dbs.splice(0)) db.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(clock: FakeClock): { db: DB; store: LimitStore } {
  const db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  const store = new LimitStore(db, clock, 60_000);
  dbs.push(db);
  stores.push(store);
  return { db, store };
}
const rows = (db: DB) => db.prepare('SELECT scope, window_ms, start, count FROM rate_windows ORDER BY scope, window_ms').all();
const countOf = (s: LimitStore, scope: string, p: RatePolicy, now: number) => s.counts(scope, [p], now, true)[0]!.count;

describe('LimitStore', () => {
  it('counts per scope and window length; a new window starts from zero, after the last one or before it', () => {
    const clock = new FakeClock(T0);
    const { store } = open(clock);
    for (let i = 0; i < 3; i++) store.add('k1', [hour, tenS], T0 + 1_000, true);
    store.add('k2', [hour], T0 + 1_000, true);
    expect(store.counts('k1', [hour, tenS], T0 + 2_000, true).map((c) => c.count)).toEqual([3, 3]);
    expect(countOf(store, 'k2', hour, T0 + 2_000)).toBe(1);
    // 10 s later: a new 10 s window, the same hour.
    expect(store.add('k1', [hour, tenS], T0 + 11_000, true).map((c) => c.count)).toEqual([4, 1]);
    // The clock steps back into the previous 10 s window: the window from the future is not
    // the current one, so counting starts afresh (as in Redis, keyed by window start).
    expect(countOf(store, 'k1', tenS, T0 + 9_000)).toBe(0);
    expect(store.add('k1', [tenS], T0 + 9_000, true).map((c) => c.count)).toEqual([1]);
  });

  it('writes hour windows behind, rewrites a window that rolled over, and a new store reads them back', () => {
    const clock = new FakeClock(T0);
    const a = open(clock);
    a.store.add('k1', [hour, tenS], T0 + 5, true);
    a.store.add('k1', [hour, tenS], T0 + 6, true);
    a.store.add('ip:10.0.0.1', [hour], T0 + 7, false); // not durable: never written
    expect(rows(a.db)).toEqual([]); // written behind, not per request
    a.store.flush();
    expect(rows(a.db)).toEqual([{ scope: 'k1', window_ms: HOUR, start: T0, count: 2 }]);
    a.store.add('k1', [hour], T0 + HOUR + 1, true); // the next hour: the same window, reset
    a.store.flush();
    expect(rows(a.db)).toEqual([{ scope: 'k1', window_ms: HOUR, start: T0 + HOUR, count: 1 }]);
    const b = open(clock);
    expect(countOf(b.store, 'k1', hour, T0 + HOUR + 2)).toBe(1);
    expect(countOf(b.store, 'k1', tenS, T0 + HOUR + 2)).toBe(0); // short windows live in memory only
  });

  it('the sweep forgets ended windows (read from the database again next time) and keeps live ones', () => {
    const clock = new FakeClock(T0);
    const { db, store } = open(clock);
    store.add('k1', [hour], T0 + 5, true);
    store.add('k2', [hour], T0 + HOUR + 5, true);
    store.flush();
    // Behind the store's back, so that a read from the database shows.
    db.prepare('UPDATE rate_windows SET count = 40').run();
    store.sweep(T0 + HOUR + 10); // k1's hour has ended, k2's has not
    expect(countOf(store, 'k1', hour, T0 + 10)).toBe(40); // forgotten, so read back
    expect(countOf(store, 'k2', hour, T0 + HOUR + 10)).toBe(1); // still held
  });
});
