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

const q = JSON.stringify;
/** Each dimension's members of a grouped row, as JSON text (`key` is key_id and key_name). */
const DIMENSION_JSON: Record<UsageDimension, (r: RolledRow) => string> = {
  team: (r) => `"team":${q(r.team)}`,
  key: (r) => `"key_id":${q(r.key_id)},"key_name":${q(r.key_name)}`,
  endpoint: (r) => `"endpoint":${q(r.endpoint)}`,
  day: (r) => `"day":${q(r.day)}`,
};

/**
 * The text of groupedView's rows as a JSON array's members, comma-joined, written directly: the
 * object per row that groupedView builds, with keys added one by one, made 2,000 rows ~9 ms of
 * work against ~1 ms, and a long report's slices held the event loop past 20 ms. The sums are
 * finite numbers, written as JSON.stringify writes them.
 */
export function groupedJsonText(by: readonly UsageDimension[]): (rows: readonly RolledRow[]) => string {
  const dims = by.map((d) => DIMENSION_JSON[d]);
  return (rows) => {
    let out = '';
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      let head = '';
      for (const d of dims) head += `${d(r)},`;
      out += `${i > 0 ? ',' : ''}{${head}"requests":${r.requests},"cache_hits":${r.cache_hits},"credits":${r.credits},"credits_saved":${r.credits_saved}}`;
    }
    return out;
  };
}
