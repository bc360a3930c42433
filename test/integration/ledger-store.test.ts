import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { minuteOf } from '../../src/store/usage-tally.js';
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

/** usage_minute as stored, in key order. */
const counted = () => db.prepare('SELECT * FROM usage_minute ORDER BY minute, key_id, endpoint, cache, status, code').all();

/** What usage_minute must hold for `rows`: one group per minute, key, endpoint and outcome. */
function expectedGroups(rows: LedgerRow[]) {
  const groups = new Map<string, Record<string, string | number>>();
  for (const r of rows) {
    const g = { minute: minuteOf(r.ts), key_id: r.keyId, endpoint: r.endpoint, cache: r.cache ?? '', status: r.status, code: r.code ?? '' };
    const k = JSON.stringify(g);
    const held = groups.get(k) ?? { ...g, ts: r.ts, requests: 0, cache_hits: 0, credits_saved: 0 };
    held.ts = Math.min(held.ts as number, r.ts);
    (held.requests as number)++;
    if (r.cache === 'HIT' || r.cache === 'STALE') (held.cache_hits as number)++;
    held.credits_saved = (held.credits_saved as number) + r.creditsSaved;
    groups.set(k, held);
  }
  const key = (g: Record<string, string | number>) => [g.minute, g.key_id, g.endpoint, g.cache, g.status, g.code] as const;
  return [...groups.values()].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return 0;
  });
}

describe('LedgerStore: zero-credit requests counted, charged rows written', () => {
  it('1,234 zero-credit requests write no ledger row: one usage_minute row per minute, key, endpoint and outcome, summed exactly', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
    // Spread over ~3 minutes (T0 + i * 150 ms), so groups span flushes and minutes.
    const rows = Array.from({ length: 1_234 }, (_, i) => ({ ...hitRow(i), ts: T0 + i * 150 }));
    for (const r of rows.slice(0, 600)) ledger.record(r);
    expect(ledger.backlog()).toEqual({ pending: 600, retrying: 0, dropped: 0 });
    expect(counted()).toEqual([]);
    ledger.flush();
    expect(ledger.backlog()).toEqual({ pending: 0, retrying: 0, dropped: 0 });
    for (const r of rows.slice(600)) ledger.record(r);
    ledger.flush();

    expect(stored()).toEqual([]);
    const groups = counted();
    expect(groups).toEqual(expectedGroups(rows));
    // Far fewer rows than requests: what makes a hit cost no disk write of its own.
    expect(groups.length).toBeLessThan(rows.length / 2);
    // The daily totals got the same counts in the same transactions.
    expect(db.prepare('SELECT SUM(requests) AS r, SUM(cache_hits) AS h, SUM(credits) AS c, SUM(credits_saved) AS s FROM usage_daily').get()).toEqual({
      r: 1_234,
      h: rows.filter((r) => r.cache === 'HIT' || r.cache === 'STALE').length,
      c: 0,
      s: rows.reduce((n, r) => n + r.creditsSaved, 0),
    });
  });

  it('a charged row is written at once with its charge, once per request id', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
    const charged: LedgerRow = { ...hitRow(1), cache: 'MISS', credits: 3, upstreamMs: 120.5, upstreamRequestId: 'up_x' };
    ledger.record(charged);
    ledger.record(charged);
    expect(stored()).toEqual([asStored(charged)]);
    expect(budgets.used(charged.keyId, 'day', charged.ts)).toBe(3);
    expect(budgets.used(PROVIDER_SCOPE, 'month', charged.ts)).toBe(3);
    // What a fresh process reads back from credit_usage agrees.
    expect(new BudgetStore(db).used(charged.keyId, 'day', charged.ts)).toBe(3);

    // A zero-credit record with the same id as a charged one never touches its row or charge.
    ledger.record({ ...charged, credits: 0, cache: 'HIT' });
    ledger.flush();
    expect(stored()).toEqual([asStored(charged)]);
    expect(budgets.used(charged.keyId, 'day', charged.ts)).toBe(3);
  });

  it('a zero-credit request whose request held a reservation is written as a row, with the end of its reservation', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
    const r: LedgerRow = { ...hitRow(2), cache: 'MISS', status: 502, code: 'UPSTREAM_ERROR' };
    budgets.reserve({ requestId: r.requestId, ts: r.ts, keyId: r.keyId, endpoint: r.endpoint, identity: null, estimate: 2 }, [r.keyId, PROVIDER_SCOPE]);
    ledger.record(r);
    expect(stored()).toEqual([asStored(r)]);
    expect(counted()).toEqual([]);
    expect(budgets.reserved(r.keyId)).toBe(0);
  });

  it('usage() counts requests not yet flushed', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
    for (let i = 0; i < 75; i++) ledger.record(hitRow(i));
    const total = ledger.usage(0, T0 + 1_000_000, 'endpoint').reduce((a, r) => a + r.requests, 0);
    expect(total).toBe(75);
  });

  it('counts survive a write refused by the database (kept, written by the next flush)', () => {
    const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
    for (let i = 0; i < 40; i++) ledger.record(hitRow(i));
    const other = openDatabase(db.name, MAIN_MIGRATIONS);
    other.exec('BEGIN IMMEDIATE');
    db.pragma('busy_timeout = 0');
    expect(() => ledger.flush()).toThrow(/SQLITE_BUSY|locked/);
    expect(ledger.backlog().pending).toBe(40);
    for (let i = 40; i < 50; i++) ledger.record(hitRow(i));
    other.exec('ROLLBACK');
    other.close();
    ledger.flush();
    expect(db.prepare('SELECT SUM(requests) FROM usage_minute').pluck().get()).toBe(50);
    expect(counted()).toEqual(expectedGroups(Array.from({ length: 50 }, (_, i) => hitRow(i))));
  });
});
