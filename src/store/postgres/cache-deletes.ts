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

interface Batch {
  /** Rows the batch chose (at most DELETE_BATCH): fewer means none were left. */
  chosen: number;
  n: number;
  bytes: string;
  last: string | null;
}

/**
 * A batch of every entry: the next DELETE_BATCH keys after the last batch's ($1; the first has
 * none), through the primary key. Each batch starts where the last ended, not at the rows it
 * left dead. Rows locked and still there count toward the LIMIT (it is above the lock).
 */
const allAfter = (first: boolean) =>
  `WITH gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, first ? 'TRUE' : 'key > $1', DELETE_BATCH)} RETURNING key, size)
   SELECT count(*)::int AS chosen, count(*)::int AS n, COALESCE(sum(size), 0)::bigint AS bytes, max(key) AS last FROM gone`;

/**
 * A batch of the entries `where` chooses: up to DELETE_BATCH found through `where`'s own index
 * (in no order: ordered by key, the planner walked the primary key from its start, checking
 * each row, ~0.5 s for an endpoint at 1M entries), then locked in key order and checked again.
 */
const chosenBy = (where: string) =>
  `WITH chosen AS MATERIALIZED (SELECT key FROM cache_entries WHERE ${where} LIMIT ${DELETE_BATCH}),
   gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, `key IN (SELECT key FROM chosen) AND (${where})`)} RETURNING key, size)
   SELECT (SELECT count(*)::int FROM chosen) AS chosen, count(*)::int AS n, COALESCE(sum(size), 0)::bigint AS bytes, max(key) AS last FROM gone`;

/**
 * Delete the cache entries `where` chooses ($1… are `params`; null: every entry),
 * DELETE_BATCH a transaction, each locked in key order (row-locks.ts); `afterBatch` runs inside
 * each batch's transaction that deleted any. A purge is therefore seen in batches, not at once,
 * and an entry stored during a long one may outlive it. Returns how many went.
 */
export async function deleteInBatches(pool: Pool, where: string | null, params: readonly unknown[], afterBatch: (c: PoolClient, gone: Deleted) => Promise<void>): Promise<number> {
  let n = 0;
  let after: string | null = null;
  for (;;) {
    const [sql, values]: [string, readonly unknown[]] = where === null ? [allAfter(after === null), after === null ? [] : [after]] : [chosenBy(where), params];
    const batch: Batch = await inTransaction(pool, async (c) => {
      const g = (await c.query<Batch>(sql, [...values])).rows[0]!;
      if (g.n > 0) await afterBatch(c, { n: g.n, bytes: Number(g.bytes) });
      return g;
    });
    n += batch.n;
    if (batch.chosen < DELETE_BATCH) return n;
    after = batch.last;
  }
}
