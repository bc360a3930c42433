import type { PoolClient } from 'pg';

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
export type LockedTable = { table: 'cache_entries'; key: 'key' } | { table: 'api_keys'; key: 'id' };

export const CACHE_ENTRIES: LockedTable = { table: 'cache_entries', key: 'key' };
export const API_KEYS: LockedTable = { table: 'api_keys', key: 'id' };

/**
 * Inside a transaction, before a statement that writes these rows: lock them, sorted, so the
 * statement then touches only rows this transaction already holds. One row comes back.
 */
export async function lockInKeyOrder(c: PoolClient, t: LockedTable, keys: readonly string[]): Promise<void> {
  await c.query(`SELECT count(*) FROM (SELECT 1 FROM ${t.table} WHERE ${t.key} = ANY ($1) ORDER BY ${t.key} FOR UPDATE) AS locked`, [keys]);
}

/**
 * A DELETE's condition: the rows `where` chooses, locked in key order by the subquery before
 * the DELETE reaches them (it deletes only rows the subquery returned, each already locked).
 */
export function chosenInKeyOrder(t: LockedTable, where: string): string {
  return `${t.key} IN (SELECT ${t.key} FROM ${t.table} WHERE ${where} ORDER BY ${t.key} FOR UPDATE)`;
}
