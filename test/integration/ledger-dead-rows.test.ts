import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { LedgerRow } from '../../src/domain/ledger.js';

/**
 * A ledger row that fails for a reason of its own (not a lock, not a full disk) must neither
 * block the rows behind it nor lose its charge (found in review). A trigger stands in for such
 * a row: SQLite refuses it with SQLITE_CONSTRAINT_TRIGGER, which says nothing about the database.
 */
const T0 = Date.UTC(2026, 4, 5, 10, 0, 0);
let dir: string;
let db: DB;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-dead-rows-'));
  db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  db.exec(`CREATE TRIGGER refuse_bad BEFORE INSERT ON ledger WHEN NEW.request_id LIKE 'req_bad%' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const row = (id: string, credits: number): LedgerRow => ({
  requestId: id,
  ts: T0,
  keyId: 'key_a',
  endpoint: 'profile',
  identity: 'in/x',
  cache: credits > 0 ? 'MISS' : 'HIT',
  status: 200,
  code: null,
  credits,
  creditsSaved: 0,
  upstreamMs: null,
  totalMs: null,
  upstreamRequestId: null,
});

describe('ledger rows that cannot be written for a reason of their own', () => {
  it('a charged one still counts in the budgets, and the next start charges the provider’s figure, not the estimate', () => {
    const budgets = new BudgetStore(db);
    const errors: string[] = [];
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000, onWriteError: (e) => errors.push(e.message) });
    budgets.reserve({ requestId: 'req_bad_1', ts: T0, keyId: 'key_a', endpoint: 'profile', identity: 'in/x', estimate: 1 }, ['key_a', PROVIDER_SCOPE]);
    ledger.record(row('req_bad_1', 7));
    ledger.record(row('req_ok_1', 3)); // not blocked behind it
    ledger.flush();
    expect(ledger.backlog().retrying).toBe(0);
    expect(budgets.used('key_a', 'month', T0)).toBe(10);
    expect(budgets.reserved('key_a')).toBe(0);
    expect(errors.join('\n')).toMatch(/req_bad_1 cannot be written/);

    db.exec('DROP TRIGGER refuse_bad');
    const next = new LedgerStore(db, new BudgetStore(db));
    expect(next.recoverAbandoned()).toEqual({ requests: 1, credits: 7 });
    expect(new BudgetStore(db).used('key_a', 'month', T0)).toBe(10);
  });

  it('counts of zero-credit requests refused for a reason of their own are dropped and counted, not retried for ever; later counts are written', () => {
    db.exec(`CREATE TRIGGER refuse_counts BEFORE INSERT ON usage_minute WHEN NEW.key_id = 'key_bad' BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END`);
    const errors: string[] = [];
    const ledger = new LedgerStore(db, new BudgetStore(db), { flushEveryMs: 3_600_000, onWriteError: (e) => errors.push(e.message) });
    ledger.record({ ...row('req_a', 0), keyId: 'key_bad' });
    ledger.record({ ...row('req_b', 0), keyId: 'key_bad' });
    ledger.flush();
    expect(ledger.backlog()).toEqual({ pending: 0, retrying: 0, dropped: 2 });
    expect(errors.join('\n')).toMatch(/counts of 2 zero-credit requests cannot be written/);
    ledger.record(row('req_c', 0));
    ledger.flush();
    expect(db.prepare('SELECT key_id, requests FROM usage_minute').all()).toEqual([{ key_id: 'key_a', requests: 1 }]);
  });

  it('recovery charges every reservation it can, even when one cannot be written', () => {
    const budgets = new BudgetStore(db);
    for (const id of ['req_a', 'req_bad_x', 'req_c']) budgets.reserve({ requestId: id, ts: T0, keyId: 'key_a', endpoint: 'profile', identity: null, estimate: 3 }, ['key_a']);
    const next = new LedgerStore(db, new BudgetStore(db));
    expect(() => next.recoverAbandoned()).toThrow(/test trigger/);
    expect(db.prepare('SELECT request_id FROM ledger ORDER BY request_id').pluck().all()).toEqual(['req_a', 'req_c']);
    expect(db.prepare('SELECT request_id FROM reservations').pluck().all()).toEqual(['req_bad_x']);
  });
});
