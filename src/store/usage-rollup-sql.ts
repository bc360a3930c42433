import type { UsageDimension } from '../domain/ledger.js';

/** Rows of a roll-up per page (Ledger.rollUpPages): on SQLite, ~2.5 ms of copying from the read worker each. */
export const ROLLUP_PAGE_ROWS = 2_000;

/** `pageRows` as Ledger.rollUpPages takes it: 0 would page forever, and PostgreSQL's FETCH takes a 32-bit count. */
export function checkPageRows(pageRows: number): number {
  if (!Number.isInteger(pageRows) || pageRows < 1 || pageRows > 2 ** 31 - 1) throw new RangeError(`pageRows: expected an integer from 1 to 2^31 − 1, got ${pageRows}`);
  return pageRows;
}

/**
 * The SELECT that sums usage rows u(day, key_id, endpoint, …), joined to api_keys k, per
 * distinct value of the dimensions asked for (Ledger.rollUp), for either store: the dimensions
 * not asked for are NULL, the order is the dimensions' in the order given. Text is ordered
 * byte-wise (`collate`: PostgreSQL's COLLATE "C"; SQLite's BINARY is byte-wise already), the
 * null team last. HAVING: no row at all when nothing was used, as the sums of no rows.
 * `numeric` casts each sum to what the driver returns as a JS number (PostgreSQL's `::float8`,
 * exact below 2^53; its bigint sums would arrive as text), so that no row is mapped again on
 * the event loop.
 */
export function rollUpSelect(by: readonly UsageDimension[], dialect: { readonly dayText: string; readonly collate: string; readonly numeric: string }): string {
  const has = (d: UsageDimension) => by.includes(d);
  const columns = [
    `${has('day') ? dialect.dayText : 'NULL'} AS day`,
    `${has('team') ? 'k.owner' : 'NULL'} AS team`,
    `${has('key') ? 'u.key_id' : 'NULL'} AS key_id`,
    `${has('key') ? 'k.name' : 'NULL'} AS key_name`,
    `${has('endpoint') ? 'u.endpoint' : 'NULL'} AS endpoint`,
  ];
  // A key's name is its own, one per key id: grouped by, it splits nothing.
  const groups: Record<UsageDimension, string[]> = { day: ['u.day'], team: ['k.owner'], key: ['u.key_id', 'k.name'], endpoint: ['u.endpoint'] };
  const order: Record<UsageDimension, string> = {
    day: 'u.day',
    team: `k.owner${dialect.collate} NULLS LAST`,
    key: `u.key_id${dialect.collate}`,
    endpoint: `u.endpoint${dialect.collate}`,
  };
  const groupBy = by.flatMap((d) => groups[d]);
  return `SELECT ${columns.join(', ')},
    ${['requests', 'cache_hits', 'credits', 'credits_saved'].map((c) => `SUM(u.${c})${dialect.numeric} AS ${c}`).join(', ')}
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  ${groupBy.length ? `GROUP BY ${groupBy.join(', ')}` : ''}
  HAVING COUNT(*) > 0
  ${by.length ? `ORDER BY ${by.map((d) => order[d]).join(', ')}` : ''}`;
}
