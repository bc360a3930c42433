import type { UsageDetail } from '../domain/ledger.js';
import type { BreakdownRow } from './usage-rollup.js';

export { compareNullable, groupedView, rollUp, USAGE_DIMENSIONS, type BreakdownRow, type RolledRow, type UsageDimension } from './usage-rollup.js';
export { CSV_DIMENSIONS, usageCsv, usageCsvParts, USAGE_CSV_HEADER } from './usage-csv.js';

/*
 * Usage by team, key, endpoint and day (README "Usage"), for the admin API, the CLI, the
 * dashboard and the CSV export: summed by the store over whatever dimensions are asked for
 * (Ledger.rollUp). `rollUp` (usage-rollup.ts) is its definition over the finest rows (Ledger.breakdown),
 * which the store contract checks both stores against.
 */

export const breakdownRow = (d: UsageDetail): BreakdownRow => ({
  day: d.day,
  team: d.team,
  key_id: d.key_id,
  key_name: d.key_name,
  endpoint: d.endpoint,
  requests: d.requests,
  cache_hits: d.cache_hits,
  credits: d.credits,
  credits_saved: d.credits_saved,
});
