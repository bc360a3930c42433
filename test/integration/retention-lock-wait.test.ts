import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/domain/clock.js';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LedgerRetention } from '../../src/store/sqlite/ledger-retention.js';
import { DAY_MS } from '../../src/store/sqlite/ledger-rows.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { NoWaitWrites } from '../../src/store/sqlite/no-wait.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { SERVER_BUSY_TIMEOUT_MS } from '../../src/store/sqlite/server-writes.js';
import { WriteGate } from '../../src/store/write-gate.js';
import { holdWriteLock } from '../helpers/lock.js';

/*
 * The server's ledger retention pass never waits for tollgate.db's lock on the event loop
 * (issue #16, item 1): its batches waited inside SQLite for up to the 250 ms busy timeout,
 * every request with them, while the Checkpointer's truncation (or another process) held it.
 */
const T0 = Date.UTC(2026, 9, 1);
const ROWS = 30;
let dir: string;
let db: DB;
let gate: WriteGate;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-retention-lock-'));
  db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS, { busyTimeoutMs: SERVER_BUSY_TIMEOUT_MS.main });
  db.prepare("INSERT INTO api_keys (id, name, owner, prefix, secret_hash, created_at, updated_at) VALUES ('key_a', 'a', 'growth', 'tg_x', 'hash_a', 0, 0)").run();
  const ledger = new LedgerStore(db, new BudgetStore(db), { flushEveryMs: 3_600_000 });
  for (let n = 0; n < ROWS; n++) {
    ledger.record({
      requestId: `req_${n}`,
      ts: T0 + n * 1_000,
      keyId: 'key_a',
      endpoint: 'profile',
      identity: null,
      cache: 'MISS',
      status: 200,
      code: null,
      credits: 1,
      creditsSaved: 0,
      upstreamMs: null,
      totalMs: null,
      upstreamRequestId: null,
      unsettled: false,
    });
  }
  ledger.flush();
  gate = new WriteGate('tollgate.db', { clock: new FakeClock(T0) });
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const rawRows = () => db.prepare('SELECT COUNT(*) FROM ledger').pluck().get() as number;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a ledger retention pass while another process holds tollgate.db', () => {
  it('waits on a timer, not inside SQLite, then deletes every row past the retention (was SQLITE_BUSY after 250 ms)', async () => {
    expect(rawRows()).toBe(ROWS);
    const retention = new LedgerRetention(db, { retentionDays: 10, gate, noWait: new NoWaitWrites(db, gate), batchRows: 7 });
    const lock = await holdWriteLock(join(dir, 'tollgate.db'));
    let releasing = false;
    const pass = retention.prune(T0 + 30 * DAY_MS).then((deleted) => ({ deleted, releasing }));
    try {
      // Before, the pass's first transaction waited inside SQLite, the event loop with it, so this
      // timer could not fire, nor the lock be released, until the 250 ms were out: it failed.
      await sleep(80);
      expect(rawRows()).toBe(ROWS);
    } finally {
      releasing = true;
      await lock.release();
    }
    await expect(pass).resolves.toEqual({ deleted: ROWS, releasing: true });
    expect(rawRows()).toBe(0);
    expect(gate.state()).toMatchObject({ ok: true, failuresTotal: 0 });
  });
});
