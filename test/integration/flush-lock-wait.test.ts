import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import type { RatePolicy } from '../../src/domain/rate-limit.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LimitStore } from '../../src/store/sqlite/limits.js';
import { NoWaitWrites } from '../../src/store/sqlite/no-wait.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { SERVER_BUSY_TIMEOUT_MS } from '../../src/store/sqlite/server-writes.js';
import { WriteGate } from '../../src/store/write-gate.js';
import { holdWriteLock } from '../helpers/lock.js';

/*
 * The server's timed flushes of tollgate.db (rate windows here; last-used times and zero-credit
 * counts go the same way) never wait for its lock on the event loop (issue #16, item 1). They
 * waited inside SQLite for up to the 250 ms busy timeout, every request waiting with them,
 * whenever the Checkpointer's truncation held the lock (~20 ms), and a lock held longer failed
 * the flush and shut the gate: misses refused with 503 for its backoff. Another process holding
 * the lock stands in for the truncation. Real time: the flush timer is real.
 */
const HOUR = 3_600_000;
const hour: RatePolicy = { limit: 100, windowMs: HOUR, name: 'hour', enforced: true };
const T0 = Date.UTC(2026, 10, 29, 4);
const FLUSH_EVERY_MS = 20;

let dir: string;
let db: DB;
let gate: WriteGate;
let store: LimitStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-flush-lock-'));
  db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.main });
  gate = new WriteGate('tollgate.db', { clock: new FakeClock(T0) });
  store = new LimitStore(db, new FakeClock(T0), FLUSH_EVERY_MS, { gate, timed: new NoWaitWrites(db, gate).timed });
});
afterEach(() => {
  store.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const written = () => db.prepare('SELECT count FROM rate_windows WHERE scope = ?').pluck().get('k1') as number | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a timed flush while another process holds tollgate.db', () => {
  it('waits on a timer, not inside SQLite: written once the lock is gone, the gate never shut (was a failed flush and a shut gate)', async () => {
    const lock = await holdWriteLock(join(dir, 'tollgate.db'));
    try {
      for (let i = 0; i < 3; i++) store.add('k1', [hour], T0 + i, true);
      // The flush fires after 20 ms. Before, it waited inside SQLite, the event loop with it, so
      // this timer could not fire nor the lock be released until its 250 ms were out: it failed.
      await sleep(120);
      expect(written()).toBeUndefined();
    } finally {
      await lock.release();
    }
    for (let i = 0; i < 100 && written() === undefined; i++) await sleep(10);
    expect(written()).toBe(3);
    expect(gate.state()).toMatchObject({ ok: true, failuresTotal: 0 });
  });

  it('a lock held past the busy timeout fails the flush as before: the gate shuts, the windows stay dirty and are written later', async () => {
    const lock = await holdWriteLock(join(dir, 'tollgate.db'));
    try {
      store.add('k1', [hour], T0, true);
      for (let i = 0; i < 100 && gate.state().ok; i++) await sleep(10);
      expect(gate.state()).toMatchObject({ ok: false, failuresTotal: 1, code: 'SQLITE_BUSY' });
    } finally {
      await lock.release();
    }
    gate.endBackoff();
    store.flush();
    expect(written()).toBe(1);
    expect(gate.state().ok).toBe(true);
  });
});
