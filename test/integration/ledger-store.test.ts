import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { FLUSH_CHUNK, LedgerStore } from '../../src/store/sqlite/ledger.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import type { LedgerRow } from '../../src/domain/ledger.js';

let dir: string;
let db: DB;
let budgets: BudgetStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-ledger-'));
  db = openDatabase(join(dir, 'tollgate.db'), MAIN_MIGRATIONS);
  budgets = new BudgetStore(db);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 0, 1);

/** A zero-credit row whose every column differs from its neighbours', nullable ones null by turns. */
function hitRow(i: number): LedgerRow {
  return {
    requestId: `req_${String(i).padStart(6, '0')}`,
    ts: T0 + i,
    keyId: `key_${i % 7}`,
    endpoint: ['profile', 'company', 'profile_posts', 'company_posts', 'passthrough'][i % 5]!,
    identity: i % 3 === 0 ? null : `company:acme-${i}`,
    cache: i % 4 === 0 ? null : ['HIT', 'STALE', 'BYPASS'][i % 3]!,
    status: i % 9 === 0 ? 403 : 200,
    code: i % 9 === 0 ? 'ENDPOINT_NOT_ALLOWED' : null,
    credits: 0,
    creditsSaved: i % 6,
    upstreamMs: i % 2 === 0 ? null : i + 0.25,
    totalMs: i % 5 === 0 ? null : i / 8,
    upstreamRequestId: i % 2 === 0 ? null : `up_${i}`,
  };
}

interface Stored {
  request_id: string;
  ts: number;
  key_id: string;
  endpoint: string;
  identity: string | null;
  cache: string | null;
  status: number;
  code: string | null;
  credits: number;
  credits_saved: number;
  upstream_ms: number | null;
  total_ms: number | null;
  upstream_request_id: string | null;
  unsettled: number;
}

const asStored = (r: LedgerRow): Stored => ({
  request_id: r.requestId,
  ts: r.ts,
  key_id: r.keyId,
  endpoint: r.endpoint,
  identity: r.identity,
  cache: r.cache,
  status: r.status,
  code: r.code,
  credits: r.credits,
  credits_saved: r.creditsSaved,
  upstream_ms: r.upstreamMs,
  total_ms: r.totalMs,
  upstream_request_id: r.upstreamRequestId,
  unsettled: r.unsettled ? 1 : 0,
});

const stored = (): Stored[] => db.prepare<[], Stored>('SELECT * FROM ledger ORDER BY request_id').all();

describe('LedgerStore batched writes', () => {
  it('a flush of 1,234 queued rows (not a multiple of the chunk) writes each unique row once, every field intact', () => {
    expect(1_234 % FLUSH_CHUNK).not.toBe(0);
    // Timer and size trigger out of reach: one flush takes all 1,234.
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000, batchMax: 10_000 });
    const rows = Array.from({ length: 1_234 }, (_, i) => hitRow(i));
    // Duplicates within one chunk, across chunks, and between a chunk and the single-row remainder:
    // the first row with an id wins, as it did with one INSERT OR IGNORE per row.
    rows[20] = { ...hitRow(20), requestId: rows[10]!.requestId };
    rows[130] = { ...hitRow(130), requestId: rows[3]!.requestId };
    rows[1_230] = { ...hitRow(1_230), requestId: rows[5]!.requestId };
    for (const r of rows) ledger.record(r);
    expect(stored()).toEqual([]);

    ledger.flush();
    const expected = rows.filter((r, i) => ![20, 130, 1_230].includes(i)).map(asStored);
    expected.sort((a, b) => (a.request_id < b.request_id ? -1 : 1));
    const got = stored();
    expect(got).toHaveLength(1_231);
    expect(got).toEqual(expected);
    // STRICT columns keep their types: an integral REAL does not come back as something else.
    expect(got.find((r) => r.request_id === 'req_000008')!.total_ms).toBe(1);

    // A later flush re-presenting stored ids adds only the new ones.
    ledger.record(hitRow(0));
    ledger.record(hitRow(5_000));
    ledger.flush();
    expect(stored()).toHaveLength(1_232);
    expect(stored().find((r) => r.request_id === 'req_000000')).toEqual(asStored(rows[0]!));
  });

  it('flushes by itself at batchMax rows, whole chunks and remainder alike', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000, batchMax: 2 * FLUSH_CHUNK + 3 });
    for (let i = 0; i < 2 * FLUSH_CHUNK + 2; i++) ledger.record(hitRow(i));
    expect(stored()).toHaveLength(0);
    ledger.record(hitRow(9_999));
    expect(stored()).toHaveLength(2 * FLUSH_CHUNK + 3);
  });

  it('a charged row is written at once with its charge, once per request id', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000, batchMax: 10_000 });
    const charged: LedgerRow = { ...hitRow(1), cache: 'MISS', credits: 3, upstreamMs: 120.5, upstreamRequestId: 'up_x' };
    ledger.record(charged);
    ledger.record(charged);
    expect(stored()).toEqual([asStored(charged)]);
    expect(budgets.used(charged.keyId, 'day', charged.ts)).toBe(3);
    expect(budgets.used(PROVIDER_SCOPE, 'month', charged.ts)).toBe(3);
    // What a fresh process reads back from credit_usage agrees.
    expect(new BudgetStore(db).used(charged.keyId, 'day', charged.ts)).toBe(3);

    // A queued hit row with the same id as a charged one never replaces it.
    ledger.record({ ...charged, credits: 0, cache: 'HIT' });
    ledger.flush();
    expect(stored()).toEqual([asStored(charged)]);
  });

  it('usage() counts queued rows', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000, batchMax: 10_000 });
    for (let i = 0; i < 75; i++) ledger.record(hitRow(i));
    const total = ledger.usage(0, T0 + 1_000_000, 'endpoint').reduce((a, r) => a + r.requests, 0);
    expect(total).toBe(75);
  });
});
