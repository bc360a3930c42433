import type { CacheCounters } from './cache-counters.js';
import type { DB } from './db.js';
import type { HitCounts } from './hit-counts.js';
import type { HotEntries } from './hot-entries.js';
import type { MaybePromise } from '../ports.js';
import { betweenBatches } from './batch-pause.js';

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
  /** The size of the database's WAL file now. */
  walBytes(): number;
}

/** Entries deleted per transaction by the server's purge: a few milliseconds of work per turn. */
export const PURGE_BATCH = 500;

/**
 * How long one of the server's purge batches waits for a lock another connection holds, from a
 * timer and not on the event loop (NoWaitWrites.alone): the admin's request waits, as the CLI
 * waits for the server (db.ts's busy timeout). Past it the purge answers 503, the batches
 * before it committed.
 */
export const PURGE_LOCK_WAIT_MS = 5_000;

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
export async function purgeInBatches(
  cache: BatchPurgeable,
  filter: PurgeFilter,
  batch = PURGE_BATCH,
  /** How each batch's transaction is run: the server's never waits for a lock on the event loop. */
  write: (batch: () => number) => MaybePromise<number> = (b) => b(),
): Promise<number> {
  if (!purgeWhere(filter)) return 0;
  const upTo = cache.lastRowid();
  let purged = 0;
  for (;;) {
    // Shutdown closed the database between two batches: what is done stays done (each batch committed).
    if (!cache.isOpen()) return purged;
    // Also when it closes while a batch waits for a lock: 0 ends the purge there.
    const n = await write(() => (cache.isOpen() ? cache.purgeBatch(filter, upTo, batch) : 0));
    purged += n;
    if (n < batch) return purged;
    await betweenBatches(cache.walBytes());
  }
}

/**
 * CacheStore's purges. A deleted entry takes its `access` row and its pending hit count with
 * it and leaves the counters' size, in the deleting transaction; its copy in memory goes
 * after the commit.
 */
export class CachePurger {
  private readonly accessDeleteStmt;

  constructor(
    private readonly db: DB,
    private readonly counters: CacheCounters,
    private readonly counts: HitCounts,
    private readonly hot: HotEntries,
  ) {
    this.accessDeleteStmt = db.prepare<[number]>('DELETE FROM access WHERE id = ?');
  }

  /** Every entry of `filter` in one transaction: for the CLI. The server purges in batches (purgeInBatches). */
  purge(filter: PurgeFilter): number {
    const w = purgeWhere(filter);
    if (!w) return 0;
    const n = this.db.transaction(() => {
      if (filter.all) {
        const n = this.db.prepare('DELETE FROM entries').run().changes;
        this.db.prepare('DELETE FROM access').run();
        this.counters.zeroSize();
        this.counts.forgetRows();
        return n;
      }
      const rows = this.db.prepare<string[], { rowid: number; size: number }>(`DELETE FROM entries WHERE ${w.where} RETURNING rowid, size`).all(...w.params);
      this.forgetDeleted(rows);
      return rows.length;
    }).immediate();
    // Purges are rare: forget every entry held rather than work out which were purged.
    this.hot.clear();
    return n;
  }

  /** The highest rowid stored: entries stored later have higher ones. */
  lastRowid(): number {
    return this.db.prepare<[], number>('SELECT COALESCE(MAX(rowid), 0) FROM entries').pluck().get()!;
  }

  /** One transaction deleting at most `limit` of `filter`'s entries with rowid ≤ `upTo`; returns how many. */
  purgeBatch(filter: PurgeFilter, upTo: number, limit: number): number {
    const w = purgeWhere(filter);
    if (!w) return 0;
    const sql = `DELETE FROM entries WHERE rowid IN (SELECT rowid FROM entries WHERE rowid <= ? ${w.where ? 'AND ' + w.where : ''} LIMIT ?) RETURNING rowid, key, size`;
    const rows = this.db.transaction(() => {
      const rows = this.db.prepare<unknown[], { rowid: number; key: string; size: number }>(sql).all(upTo, ...w.params, limit);
      this.forgetDeleted(rows);
      return rows;
    }).immediate();
    for (const r of rows) this.hot.forget(r.key);
    return rows.length;
  }

  /** Inside the deleting transaction: their access rows, hit counts and size go too. */
  private forgetDeleted(rows: ReadonlyArray<{ rowid: number; size: number }>): void {
    let bytes = 0;
    for (const r of rows) {
      this.accessDeleteStmt.run(r.rowid);
      this.counts.forget(r.rowid);
      bytes += r.size;
    }
    this.counters.addSize(-bytes, -rows.length);
  }
}
