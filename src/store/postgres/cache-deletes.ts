import type { Pool, PoolClient } from 'pg';
import { inTransaction } from './pool.js';
import { CACHE_ENTRIES, chosenInKeyOrder } from './row-locks.js';

/**
 * Entries deleted per transaction. A purge of a whole 1M-entry cache in one statement, its rows
 * locked in key order, outlasted the 5 s statement timeout.
 */
const DELETE_BATCH = 5_000;

/** Which entries a deletion takes. */
export type Choice =
  /** Every entry: batches of the primary key, each after the last. */
  | { kind: 'all' }
  /**
   * What `where` chooses ($1… are `params`), in batches read through the index that serves it,
   * in `order`: that index's columns after those `where` fixes. Without the order the planner
   * read a large choice (an endpoint's, an expiry's) by scanning the table, the whole of it for
   * the last batch; ordered by key, it walked the primary key from its start.
   */
  | { kind: 'indexed'; where: string; params: readonly unknown[]; order: string }
  /** At most a batch (eviction's head): one statement. */
  | { kind: 'few'; where: string; params: readonly unknown[] };

/** One batch's deletions: how many, their stored size. */
export interface Deleted {
  n: number;
  bytes: number;
}

interface Batch {
  /** Rows the batch chose: fewer than DELETE_BATCH means none were left. */
  chosen: number;
  n: number;
  bytes: string;
  last: string | null;
}

const GONE = `SELECT count(*)::int AS n, COALESCE(sum(size), 0)::bigint AS bytes, max(key) AS last FROM gone`;

/**
 * A batch's statement and values; `after`: the last key the batch before deleted (`all` only).
 * The rows are locked in key order (row-locks.ts), after being chosen, and checked again then;
 * for `all`, rows locked and still there count toward the LIMIT (it is above the lock).
 */
export function batchStatement(c: Choice, after: string | null): [string, unknown[]] {
  if (c.kind === 'all') {
    return [
      `WITH gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, after === null ? 'TRUE' : 'key > $1', DELETE_BATCH)} RETURNING key, size)
       SELECT n AS chosen, * FROM (${GONE}) AS g`,
      after === null ? [] : [after],
    ];
  }
  if (c.kind === 'few') {
    return [`WITH gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, c.where)} RETURNING key, size) SELECT 0 AS chosen, * FROM (${GONE}) AS g`, [...c.params]];
  }
  return [
    `WITH chosen AS MATERIALIZED (SELECT key FROM cache_entries WHERE ${c.where} ORDER BY ${c.order} LIMIT ${DELETE_BATCH}),
     gone AS (DELETE FROM cache_entries WHERE ${chosenInKeyOrder(CACHE_ENTRIES, `key IN (SELECT key FROM chosen) AND (${c.where})`)} RETURNING key, size)
     SELECT (SELECT count(*)::int FROM chosen) AS chosen, * FROM (${GONE}) AS g`,
    [...c.params],
  ];
}

/**
 * Delete the cache entries `choice` takes, DELETE_BATCH a transaction; `afterBatch` runs
 * inside each batch's transaction that deleted any. A purge is therefore seen in batches, not
 * at once; an entry stored while a purge of everything runs may outlive it. Returns how many went.
 */
export async function deleteInBatches(pool: Pool, choice: Choice, afterBatch: (c: PoolClient, gone: Deleted) => Promise<void>): Promise<number> {
  let n = 0;
  let after: string | null = null;
  for (;;) {
    const [sql, values] = batchStatement(choice, after);
    const batch: Batch = await inTransaction(pool, async (c) => {
      const g = (await c.query<Batch>(sql, values)).rows[0]!;
      if (g.n > 0) await afterBatch(c, { n: g.n, bytes: Number(g.bytes) });
      return g;
    });
    n += batch.n;
    if (batch.chosen < DELETE_BATCH) return n;
    after = batch.last;
  }
}
