import type { StoredEntry } from './cache-entry.js';

/** What a flush writes: per-row counts in rowid order, and the totals for the `counters` table. */
export interface HitBatch {
  /** [rowid, hits, last hit time], ascending rowid: neighbours share pages, which at 1M entries halves the pages touched. */
  readonly rows: ReadonlyArray<readonly [rowid: number, hits: number, at: number]>;
  readonly hits: number;
  readonly misses: number;
}

/**
 * Hits and misses counted in memory between flushes: a write per hit would cost more than the
 * hit. Per row by rowid (a number, where the key would be a ~100-byte string kept alive until
 * the flush). A row deleted meanwhile takes its count with it (`forget`), so that a later row
 * given the same rowid never inherits it; the totals count every hit and miss regardless.
 */
export class HitCounts {
  private rows = new Map<number, { n: number; at: number }>();
  private hits = 0;
  private misses = 0;

  hit(e: StoredEntry, at: number): void {
    this.hits++;
    const r = this.rows.get(e.id);
    if (r) {
      r.n++;
      r.at = at;
    } else this.rows.set(e.id, { n: 1, at });
  }

  miss(): void {
    this.misses++;
  }

  /** A row was deleted: its count goes with it. */
  forget(rowid: number): void {
    this.rows.delete(rowid);
  }

  /** Rows may have been deleted and their rowids reused (another connection's commit, a purge of all). */
  forgetRows(): void {
    this.rows.clear();
  }

  get empty(): boolean {
    return this.hits === 0 && this.misses === 0;
  }

  /** Everything counted since the last take, and start afresh. */
  take(): HitBatch {
    const rows = [...this.rows].sort((a, b) => a[0] - b[0]).map(([rowid, { n, at }]) => [rowid, n, at] as const);
    const batch = { rows, hits: this.hits, misses: this.misses };
    this.rows = new Map();
    this.hits = this.misses = 0;
    return batch;
  }
}
