export interface PurgeFilter {
  identity?: string;
  endpoint?: string;
  all?: boolean;
}

/** What a purge in batches needs of the store (CacheStore): named here, so that the two modules import one way. */
export interface BatchPurgeable {
  lastRowid(): number;
  isOpen(): boolean;
  purgeBatch(filter: PurgeFilter, upTo: number, limit: number): number;
}

/** Entries deleted per transaction by the server's purge: a few milliseconds of work per turn. */
export const PURGE_BATCH = 500;

/** The WHERE clause selecting `filter`'s entries, or null when it selects none. */
export function purgeWhere(filter: PurgeFilter): { where: string; params: string[] } | null {
  if (filter.all) return { where: '', params: [] };
  if (filter.identity && filter.endpoint) return { where: 'identity = ? AND endpoint = ?', params: [filter.identity, filter.endpoint] };
  if (filter.identity) return { where: 'identity = ?', params: [filter.identity] };
  if (filter.endpoint) return { where: 'endpoint = ?', params: [filter.endpoint] };
  return null;
}

/**
 * The server's purge: `filter`'s entries deleted `batch` at a time, each batch its own
 * transaction, with a turn of the event loop between batches. One transaction deleting
 * 150,000 entries held the event loop for 1.1 s; this holds it for one batch at a time.
 *
 * Only entries stored before the purge began are candidates (rowid bound), so the purge
 * ends even while new answers keep being stored; an entry stored while it runs survives it
 * unless it replaced one of those. Totals and the in-memory entries follow batch by batch.
 */
export async function purgeInBatches(cache: BatchPurgeable, filter: PurgeFilter, batch = PURGE_BATCH): Promise<number> {
  if (!purgeWhere(filter)) return 0;
  const upTo = cache.lastRowid();
  let purged = 0;
  for (;;) {
    // Shutdown closed the database between two batches: what is done stays done (each batch committed).
    if (!cache.isOpen()) return purged;
    const n = cache.purgeBatch(filter, upTo, batch);
    purged += n;
    if (n < batch) return purged;
    await new Promise((r) => setImmediate(r));
  }
}
