import { statSync } from 'node:fs';
import { WAL_TRUNCATE_ABOVE_BYTES } from './checkpointer.js';

/** The pause between two batches while the WAL waits to be truncated: longer than the Checkpointer's tries at it (10, 2 ms apart). */
const WAL_PAUSE_MS = 25;

/** The size of `dbFile`'s WAL now (0 when there is none, or for an in-memory database). */
export function walBytes(dbFile: string): number {
  try {
    return statSync(`${dbFile}-wal`).size;
  } catch {
    return 0;
  }
}

/**
 * What the server's bulk deletes (an admin purge, a ledger retention pass) wait between two
 * batches: a turn of the event loop, or, while the WAL is past the Checkpointer's truncation
 * size, 25 ms. A truncation needs a moment without writes, and batches a turn apart (~0.1 ms)
 * never left it one: at 1M entries a purge grew cache.db's WAL to 540 MB, whose truncation then
 * held the write lock for 142 ms (BENCHMARKS.md §9).
 */
export function betweenBatches(walSize: number): Promise<void> {
  return new Promise((r) => (walSize > WAL_TRUNCATE_ABOVE_BYTES ? setTimeout(r, WAL_PAUSE_MS) : setImmediate(r)));
}
