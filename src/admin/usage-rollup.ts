import type { RolledUsage, UsageDimension } from '../domain/ledger.js';
/*
 * Usage summed over the dimensions asked for (team, key, endpoint, day), as Ledger.rollUp gives
 * it: how the admin API names a multi-group report's rows (groupedView), and the order of names
 * the overview breaks ties with. What the sums are is defined over the finest rows in
 * test/helpers/usage-model.ts, which the store contract checks both stores against.
 */

export type { UsageDimension } from '../domain/ledger.js';

/** Usage summed over the dimensions not asked for, which are null (`key` keeps key_id and key_name): Ledger.rollUp's rows. */
export type RolledRow = RolledUsage;

/** Strings by code unit (byte order for ASCII, as the stores order them), null last. */
export function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

/**
 * Rolled rows as the admin API's multi-group answer names them: only the dimensions asked for
 * (`key` as key_id and key_name), then the sums.
 */
export function groupedView(rows: readonly RolledRow[], by: readonly UsageDimension[]): Record<string, string | number | null>[] {
  return rows.map((r) => {
    const o: Record<string, string | number | null> = {};
    for (const d of by) {
      if (d === 'key') Object.assign(o, { key_id: r.key_id, key_name: r.key_name });
      else o[d] = r[d];
    }
    return { ...o, requests: r.requests, cache_hits: r.cache_hits, credits: r.credits, credits_saved: r.credits_saved };
  });
}
