/**
 * Rows of one table locked in one order, their key's, by every writer that locks more than one.
 *
 * Two transactions that lock overlapping rows in different orders can each hold a row the
 * other waits for; PostgreSQL finds the deadlock only after deadlock_timeout (1 s) and aborts
 * one. An UPDATE … FROM unnest(…) or a DELETE locks rows in its plan's order: the array's
 * through an index, the heap's through a scan, the LRU index's for eviction. So two replicas
 * flushing hits on the same entries, or one flushing while another evicts them, could meet in
 * opposite orders.
 */
export interface LockedTable {
  readonly table: 'cache_entries' | 'api_keys';
  readonly key: 'key' | 'id';
  /** The order of the locks: cache keys in the primary key's own (no sort), key ids bytewise as teams.ts locks them. */
  readonly order: string;
}

export const CACHE_ENTRIES: LockedTable = { table: 'cache_entries', key: 'key', order: 'key' };
export const API_KEYS: LockedTable = { table: 'api_keys', key: 'id', order: 'id COLLATE "C"' };

/**
 * A writing statement's condition: the rows `where` chooses, locked in key order by a subquery
 * run once before the statement reads a row (an ARRAY of them, an InitPlan), so the statement
 * writes only rows already locked, and finds them by its primary key. (As `IN (subquery)` the
 * planner joined the subquery's keys to a scan of the whole table.) One statement, one
 * snapshot: a row stored again between a separate lock and the write could not escape the
 * order. `limit`: at most that many rows (a batch).
 */
export function chosenInKeyOrder(t: LockedTable, where: string, limit?: number): string {
  return `${t.key} = ANY (ARRAY(SELECT ${t.key} FROM ${t.table} WHERE ${where} ORDER BY ${t.order}${limit ? ` LIMIT ${limit}` : ''} FOR UPDATE))`;
}
