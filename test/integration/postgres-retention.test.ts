import type { Pool } from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS, UsageRangePruned, type LedgerRow, type UsageGroup, type UsageRow } from '../../src/domain/ledger.js';
import { PgCredits } from '../../src/store/postgres/credits.js';
import { PgLedgerRetention } from '../../src/store/postgres/ledger-retention.js';
import { PgLedger } from '../../src/store/postgres/ledger.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { migrate } from '../../src/store/postgres/schema.js';
import { FakeClock } from '../../src/domain/clock.js';
import { eventually } from '../contract/support.js';
import { freshDatabase } from '../helpers/postgres.js';

/*
 * The shared ledger's retention on a real PostgreSQL: raw rows past ledger.retentionDays are
 * folded into daily totals exactly, a range edge inside a folded day is refused, and neither
 * two replicas pruning at once nor requests recording meanwhile count a row twice or lose one.
 * The passes are called directly, at fake-clock times; the timer that runs them in a server is
 * held to the same behaviour by the ledger contract (test/contract/ledger.contract.ts).
 */
const D0 = Date.UTC(2026, 0, 1); // midnight UTC
const DAY0 = D0 / DAY_MS;
const HOUR = 3_600_000;
const GROUPS: UsageGroup[] = ['key', 'day', 'endpoint'];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function database(): Promise<string> {
  const db = await freshDatabase();
  cleanups.push(db.drop);
  return db.url;
}

/** One replica's view of the ledger: a pool of its own, the ledger, and a retention on it. */
async function replica(url: string, retentionDays: number | null, batchRows = 50): Promise<{ pool: Pool; ledger: PgLedger; retention: PgLedgerRetention }> {
  const pool = openPool(url, { max: 4 });
  cleanups.push(() => pool.end());
  await migrate(pool);
  const ledger = new PgLedger(pool, new PgCredits(pool, `replica-${cleanups.length}`));
  return { pool, ledger, retention: new PgLedgerRetention(pool, { retentionDays, batchRows, clock: new FakeClock(D0) }) };
}

let seq = 0;
/** `n` rows spread over `days` days from D0: several keys, endpoints and cache statuses, some charged, some unsettled. */
function history(n: number, days: number, from = D0): LedgerRow[] {
  return Array.from({ length: n }, (_, i) => {
    const credits = i % 10 === 0 ? 1 + (i % 3) : 0;
    return {
      requestId: `req_${++seq}`,
      ts: from + Math.floor((i / n) * days * DAY_MS),
      keyId: ['key_a', 'key_b', 'key_c'][i % 3]!,
      endpoint: ['profile', 'company', 'passthrough', 'profile_posts'][i % 4]!,
      identity: `person.id=${i}`,
      cache: [null, 'HIT', 'MISS', 'STALE', 'BYPASS'][i % 5]!,
      status: 200,
      code: null,
      credits,
      creditsSaved: credits === 0 ? i % 2 : 0,
      upstreamMs: null,
      totalMs: 3,
      upstreamRequestId: null,
      unsettled: credits > 0 && i % 4 === 0,
    };
  });
}

async function record(ledger: PgLedger, rows: readonly LedgerRow[]): Promise<void> {
  for (const r of rows) await ledger.record(r);
  await ledger.flush();
}

/** What the report must say, summed here from the rows themselves. */
function expected(rows: readonly LedgerRow[], from: number, to: number, by: UsageGroup): UsageRow[] {
  const groups = new Map<string, UsageRow>();
  for (const r of rows) {
    if (r.ts < from || r.ts >= to) continue;
    const id = by === 'key' ? r.keyId : by === 'endpoint' ? r.endpoint : new Date(r.ts).toISOString().slice(0, 10);
    const g = groups.get(id) ?? { id, name: id, requests: 0, cache_hits: 0, credits: 0, credits_saved: 0, unsettled_credits: 0 };
    g.requests++;
    if (r.cache === 'HIT' || r.cache === 'STALE') g.cache_hits++;
    g.credits += r.credits;
    g.credits_saved += r.creditsSaved;
    if (r.unsettled) g.unsettled_credits += r.credits;
    groups.set(id, g);
  }
  const sorted = [...groups.values()];
  const byId = (a: UsageRow, b: UsageRow) => (a.id! < b.id! ? -1 : 1);
  return by === 'key' ? sorted.sort((a, b) => b.credits - a.credits || b.requests - a.requests || byId(a, b)) : sorted.sort(byId);
}

/** Every whole-day range [a, b) within the first `days` days, in every grouping. */
async function expectWholeDays(ledger: PgLedger, rows: readonly LedgerRow[], days: number): Promise<void> {
  for (let a = 0; a < days; a += 2) {
    for (let b = a + 1; b <= days; b += 3) {
      for (const by of GROUPS) expect(await ledger.report(D0 + a * DAY_MS, D0 + b * DAY_MS, by), `${a}-${b} ${by}`).toEqual(expected(rows, D0 + a * DAY_MS, D0 + b * DAY_MS, by));
    }
  }
}

/** Requests before `before` not folded: raw rows, and zero-credit requests counted in usage_minute. */
const rawCount = async (pool: Pool, before: number) =>
  (await pool.query<{ n: number }>('SELECT ((SELECT count(*) FROM ledger WHERE ts < $1) + (SELECT COALESCE(sum(requests), 0) FROM usage_minute WHERE ts < $1))::int AS n', [before])).rows[0]!.n;
const foldedRequests = async (pool: Pool) => Number((await pool.query<{ n: string }>('SELECT COALESCE(SUM(requests), 0) AS n FROM usage_daily')).rows[0]!.n);

describe('PostgreSQL ledger retention', () => {
  it('folds rows past the retention into daily totals exactly; a range edge inside a folded day is refused', async () => {
    const { pool, ledger, retention } = await replica(await database(), 3, 37);
    const rows = history(1_000, 10);
    await record(ledger, rows);
    const partial = await ledger.report(D0 + 7 * DAY_MS + 5 * HOUR, D0 + 9 * DAY_MS + HOUR, 'key');

    // At day 10, 05:00: days 0–6 are past the 3 days kept raw.
    const old = rows.filter((r) => r.ts < D0 + 7 * DAY_MS).length;
    expect(await retention.prune(D0 + 10 * DAY_MS + 5 * HOUR)).toBe(old);
    expect(await rawCount(pool, D0 + 7 * DAY_MS)).toBe(0);
    expect(await foldedRequests(pool)).toBe(old);
    expect((await pool.query("SELECT value::int AS v FROM ledger_meta WHERE name = 'raw_from_day'")).rows).toEqual([{ v: DAY0 + 7 }]);
    await expectWholeDays(ledger, rows, 10);
    expect(await ledger.report(D0 + 7 * DAY_MS + 5 * HOUR, D0 + 9 * DAY_MS + HOUR, 'key')).toEqual(partial);
    expect(await ledger.report(D0 + 2 * DAY_MS, D0 + 8 * DAY_MS + HOUR, 'day')).toEqual(expected(rows, D0 + 2 * DAY_MS, D0 + 8 * DAY_MS + HOUR, 'day'));

    const refusal = (from: number, to: number) => ledger.report(from, to, 'key').then(() => null, (err: unknown) => err);
    const fromInside = await refusal(D0 + 2 * DAY_MS + HOUR, D0 + 9 * DAY_MS);
    expect(fromInside).toBeInstanceOf(UsageRangePruned);
    expect(fromInside).toMatchObject({ edge: 'from', at: D0 + 2 * DAY_MS + HOUR, rawFrom: D0 + 7 * DAY_MS });
    expect(await refusal(D0, D0 + 6 * DAY_MS + HOUR)).toMatchObject({ edge: 'to', rawFrom: D0 + 7 * DAY_MS });
    expect(await refusal(D0 + 3 * DAY_MS + HOUR, D0 + 3 * DAY_MS + 2 * HOUR)).toBeInstanceOf(UsageRangePruned);

    // A row of a folded day recorded late (a batch flushed after the prune) counts in its whole day, then is folded too.
    const late = history(7, 1, D0 + 2 * DAY_MS + HOUR);
    await record(ledger, late);
    const all = [...rows, ...late];
    expect(await ledger.report(D0 + 2 * DAY_MS, D0 + 3 * DAY_MS, 'endpoint')).toEqual(expected(all, D0 + 2 * DAY_MS, D0 + 3 * DAY_MS, 'endpoint'));
    expect(await retention.prune(D0 + 10 * DAY_MS + 6 * HOUR)).toBe(7);
    await expectWholeDays(ledger, all, 10);
  });

  it('two replicas pruning at once fold each row once', async () => {
    const url = await database();
    const a = await replica(url, 2, 20);
    const b = await replica(url, 2, 20);
    const rows = history(2_000, 8);
    await record(a.ledger, rows);
    const now = D0 + 8 * DAY_MS + HOUR;
    const old = rows.filter((r) => r.ts < D0 + 6 * DAY_MS).length;
    const [x, y] = await Promise.all([a.retention.prune(now), b.retention.prune(now)]);
    // One holds the lock and folds them all; the other finds it held and leaves the pass to it.
    expect([x, y].sort((p, q) => p - q)).toEqual([0, old]);
    expect(await foldedRequests(a.pool)).toBe(old);
    // Once the first is done, another pass finds nothing left.
    expect(await b.retention.prune(now)).toBe(0);
    await expectWholeDays(b.ledger, rows, 8);
  });

  it('a prune while requests record rows (in pruned days too) loses none and counts none twice', async () => {
    const url = await database();
    const pruner = await replica(url, 2, 15);
    const writer = await replica(url, 2);
    const before = history(1_200, 6);
    await record(writer.ledger, before);
    const during = [...history(300, 6), ...history(100, 2, D0 + 6 * DAY_MS)];
    const now = D0 + 8 * DAY_MS;
    const [folded] = await Promise.all([pruner.retention.prune(now), record(writer.ledger, during)]);
    expect(folded).toBeGreaterThan(0);
    const all = [...before, ...during];
    await expectWholeDays(pruner.ledger, all, 8);
    await pruner.retention.prune(now);
    expect(await rawCount(pruner.pool, D0 + 6 * DAY_MS)).toBe(0);
    expect(await foldedRequests(pruner.pool)).toBe(all.filter((r) => r.ts < D0 + 6 * DAY_MS).length);
    await expectWholeDays(writer.ledger, all, 8);
  });

  it('reports read during a prune are exact or refused, never a day half folded', async () => {
    const url = await database();
    const pruner = await replica(url, 1, 10);
    const reader = await replica(url, 1);
    const rows = history(2_000, 5);
    await record(pruner.ledger, rows);
    const partialRange: [number, number] = [D0 + DAY_MS + 5 * HOUR, D0 + 4 * DAY_MS + 3 * HOUR];
    const wholeRange: [number, number] = [D0, D0 + 4 * DAY_MS];
    const partial = await reader.ledger.report(...partialRange, 'endpoint');
    const whole = await reader.ledger.report(...wholeRange, 'endpoint');
    let pruning = true;
    const pass = pruner.retention.prune(D0 + 5 * DAY_MS + HOUR).finally(() => (pruning = false));
    const seen = { exact: 0, refused: 0 };
    while (pruning) {
      const answer = await reader.ledger.report(...partialRange, 'endpoint').catch((err: unknown) => err);
      if (answer instanceof UsageRangePruned) seen.refused++;
      else {
        expect(answer).toEqual(partial);
        seen.exact++;
      }
      expect(await reader.ledger.report(...wholeRange, 'endpoint')).toEqual(whole);
    }
    expect(await pass).toBe(rows.filter((r) => r.ts < D0 + 4 * DAY_MS).length);
    expect(seen.refused).toBeGreaterThan(0);
  });

  it('a pass stopped midway leaves every total exact; the next pass finishes it', async () => {
    const url = await database();
    const first = await replica(url, 1, 10);
    const rows = history(3_000, 5);
    await record(first.ledger, rows);
    const now = D0 + 5 * DAY_MS + HOUR;
    const pass = first.retention.prune(now);
    await eventually(() => foldedRequests(first.pool), (n) => n > 0, 5_000);
    await first.retention.stop();
    const done = await pass;
    const old = rows.filter((r) => r.ts < D0 + 4 * DAY_MS).length;
    expect(done).toBeLessThan(old);
    expect(await first.retention.prune(now)).toBe(0); // stopped: no further pass
    await expectWholeDays(first.ledger, rows, 5);
    const next = await replica(url, 1, 10);
    expect(await next.retention.prune(now)).toBe(old - done);
    await expectWholeDays(next.ledger, rows, 5);
  });

  it('schema 4 → 5 keeps the raw rows of version 4: reported as before, nothing marked pruned, folded by the first pass', async () => {
    const url = await database();
    const p = openPool(url, { max: 2 });
    cleanups.push(() => p.end());
    expect(await migrate(p, 4)).toEqual({ from: 0, to: 4 });
    await p.query(`INSERT INTO ledger (request_id, ts, key_id, endpoint, cache, status, credits, credits_saved) VALUES ('v4', $1, 'key_a', 'profile', 'MISS', 200, 3, 0)`, [D0 + HOUR]);
    const { ledger, retention } = await replica(url, 2);
    const reported = [{ id: 'key_a', name: 'key_a', requests: 1, cache_hits: 0, credits: 3, credits_saved: 0, unsettled_credits: 0 }];
    expect(await ledger.report(D0 + HOUR, D0 + 2 * HOUR, 'key')).toEqual(reported);
    expect(await retention.prune(D0 + 3 * DAY_MS)).toBe(1);
    expect(await ledger.report(D0, D0 + DAY_MS, 'key')).toEqual(reported);
  });

  it('retentionDays null never prunes: every range stays answerable to the millisecond', async () => {
    const { pool, ledger, retention } = await replica(await database(), null);
    const rows = history(200, 4);
    await record(ledger, rows);
    expect(await retention.prune(D0 + 100 * 365 * DAY_MS)).toBe(0);
    expect(await rawCount(pool, D0 + 4 * DAY_MS)).toBe(200);
    expect((await pool.query("SELECT value::int AS v FROM ledger_meta WHERE name = 'raw_from_day'")).rows).toEqual([{ v: 0 }]);
    expect(await ledger.report(D0 + HOUR + 1, D0 + 3 * DAY_MS - 7, 'day')).toEqual(expected(rows, D0 + HOUR + 1, D0 + 3 * DAY_MS - 7, 'day'));
  });
});
