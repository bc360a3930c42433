import type { RolledUsage, UsageDimension } from '../domain/ledger.js';

/**
 * The SELECT that sums usage rows u(day, key_id, endpoint, …), joined to api_keys k, per
 * distinct value of the dimensions asked for (Ledger.rollUp), for either store: the dimensions
 * not asked for are NULL, the order is the dimensions' in the order given. Text is ordered
 * byte-wise (`collate`: PostgreSQL's COLLATE "C"; SQLite's BINARY is byte-wise already), the
 * null team last. HAVING: no row at all when nothing was used, as the sums of no rows.
 */
export function rollUpSelect(by: readonly UsageDimension[], dialect: { readonly dayText: string; readonly collate: string }): string {
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
    SUM(u.requests) AS requests, SUM(u.cache_hits) AS cache_hits, SUM(u.credits) AS credits, SUM(u.credits_saved) AS credits_saved
  FROM u LEFT JOIN api_keys k ON k.id = u.key_id
  ${groupBy.length ? `GROUP BY ${groupBy.join(', ')}` : ''}
  HAVING COUNT(*) > 0
  ${by.length ? `ORDER BY ${by.map((d) => order[d]).join(', ')}` : ''}`;
}

/** A rolled row as a driver returns it (PostgreSQL's bigint sums as text) with numbers for sums. */
export function rolledUsage(x: Record<keyof RolledUsage, unknown>): RolledUsage {
  return {
    day: x.day as string | null,
    team: x.team as string | null,
    key_id: x.key_id as string | null,
    key_name: x.key_name as string | null,
    endpoint: x.endpoint as string | null,
    requests: Number(x.requests),
    cache_hits: Number(x.cache_hits),
    credits: Number(x.credits),
    credits_saved: Number(x.credits_saved),
  };
}
