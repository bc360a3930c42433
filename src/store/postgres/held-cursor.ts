import type pg from 'pg';
import { isNetworkStoreFailure } from '../storage-errors.js';
import { checkPageRows } from '../usage-rollup-sql.js';

/**
 * The rows of one query a page at a time, from a cursor declared WITH HOLD on a connection of
 * the pool kept for the read: the result is made once, in one snapshot, and kept by the server
 * (spilled to its temporary files when large), and each page is one FETCH, a statement bounded
 * by the pool's timeouts like any other. node-postgres reads a result whole: a report of 438,000
 * rows had been 438,000 objects held at once in the replica's heap.
 *
 * WITH HOLD, not a cursor inside a transaction: the transaction would stay open while the reader
 * waits (a slow client downloading a CSV), holding a snapshot that stops vacuum, and the pool's
 * idle-in-transaction timeout (pool.ts) would end the session after 2 s of waiting. A held cursor
 * outlives the implicit transaction of its DECLARE.
 *
 * `afterOpen` runs once the result is made and before any page is given: a check that may throw
 * (the ledger's refusal of a pruned range). Stopping early, or a refusal, closes the cursor; a
 * connection that failed, or could not close it, is dropped rather than returned to the pool.
 */
export async function* heldCursorPages<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  sql: string,
  params: readonly unknown[],
  pageRows: number,
  afterOpen: () => Promise<void> = async () => {},
): AsyncGenerator<R[]> {
  // Written into the FETCH: a number, checked as one.
  checkPageRows(pageRows);
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(`DECLARE held_pages NO SCROLL CURSOR WITH HOLD FOR ${sql}`, [...params]);
    await afterOpen();
    for (;;) {
      const { rows } = await client.query<R>(`FETCH FORWARD ${pageRows} FROM held_pages`);
      if (rows.length > 0) yield rows;
      if (rows.length < pageRows) return;
    }
  } catch (err) {
    if (isNetworkStoreFailure(err)) broken = err as Error;
    throw err;
  } finally {
    // CLOSE ALL: also after a DECLARE that failed, when there is no cursor to name.
    if (!broken) await client.query('CLOSE ALL').catch((e: unknown) => (broken = e as Error));
    // Released with an error, the connection is closed, and whatever it held with it.
    client.release(broken);
  }
}
