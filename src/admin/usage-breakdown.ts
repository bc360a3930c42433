import type { UsageDetail } from '../domain/ledger.js';
import type { Ledger } from '../store/ports.js';
import type { BreakdownRow } from './usage-rollup.js';

export { compareNullable, groupedView, rollUp, USAGE_DIMENSIONS, type BreakdownRow, type RolledRow, type UsageDimension } from './usage-rollup.js';
export { usageCsv, USAGE_CSV_HEADER } from './usage-csv.js';

/*
 * Usage by team, key, endpoint and day (README "Usage"), for the admin API, the CLI, the
 * dashboard and the CSV export: one read of the ledger per day, key and endpoint
 * (Ledger.breakdown, exact as `report` is), summed over whatever dimensions are asked for (rollUp).
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

/**
 * Usage over [from, to) per UTC day, key and endpoint, ordered so; rejects with
 * UsageRangePruned (domain/ledger.ts) as the report does. On SQLite read by the worker thread.
 * `deps`: the AdminDeps (the CLI passes its storage).
 */
export async function usageBreakdown(deps: { readonly backend: { readonly ledger: Pick<Ledger, 'breakdown'> } }, from: number, to: number): Promise<BreakdownRow[]> {
  return (await deps.backend.ledger.breakdown(from, to)).map(breakdownRow);
}
