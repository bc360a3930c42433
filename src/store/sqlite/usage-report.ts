import type { DB } from './db.js';
import { DAY_MS } from './ledger-rows.js';
import { minuteOf } from '../usage-tally.js';
import type { ReadStatement } from './read-worker.js';
import { rollUpSelect } from '../usage-rollup-sql.js';

import { checkRange, splitRange, UsageRangePruned, type UsageDetail, type UsageDimension, type UsageGroup, type UsageRow } from '../../domain/ledger.js';

export { UsageRangePruned, type UsageGroup, type UsageRow };

const GROUP_SQL: Record<UsageGroup, { id: string; name: string }> = {
  key: { id: 'u.key_id', name: 'COALESCE(k.name, u.key_id)' },
  // The key's team now (the column kept its name `owner`); no team, or no key row: NULL, one group.
  team: { id: 'k.owner', name: 'k.owner' },
  day: { id: "strftime('%Y-%m-%d', u.day * 86400, 'unixepoch')", name: "strftime('%Y-%m-%d', u.day * 86400, 'unixepoch')" },
  endpoint: { id: 'u.endpoint', name: 'u.endpoint' },
};

/** Most credits first for keys and teams (the no-team group after the named ones on a tie); the others by id. */
const ORDER: Record<UsageGroup, string> = {
  key: 'credits DESC, requests DESC, id',
  team: 'credits DESC, requests DESC, id NULLS LAST',
  day: 'id',
  endpoint: 'id',
};

const RAW = `SELECT ts / ${DAY_MS}, key_id, endpoint, COUNT(*), SUM(cache IS 'HIT' OR cache IS 'STALE'), SUM(credits), SUM(credits_saved), SUM(credits * unsettled)
    FROM ledger WHERE ts >= ? AND ts < ? GROUP BY 1, 2, 3`;

/**
 * The counted groups (zero-credit requests, usage_minute) of a stretch, each by its earliest
 * request's time; the minute bounds let the primary key find them (a group's ts lies in its minute).
 */
const COUNTED = `SELECT ts / ${DAY_MS}, key_id, endpoint, SUM(requests), SUM(cache_hits), 0, SUM(credits_saved), 0
    FROM usage_minute WHERE minute >= ? AND minute <= ? AND ts >= ? AND ts < ? GROUP BY 1, 2, 3`;

/** The reading that decides whether a range can be answered exactly (see UsageRangePruned). */
export const RAW_FROM_DAY: ReadStatement = { sql: "SELECT value FROM ledger_meta WHERE name = 'raw_from_day'", params: [], mode: 'get' };

/**
 * Every request of [from, to) as rows u(day, key_id, endpoint, requests, …): daily totals for the
 * whole days, raw rows and counted groups for the partial days at the edges. Exact for any range
 * checkRange accepts (a counted group at its earliest request's time); reads at most two days of
 * raw rows and counted groups whatever the range's length.
 */
function usageRows(from: number, to: number): { sql: string; params: number[] } {
  const s = splitRange(from, to);
  const raw = s.raw.map(() => `UNION ALL ${RAW}\n    UNION ALL ${COUNTED}`).join('\n    ');
  return {
    sql: `WITH u (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits) AS (
    SELECT day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits FROM usage_daily WHERE day >= ? AND day < ?
    ${raw}
  )`,
    params: [s.fromDay, s.toDay, ...s.raw.flatMap(([a, b]) => [a, b, minuteOf(a), minuteOf(b - 1), a, b])],
  };
}

const SUMS = `SUM(u.requests) AS requests, SUM(u.cache_hits) AS cache_hits, SUM(u.credits) AS credits,
    SUM(u.credits_saved) AS credits_saved, SUM(u.unsettled_credits) AS unsettled_credits`;

/** The report's SQL: usageRows summed per group. */
export function usageStatement(from: number, to: number, by: UsageGroup): ReadStatement {
  const u = usageRows(from, to);
  const sql = GROUP_SQL[by];
  return {
    sql: `${u.sql}
  SELECT ${sql.id} AS id, ${sql.name} AS name, ${SUMS}
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  GROUP BY 1 ORDER BY ${ORDER[by]}`,
    params: u.params,
    mode: 'all',
  };
}

/** The breakdown's SQL (Ledger.breakdown): usageRows summed per day, key and endpoint; the key's name and team are its own now. */
export function detailStatement(from: number, to: number): ReadStatement {
  const u = usageRows(from, to);
  return {
    sql: `${u.sql}
  SELECT ${GROUP_SQL.day.id} AS day, u.key_id AS key_id, k.name AS key_name, k.owner AS team, u.endpoint AS endpoint, ${SUMS}
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  GROUP BY u.day, u.key_id, u.endpoint ORDER BY u.day, u.key_id, u.endpoint`,
    params: u.params,
    mode: 'all',
  };
}

/** Ledger.rollUp's SQL: usageRows summed per distinct value of `by` (usage-rollup-sql.ts). */
export function rollUpStatement(from: number, to: number, by: readonly UsageDimension[]): ReadStatement {
  const u = usageRows(from, to);
  return { sql: `${u.sql}\n  ${rollUpSelect(by, { dayText: GROUP_SQL.day.id, collate: '', numeric: '' })}`, params: u.params, mode: 'all' };
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
export function usageResult<R = UsageRow>(from: number, to: number, results: readonly unknown[]): R[] {
  checkRange(from, to, (results[0] as number | undefined) ?? 0);
  return results[1] as R[];
}

/** Totals per day, key and endpoint for `from` ≤ ts < `to`; read-only, for the CLI too. */
export function queryDetail(db: DB, from: number, to: number): UsageDetail[] {
  return usageResult<UsageDetail>(from, to, readAll(db, [RAW_FROM_DAY, detailStatement(from, to)]));
}

/** Totals per key, team, UTC day or endpoint for `from` ≤ ts < `to`; read-only, for the CLI too. */
export function queryUsage(db: DB, from: number, to: number, by: UsageGroup): UsageRow[] {
  return usageResult(from, to, readAll(db, [RAW_FROM_DAY, usageStatement(from, to, by)]));
}
