import { ENDPOINT_NAMES } from '../../domain/endpoints.js';
import { STORED_STATUSES } from '../../domain/cache-entry.js';
import { lruPass, type LruCandidate } from '../../domain/lru-order.js';
import type { CacheCounters } from './cache-counters.js';
import type { DB } from './db.js';
import type { HitCounts } from './hit-counts.js';
import type { HotEntries } from './hot-entries.js';

/** Entries deleted per transaction: a request never waits long behind eviction. */
const EVICT_BATCH = 500;

/**
 * CacheStore's eviction: dead entries, then least-recently-used ones while the cache is over its
 * bound: the head of `access_lru`, an entry hit since its place there was written moved to its
 * last hit instead (domain/lru-order.ts). Every deleted entry takes its `access` row, its pending
 * hit count and its copy in memory with it, and leaves the counters' size.
 */
export class CacheEviction {
  private readonly lruStmt;
  private readonly deleteStmt;
  private readonly deadStmt;
  private readonly accessDeleteStmt;
  private readonly accessRepairStmt;
  private readonly promoteStmt;

  constructor(
    private readonly db: DB,
    private readonly counters: CacheCounters,
    private readonly counts: HitCounts,
    private readonly hot: HotEntries,
    /** Entries of the LRU index's head read per round. */
    private readonly headSize = EVICT_BATCH,
  ) {
    this.lruStmt = db.prepare<[number], LruCandidate<number>>('SELECT id, last_access AS placedAt, last_hit AS lastHit FROM access ORDER BY last_access LIMIT ?');
    // max: the row may have been stored again since the head was read (another process's put).
    this.promoteStmt = db.prepare<[number, number]>('UPDATE access SET last_access = max(last_access, ?) WHERE id = ?');
    this.deleteStmt = db.prepare<[number], { key: string; size: number }>('DELETE FROM entries WHERE rowid = ? RETURNING key, size');
    this.deadStmt = db
      .prepare<[string, number, number], number>(`SELECT rowid FROM entries WHERE endpoint = ? AND status = ? AND stored_at < ? LIMIT ${EVICT_BATCH}`)
      .pluck();
    this.accessDeleteStmt = db.prepare<[number]>('DELETE FROM access WHERE id = ?');
    this.accessRepairStmt = db.prepare(
      'INSERT INTO access (id, hits, last_hit, last_access) SELECT rowid, 0, NULL, stored_at FROM entries WHERE rowid NOT IN (SELECT id FROM access)',
    );
  }

  /**
   * See CacheStore.maintain; the caller has flushed the hit counts and synced. Each step is one
   * transaction, which stops deleting after `budgetMs`, and yields how many entries it deleted.
   */
  *steps(maxBytes: number, deadBefore: (endpoint: string, status: number) => number, budgetMs = Infinity): Generator<number, void> {
    for (const endpoint of ENDPOINT_NAMES) {
      for (const status of STORED_STATUSES) {
        const dead = this.deadStmt.all(endpoint, status, deadBefore(endpoint, status));
        if (dead.length > 0) yield this.deleteRows(dead, -1, budgetMs);
      }
    }
    if (this.counters.bytes <= maxBytes) return;
    const target = maxBytes * 0.9;
    let repaired = false;
    while (this.counters.bytes > target) {
      const head = this.lruStmt.all(this.headSize);
      if (head.length === 0) {
        // Entries without an `access` row (rowids renumbered by a manual VACUUM): give them one.
        if (repaired || this.accessRepairStmt.run().changes === 0) return;
        repaired = true;
        yield 0;
        continue;
      }
      const pass = lruPass(head, head.length < this.headSize);
      yield this.deleteRows(pass.victims, target, budgetMs, pass.promote);
    }
  }

  /**
   * Move the entries used since their place in the order (`promote`), then delete entries by
   * rowid until the byte total is at most `stopAtBytes`, each until `budgetMs` has passed (what
   * is left is read again with the next head: a victim may go whether or not a move before it
   * was made); returns how many went.
   */
  private deleteRows(rowids: number[], stopAtBytes: number, budgetMs: number, promote: ReadonlyArray<readonly [number, number]> = []): number {
    if (rowids.length === 0 && promote.length === 0) return 0;
    const gone: string[] = [];
    const t0 = performance.now();
    this.db.transaction(() => {
      let moved = 0;
      for (const [rowid, lastUse] of promote) {
        if (moved > 0 && moved % 16 === 0 && performance.now() - t0 > budgetMs) break;
        this.promoteStmt.run(lastUse, rowid);
        moved++;
      }
      let bytes = 0;
      for (const [i, rowid] of rowids.entries()) {
        if (this.counters.bytes - bytes <= stopAtBytes) break;
        // At least one move or delete per step, so that eviction always moves on.
        if ((i > 0 || moved > 0) && i % 16 === 0 && performance.now() - t0 > budgetMs) break;
        const r = this.deleteStmt.get(rowid);
        this.accessDeleteStmt.run(rowid);
        this.counts.forget(rowid);
        if (!r) continue;
        bytes += r.size;
        gone.push(r.key);
      }
      this.counters.addSize(-bytes, -gone.length);
    }).immediate();
    for (const key of gone) this.hot.forget(key);
    return gone.length;
  }
}
