import type { Pool, PoolClient } from 'pg';
import { inTransaction } from './pool.js';
import { CACHE_ENTRIES, chosenInKeyOrder } from './row-locks.js';

/**
 * Entries deleted per transaction. A purge of a whole 1M-entry cache in one statement, its rows
 * locked in key order, outlasted the 5 s statement timeout.
 */
const DELETE_BATCH = 5_000;

/** One batch's deletions: how many, their stored size. */
export interface Deleted {
  n: number;
  bytes: number;
}

/**
 * Delete the cache entries `where` chooses ($1… are `params`), DELETE_BATCH a transaction, in
 * key order (row-locks.ts); `afterBatch` runs inside each batch's transaction that deleted
 * any. A purge is therefore seen in batches, not at once. Returns how many went.
 */
export async function deleteInBatches(pool: Pool, where: string, params: readonly unknown[], afterBatch: (c: PoolClient, gone: Deleted) => Promise<void>): Promise<number> {
  let n = 0;
  let after: string | null = null;
  for (;;) {
    // After the last batch's last key (in the database's order, so max() there): its rows are not walked again.
    const values: unknown[] = after === null ? [...params] : [...params, after];
    const chosen: string = after === null ? where : `(${where}) AND key > $${values.length}`;
    const batch: { n: number; bytes: string; last: string | null } = await inTransaction(pool, async (c) => {
      const r = await c.query<{ n: number; bytes: string; last: string | null }>(
        `WITH gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, chosen, DELETE_BATCH)} RETURNING key, size)
         SELECT count(*)::int AS n, COALESCE(sum(size), 0)::bigint AS bytes, max(key) AS last FROM gone`,
        values,
      );
      const g = r.rows[0]!;
      if (g.n > 0) await afterBatch(c, { n: g.n, bytes: Number(g.bytes) });
      return g;
    });
    n += batch.n;
    // The LIMIT counts rows locked and still chosen: fewer than a batch means none are left.
    if (batch.n < DELETE_BATCH) return n;
    after = batch.last;
  }
}
