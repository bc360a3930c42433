import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BudgetStore } from '../../src/store/sqlite/budgets.js';
import { openDatabase, type DB } from '../../src/store/sqlite/db.js';
import { LedgerRetention } from '../../src/store/sqlite/ledger-retention.js';
import { DAY_MS } from '../../src/store/sqlite/ledger-rows.js';
import { LedgerStore } from '../../src/store/sqlite/ledger.js';
import { MAIN_MIGRATIONS } from '../../src/store/sqlite/schema.js';
import { queryUsage } from '../../src/store/sqlite/usage-report.js';
import { PROVIDER_SCOPE } from '../../src/domain/credits.js';
import { type LedgerRow, UsageRangePruned, type UsageGroup, type UsageRow } from '../../src/domain/ledger.js';

const T0 = Date.UTC(2026, 2, 1);
const DAYS = 6;
const GROUPS: UsageGroup[] = ['key', 'team', 'day', 'endpoint'];

/**
 * Every request as stored before rollups: the raw rows, and the counted groups of zero-credit
 * requests (usage_minute, each at its earliest request's time).
 */
const STORED = `SELECT key_id, ts, endpoint, 1 AS requests, COALESCE(cache IN ('HIT', 'STALE'), 0) AS cache_hits, credits, credits_saved, credits * unsettled AS unsettled_credits FROM ledger
  UNION ALL SELECT key_id, ts, endpoint, requests, cache_hits, 0, credits_saved, 0 FROM usage_minute`;

/** The report as it was before rollups: one GROUP BY over everything stored. */
function naive(db: DB, from: number, to: number, by: UsageGroup): UsageRow[] {
  const g = {
    key: { id: 'l.key_id', name: 'COALESCE(k.name, l.key_id)' },
    team: { id: 'k.owner', name: 'k.owner' },
    day: { id: "strftime('%Y-%m-%d', l.ts / 1000, 'unixepoch')", name: "strftime('%Y-%m-%d', l.ts / 1000, 'unixepoch')" },
    endpoint: { id: 'l.endpoint', name: 'l.endpoint' },
  }[by];
  return db
    .prepare<[number, number], UsageRow>(
      `SELECT ${g.id} AS id, ${g.name} AS name, SUM(l.requests) AS requests, SUM(l.cache_hits) AS cache_hits,
         SUM(l.credits) AS credits, SUM(l.credits_saved) AS credits_saved, SUM(l.unsettled_credits) AS unsettled_credits
       FROM (${STORED}) l LEFT JOIN api_keys k ON k.id = l.key_id
       WHERE l.ts >= ? AND l.ts < ? GROUP BY 1 ORDER BY ${by === 'key' ? 'credits DESC, requests DESC, id' : by === 'team' ? 'credits DESC, requests DESC, id NULLS LAST' : 'id'}`,
    )
    .all(from, to);
}

const rollup = (db: DB) => db.prepare('SELECT * FROM usage_daily ORDER BY day, key_id, endpoint').all();
const groupByRaw = (db: DB) =>
  db
    .prepare(
      `SELECT ts / 86400000 AS day, key_id, endpoint, SUM(requests) AS requests, SUM(cache_hits) AS cache_hits, SUM(credits) AS credits,
         SUM(credits_saved) AS credits_saved, SUM(unsettled_credits) AS unsettled_credits
       FROM (${STORED}) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    )
    .all();

/** usage_minute's groups as stored, in key order. */
const countedModel = (db: DB) => db.prepare('SELECT minute, key_id, endpoint, cache, status, ts, requests, cache_hits, credits_saved FROM usage_minute ORDER BY 1, 2, 3, 4, 5').all();

/** What usage_minute must hold for the zero-credit requests among `rows` (fill reserves none of them): the model of UsageTally. */
function expectedCounts(rows: Gen[]) {
  const groups = new Map<string, { minute: number; key_id: string; endpoint: string; cache: string; status: number; ts: number; requests: number; cache_hits: number; credits_saved: number }>();
  for (const g of rows) {
    if (g.credits > 0) continue;
    const r = ledgerRow(g);
    const minute = Math.floor(r.ts / 60_000);
    const k = [minute, r.keyId, r.endpoint, r.cache ?? ''].join('|');
    const held = groups.get(k) ?? { minute, key_id: r.keyId, endpoint: r.endpoint, cache: r.cache ?? '', status: r.status, ts: r.ts, requests: 0, cache_hits: 0, credits_saved: 0 };
    held.ts = Math.min(held.ts, r.ts);
    held.requests++;
    if (r.cache === 'HIT' || r.cache === 'STALE') held.cache_hits++;
    held.credits_saved += r.creditsSaved;
    groups.set(k, held);
  }
  const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
  return [...groups.values()].sort((a, b) => cmp(a.minute, b.minute) || cmp(a.key_id, b.key_id) || cmp(a.endpoint, b.endpoint) || cmp(a.cache, b.cache));
}

const rowArb = fc.record({
  // A small id space: duplicates within a flush, across flushes and with recovered reservations.
  n: fc.integer({ min: 0, max: 120 }),
  ts: fc.integer({ min: 0, max: DAYS * DAY_MS - 1 }),
  key: fc.constantFrom('key_a', 'key_b', 'key_c'),
  endpoint: fc.constantFrom('profile', 'company', 'passthrough'),
  cache: fc.constantFrom(null, 'HIT', 'STALE', 'MISS', 'BYPASS'),
  credits: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 5 })),
  creditsSaved: fc.integer({ min: 0, max: 4 }),
  unsettled: fc.boolean(),
  // Rare, so that groups are counted across several requests and several flushes.
  flushAfter: fc.integer({ min: 0, max: 40 }).map((x) => x === 0),
});
type Gen = typeof rowArb extends fc.Arbitrary<infer T> ? T : never;

const ledgerRow = (g: Gen): LedgerRow => ({
  requestId: `req_${g.n}`,
  ts: T0 + g.ts,
  keyId: g.key,
  endpoint: g.endpoint,
  identity: null,
  cache: g.cache,
  status: 200,
  code: null,
  credits: g.credits,
  creditsSaved: g.creditsSaved,
  upstreamMs: null,
  totalMs: null,
  upstreamRequestId: null,
  unsettled: g.unsettled && g.credits > 0,
});

/** A ledger written the way the gateway writes it: charged rows at once, the rest in flushes, then recovered reservations. */
function fill(db: DB, rows: Gen[], reservations: Gen[]): void {
  const budgets = new BudgetStore(db);
  const ledger = new LedgerStore(db, budgets, { flushEveryMs: 3_600_000 });
  for (const g of rows) {
    ledger.record(ledgerRow(g));
    if (g.flushAfter) ledger.flush();
  }
  ledger.flush();
  // Reservations a dead process left: charged at startup, unless their request id is already in the ledger.
  const inFlight = new BudgetStore(db);
  for (const g of reservations) {
    const r = ledgerRow(g);
    inFlight.reserve({ requestId: r.requestId, ts: r.ts, keyId: r.keyId, endpoint: r.endpoint, identity: null, estimate: g.creditsSaved }, [r.keyId, PROVIDER_SCOPE]);
  }
  new LedgerStore(db, new BudgetStore(db)).recoverAbandoned();
}

const boundary = fc.integer({ min: -DAY_MS, max: (DAYS + 1) * DAY_MS });
const rangeArb = fc.tuple(boundary, boundary, fc.boolean(), fc.boolean()).map(([a, b, snapA, snapB]) => {
  const snap = (x: number, s: boolean) => T0 + (s ? Math.floor(x / DAY_MS) * DAY_MS : x);
  const [from, to] = [snap(a, snapA), snap(b, snapB)].sort((x, y) => x - y);
  return { from: from!, to: to! + 1 };
});

function withDb<T>(fn: (db: DB) => T): T {
  const db = openDatabase(':memory:', MAIN_MIGRATIONS);
  // key_a and key_b of two teams, key_c of none: by team, two named groups and the null one.
  const key = db.prepare("INSERT INTO api_keys (id, name, owner, prefix, secret_hash, created_at, updated_at) VALUES (?, ?, ?, 'tg_x', ?, 0, 0)");
  key.run('key_a', 'a', 'growth', 'hash_a');
  key.run('key_b', 'b', 'data', 'hash_b');
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('daily rollup', () => {
  it('equals a GROUP BY over the raw rows, duplicates and recovered reservations included; reports over any range equal the raw GROUP BY', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { maxLength: 260, size: 'max' }), fc.array(rowArb, { maxLength: 12 }), fc.array(rangeArb, { minLength: 1, maxLength: 4 }), (rows, reservations, ranges) =>
        withDb((db) => {
          fill(db, rows, reservations);
          expect(rollup(db)).toEqual(groupByRaw(db));
          expect(countedModel(db)).toEqual(expectedCounts(rows));
          for (const { from, to } of ranges) for (const by of GROUPS) expect(queryUsage(db, from, to, by)).toEqual(naive(db, from, to, by));
        }),
      ),
      { numRuns: 60, endOnFailure: true },
    );
  });

  it('charged rows are written once per request id; every zero-credit request is counted, none written as a row', () => {
    withDb((db) => {
      const g = (n: number, credits = 0): Gen => ({ n, ts: n * 1000, key: 'key_a', endpoint: 'profile', cache: 'HIT', credits, creditsSaved: 1, unsettled: false, flushAfter: n % 50 === 0 });
      const rows = [g(1000, 3), g(1000, 3), ...Array.from({ length: 120 }, (_, i) => g(i % 110))];
      fill(db, rows, []);
      expect(db.prepare('SELECT COUNT(*) FROM ledger').pluck().get()).toBe(1);
      expect(db.prepare('SELECT SUM(requests) FROM usage_minute').pluck().get()).toBe(120);
      expect(db.prepare('SELECT SUM(requests) FROM usage_daily').pluck().get()).toBe(121);
      expect(rollup(db)).toEqual(groupByRaw(db));
    });
  });

  it('the migration backfills the rollup from a ledger written before it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-rollup-'));
    try {
      const file = join(dir, 'tollgate.db');
      const old = openDatabase(file, MAIN_MIGRATIONS.slice(0, 3));
      const insert = old.prepare('INSERT INTO ledger (request_id, ts, key_id, endpoint, cache, status, credits, credits_saved, unsettled) VALUES (?, ?, ?, ?, ?, 200, ?, ?, ?)');
      for (let i = 0; i < 500; i++) insert.run(`r${i}`, T0 + i * 3_600_000, `key_${i % 3}`, i % 2 ? 'profile' : 'company', i % 4 ? 'HIT' : 'MISS', i % 5, i % 3, i % 7 === 0 ? 1 : 0);
      old.close();
      const db = openDatabase(file, MAIN_MIGRATIONS);
      expect(rollup(db)).toHaveLength(groupByRaw(db).length);
      expect(rollup(db)).toEqual(groupByRaw(db));
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('retention', () => {
  it('deletes only raw rows of days before the retention, in batches; reports over whole days and retained days stay identical', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 1, maxLength: 200, size: 'max' }), fc.integer({ min: 1, max: DAYS }), fc.array(rangeArb, { minLength: 1, maxLength: 4 }), async (rows, retentionDays, ranges) => {
        const db = openDatabase(':memory:', MAIN_MIGRATIONS);
        try {
          fill(db, rows, []);
          const now = T0 + DAYS * DAY_MS + 5;
          const keepFrom = T0 + (DAYS - retentionDays) * DAY_MS;
          const raw = db.prepare<[], { request_id: string; ts: number }>('SELECT request_id, ts FROM ledger ORDER BY request_id').all();
          const groups = db.prepare<[], { minute: number; ts: number }>('SELECT minute, ts FROM usage_minute ORDER BY 1, 2').all();
          const before = ranges.map((r) => GROUPS.map((by) => naive(db, r.from, r.to, by)));
          const whole = GROUPS.map((by) => naive(db, T0, T0 + DAYS * DAY_MS, by));

          const deleted = await new LedgerRetention(db, { retentionDays, batchRows: 7 }).prune(now);

          expect(deleted).toBe(raw.filter((r) => r.ts < keepFrom).length + groups.filter((r) => r.ts < keepFrom).length);
          expect(db.prepare('SELECT request_id, ts FROM ledger ORDER BY request_id').all()).toEqual(raw.filter((r) => r.ts >= keepFrom));
          expect(db.prepare('SELECT minute, ts FROM usage_minute ORDER BY 1, 2').all()).toEqual(groups.filter((r) => r.ts >= keepFrom));
          ranges.forEach((r, i) => {
            const edges = [r.from, r.to].filter((t) => t % DAY_MS !== 0);
            const exact = edges.every((t) => t >= keepFrom);
            for (const [j, by] of GROUPS.entries()) {
              if (exact) expect(queryUsage(db, r.from, r.to, by)).toEqual(before[i]![j]);
              else expect(() => queryUsage(db, r.from, r.to, by)).toThrow(UsageRangePruned);
            }
          });
          // Whole days over the whole ledger, pruned days included: the totals did not move.
          for (const [j, by] of GROUPS.entries()) expect(queryUsage(db, T0, T0 + DAYS * DAY_MS, by)).toEqual(whole[j]);
        } finally {
          db.close();
        }
      }),
      { numRuns: 40, endOnFailure: true },
    );
  });

  it('refuses a range whose edge falls inside a pruned day, naming the first day held raw; null keeps everything', async () => {
    await withDbAsync(async (db) => {
      fill(db, [{ n: 1, ts: 5_000, key: 'key_a', endpoint: 'profile', cache: 'HIT', credits: 0, creditsSaved: 2, unsettled: false, flushAfter: false }], []);
      expect(await new LedgerRetention(db, { retentionDays: null }).prune(T0 + 30 * DAY_MS)).toBe(0);
      expect(db.prepare('SELECT COUNT(*) FROM usage_minute').pluck().get()).toBe(1);
      expect(await new LedgerRetention(db, { retentionDays: 10 }).prune(T0 + 30 * DAY_MS)).toBe(1);
      expect(db.prepare('SELECT COUNT(*) FROM usage_minute').pluck().get()).toBe(0);
      const err = (() => {
        try {
          queryUsage(db, T0 + 3_600_000, T0 + 40 * DAY_MS, 'key');
        } catch (e) {
          return e as UsageRangePruned;
        }
        throw new Error('accepted a range starting inside a pruned day');
      })();
      expect(err).toBeInstanceOf(UsageRangePruned);
      expect(err.message).toMatch(/^from: 2026-03-01T01:00:00.000Z falls inside 2026-03-01, .*before 2026-03-21, the first day still held raw/);
      // The same day as a whole is still counted, from its daily total.
      expect(queryUsage(db, T0, T0 + DAY_MS, 'key')).toEqual([{ id: 'key_a', name: 'key_a', requests: 1, cache_hits: 1, credits: 0, credits_saved: 2, unsettled_credits: 0 }]);
    });
  });
});

async function withDbAsync(fn: (db: DB) => Promise<void>): Promise<void> {
  const db = openDatabase(':memory:', MAIN_MIGRATIONS);
  try {
    await fn(db);
  } finally {
    db.close();
  }
}
