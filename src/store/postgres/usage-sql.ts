import { DAY_MS, splitRange, type UsageDimension, type UsageGroup } from '../../domain/ledger.js';
import { MINUTE_MS } from '../usage-tally.js';
import { rollUpSelect } from '../usage-rollup-sql.js';

/* The usage reports' statements in PostgreSQL (PgLedger's report, breakdown and rollUp). */

const GROUP: Record<UsageGroup, { id: string; name: string }> = {
  key: { id: 'u.key_id', name: 'COALESCE(k.name, u.key_id)' },
  // The key's team now (the column kept its name `owner`); no team, or no key row: NULL, one group.
  team: { id: 'k.owner', name: 'k.owner' },
  day: { id: "to_char(date '1970-01-01' + u.day, 'YYYY-MM-DD')", name: "to_char(date '1970-01-01' + u.day, 'YYYY-MM-DD')" },
  endpoint: { id: 'u.endpoint', name: 'u.endpoint' },
};

/**
 * Most credits first for keys and teams, the others by id. Team names are free text: compared
 * byte-wise (COLLATE "C"), as SQLite does, so both backends list teams in one order (an output
 * column is named bare in ORDER BY, so the team is named by its column here).
 */
const ORDER: Record<UsageGroup, string> = {
  key: 'credits DESC, requests DESC, id',
  team: 'credits DESC, requests DESC, k.owner COLLATE "C" NULLS LAST',
  day: 'id',
  endpoint: 'id',
};

/**
 * Usage over ts in [$1, $2): the daily totals of the whole days [$3, $4) (days pruned past the
 * retention, ledger-retention.ts) plus every raw row and counted group (usage_minute, at its
 * earliest request's time; $5 and $6 its minutes, for the primary key, as bigint: a range may
 * end in a year whose minutes pass an integer's 2^31) in the range, grouped.
 * A row or group is held either as itself or in its day's totals, never both, and one
 * statement reads all of them in one snapshot, so whole days are exact however far a prune
 * has got; a partial day is exact when none of it was folded, which checkRange establishes
 * (PgLedger.report).
 */
const USAGE_ROWS = `WITH u (day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits) AS (
    SELECT day, key_id, endpoint, requests, cache_hits, credits, credits_saved, unsettled_credits FROM usage_daily WHERE day >= $3 AND day < $4
    UNION ALL
    SELECT (ts / ${DAY_MS})::integer, key_id, endpoint, count(*), count(*) FILTER (WHERE cache IN ('HIT', 'STALE')), sum(credits), sum(credits_saved),
      COALESCE(sum(credits) FILTER (WHERE unsettled), 0)
    FROM ledger WHERE ts >= $1 AND ts < $2 GROUP BY 1, 2, 3
    UNION ALL
    SELECT (ts / ${DAY_MS})::integer, key_id, endpoint, sum(requests), sum(cache_hits), 0, sum(credits_saved), 0
    FROM usage_minute WHERE minute >= $5::bigint AND minute <= $6::bigint AND ts >= $1 AND ts < $2 GROUP BY 1, 2, 3
  )`;

const SUMS = `SUM(u.requests) AS requests, SUM(u.cache_hits) AS cache_hits, SUM(u.credits) AS credits,
    SUM(u.credits_saved) AS credits_saved, SUM(u.unsettled_credits) AS unsettled_credits`;

const usageSql = (g: { id: string; name: string }, by: UsageGroup) => `${USAGE_ROWS}
  SELECT ${g.id} AS id, ${g.name} AS name, ${SUMS}
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  GROUP BY 1, 2 ORDER BY ${ORDER[by]}`;

/** Ledger.breakdown: per day, key and endpoint, ordered byte-wise as SQLite orders them. */
export const DETAIL_SQL = `${USAGE_ROWS}
  SELECT ${GROUP.day.id} AS day, u.key_id AS key_id, k.name AS key_name, k.owner AS team, u.endpoint AS endpoint, ${SUMS}
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  GROUP BY u.day, u.key_id, u.endpoint, k.name, k.owner ORDER BY u.day, u.key_id COLLATE "C", u.endpoint COLLATE "C"`;

/** USAGE_ROWS' parameters for [from, to). */
export function usageParams(from: number, to: number): number[] {
  const { fromDay, toDay } = splitRange(from, to);
  return [from, to, fromDay, toDay, Math.floor(from / MINUTE_MS), Math.floor((to - 1) / MINUTE_MS)];
}

export const rollUpSql = (by: readonly UsageDimension[]) => `${USAGE_ROWS}\n  ${rollUpSelect(by, { dayText: GROUP.day.id, collate: ' COLLATE "C"', numeric: '::float8' })}`;

export const USAGE_SQL = Object.fromEntries((Object.keys(GROUP) as UsageGroup[]).map((by) => [by, usageSql(GROUP[by], by)])) as Record<UsageGroup, string>;

/** The summed columns, numbers (bigint sums arrive as text). */
export const sums = (x: { requests: string; cache_hits: string; credits: string; credits_saved: string; unsettled_credits: string }) => ({
  requests: Number(x.requests),
  cache_hits: Number(x.cache_hits),
  credits: Number(x.credits),
  credits_saved: Number(x.credits_saved),
  unsettled_credits: Number(x.unsettled_credits),
});
