import type { DB } from './db.js';
import { DAY_MS, dayOf } from './ledger-rows.js';
import type { ReadStatement } from './read-worker.js';

import { UsageRangePruned, type UsageGroup, type UsageRow } from '../../domain/ledger.js';

export { UsageRangePruned, type UsageGroup, type UsageRow };

const GROUP_SQL: Record<UsageGroup, { id: string; name: string }> = {
  key: { id: 'u.key_id', name: 'COALESCE(k.name, u.key_id)' },
  day: { id: "strftime('%Y-%m-%d', u.day * 86400, 'unixepoch')", name: "strftime('%Y-%m-%d', u.day * 86400, 'unixepoch')" },
  endpoint: { id: 'u.endpoint', name: 'u.endpoint' },
};

const RAW = `SELECT ts / ${DAY_MS}, key_id, endpoint, COUNT(*), SUM(cache IS 'HIT' OR cache IS 'STALE'), SUM(credits), SUM(credits_saved), SUM(credits * unsettled)
    FROM ledger WHERE ts >= ? AND ts < ? GROUP BY 1, 2, 3`;

/** The reading that decides whether a range can be answered exactly (see UsageRangePruned). */
export const RAW_FROM_DAY: ReadStatement = { sql: "SELECT value FROM ledger_meta WHERE name = 'raw_from_day'", params: [], mode: 'get' };

interface Split {
  /** Whole UTC days [fromDay, toDay) read from usage_daily; empty when fromDay >= toDay. */
  fromDay: number;
  toDay: number;
  /** Up to two stretches [a, b) of raw rows: the partial days at the edges. */
  raw: Array<[number, number]>;
}

/** `from` ≤ ts < `to` as whole days from the rollup plus the partial days at its edges from raw rows. */
export function splitRange(from: number, to: number): Split {
  const fromDay = Math.ceil(from / DAY_MS);
  const toDay = Math.floor(to / DAY_MS);
  if (fromDay >= toDay) return { fromDay: 0, toDay: 0, raw: [[from, to]] };
  const raw: Array<[number, number]> = [];
  if (from < fromDay * DAY_MS) raw.push([from, fromDay * DAY_MS]);
  if (toDay * DAY_MS < to) raw.push([toDay * DAY_MS, to]);
  return { fromDay, toDay, raw };
}

/** Throws UsageRangePruned when a raw stretch of the range starts in a day pruned to its totals. */
export function checkRange(from: number, to: number, rawFromDay: number): void {
  for (const [a] of splitRange(from, to).raw) {
    if (dayOf(a) >= rawFromDay) continue;
    // A stretch starting at `from` is `from`'s fault unless `from` is midnight (then `to` ends inside that day).
    const edge = a === from && from % DAY_MS !== 0 ? 'from' : 'to';
    throw new UsageRangePruned(edge, edge === 'from' ? from : to, rawFromDay * DAY_MS);
  }
}

/**
 * The report's SQL: daily totals for the whole days, raw rows for the partial days at the
 * edges, summed per group. Exact for any range checkRange accepts; reads at most two days
 * of raw rows whatever the range's length.
 */
export function usageStatement(from: number, to: number, by: UsageGroup): ReadStatement {
  const s = splitRange(from, to);
  const sql = GROUP_SQL[by];
  const raw = s.raw.map(() => `UNION ALL ${RAW}`).join('\n    ');
  return {
    sql: `WITH u (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits) AS (
    SELECT day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits FROM usage_daily WHERE day >= ? AND day < ?
    ${raw}
  )
  SELECT ${sql.id} AS id, ${sql.name} AS name, SUM(u.requests) AS requests, SUM(u.cache_hits) AS cache_hits, SUM(u.credits) AS credits,
    SUM(u.credits_saved) AS credits_saved, SUM(u.unsettled_credits) AS unsettled_credits
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  GROUP BY 1 ORDER BY ${by === 'key' ? 'credits DESC, requests DESC, id' : 'id'}`,
    params: [s.fromDay, s.toDay, ...s.raw.flat()],
    mode: 'all',
  };
}

/** Run read statements in one read transaction (one snapshot); the usage worker does the same. */
export function readAll(db: DB, statements: readonly ReadStatement[]): unknown[] {
  return db.transaction(() =>
    statements.map((st) => {
      const stmt = db.prepare(st.sql);
      return st.mode === 'get' ? stmt.pluck().get(...st.params) : stmt.all(...st.params);
    }),
  )();
}

/** What readAll (or the worker) read for [RAW_FROM_DAY, usageStatement(…)], checked. */
export function usageResult(from: number, to: number, results: readonly unknown[]): UsageRow[] {
  checkRange(from, to, (results[0] as number | undefined) ?? 0);
  return results[1] as UsageRow[];
}

/** Totals per key, UTC day or endpoint for `from` ≤ ts < `to`; read-only, for the CLI too. */
export function queryUsage(db: DB, from: number, to: number, by: UsageGroup): UsageRow[] {
  return usageResult(from, to, readAll(db, [RAW_FROM_DAY, usageStatement(from, to, by)]));
}
