import type { CacheCounters } from './cache-counters.js';
import type { StoredEntry } from './cache-entry.js';
import type { DB } from './db.js';
import { sortedByRowid } from './drain-order.js';

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
 *
 * The server writes the counts in chunks (`drain`/`written`), a transaction each with a turn of
 * the event loop between them: at a million entries the rows hit within one maintenance
 * interval are tens of thousands of random pages, 100–250 ms as one transaction. A drain
 * holds the rows sorted when it began; hits counted meanwhile wait for the next drain.
 */
export class HitCounts {
  private rows = new Map<number, { n: number; at: number }>();
  private hits = 0;
  private misses = 0;
  /**
   * The drain under way: rowids ascending, with their counts and last hit times (typed arrays:
   * sorting 20,000 rows as tuples took 12–16 ms at once, as numbers ~1 ms). Those before
   * `drainAt` are written; a forgotten row's count is 0.
   */
  private ids = new Float64Array(0);
  private ns = new Float64Array(0);
  private ats = new Float64Array(0);
  private drainAt = 0;

  hit(e: StoredEntry, at: number): void {
    this.hits++;
    const r = this.rows.get(e.id);
    if (r) {
      r.n++;
      r.at = Math.max(r.at, at);
    } else this.rows.set(e.id, { n: 1, at });
  }

  miss(): void {
    this.misses++;
  }

  /** A row was deleted: its count goes with it, also from a drain under way. */
  forget(rowid: number): void {
    this.rows.delete(rowid);
    let lo = this.drainAt;
    let hi = this.ids.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const id = this.ids[mid]!;
      if (id === rowid) {
        this.ns[mid] = 0;
        return;
      }
      if (id < rowid) lo = mid + 1;
      else hi = mid - 1;
    }
  }

  /** Rows may have been deleted and their rowids reused (another connection's commit, a purge of all). */
  forgetRows(): void {
    this.rows.clear();
    this.endDrain();
  }

  get empty(): boolean {
    return this.hits === 0 && this.misses === 0 && this.rows.size === 0 && this.drainOver;
  }

  /** Everything counted since the last take (a drain's unwritten rows too), and start afresh. */
  take(): HitBatch {
    for (let i = this.drainAt; i < this.ids.length; i++) {
      const n = this.ns[i]!;
      if (n === 0) continue;
      const rowid = this.ids[i]!;
      const at = this.ats[i]!;
      const r = this.rows.get(rowid);
      if (r) {
        r.n += n;
        r.at = Math.max(r.at, at);
      } else this.rows.set(rowid, { n, at });
    }
    this.endDrain();
    const rows = [...this.rows].sort((a, b) => a[0] - b[0]).map(([rowid, { n, at }]) => [rowid, n, at] as const);
    this.rows = new Map();
    const batch = { rows, hits: this.hits, misses: this.misses };
    this.hits = this.misses = 0;
    return batch;
  }

  /**
   * The next chunk to write: the totals counted so far, and the unwritten rows of the drain
   * under way (one begins, taking every row counted, when none is): rowids ascending, counts
   * and times. Write rows from `from` on, as many as fit, then report how far with `written`;
   * a row whose count is 0 was forgotten.
   */
  drain(): { ids: Float64Array; ns: Float64Array; ats: Float64Array; from: number; hits: number; misses: number } {
    if (this.drainOver) this.beginDrain();
    const out = { ids: this.ids, ns: this.ns, ats: this.ats, from: this.drainAt, hits: this.hits, misses: this.misses };
    this.hits = this.misses = 0;
    return out;
  }

  /**
   * After drain(): its rows before `upTo` and its totals are written. When the write failed,
   * call it with the drain's `from` and `failed`: the totals are counted again.
   */
  written(upTo: number, failed?: { hits: number; misses: number }): void {
    if (failed) {
      this.hits += failed.hits;
      this.misses += failed.misses;
      return;
    }
    this.drainAt = Math.max(this.drainAt, upTo);
  }

  /** Whether the next drain() would begin a drain of counted rows (none is under way, and rows wait). */
  get drainDue(): boolean {
    return this.drainOver && this.rows.size > 0;
  }

  /** No drain is under way: every row of the last one is written (or there was none). */
  private get drainOver(): boolean {
    return this.drainAt >= this.ids.length;
  }

  /**
   * Begin the next drain now: every row counted so far, copied and sorted. Its cost grows with
   * the rows (7 ms for 20,000 at 1M entries before sortedByRowid, BENCHMARKS.md §9), so the
   * server makes it a step of its own rather than part of a write's.
   */
  beginDrain(): void {
    [this.ids, this.ns, this.ats] = sortedByRowid(this.rows);
    this.rows = new Map();
    this.drainAt = 0;
  }

  private endDrain(): void {
    [this.ids, this.ns, this.ats, this.drainAt] = [new Float64Array(0), new Float64Array(0), new Float64Array(0), 0];
  }
}

/** Writes HitCounts' drains into `access` and the `counters` totals, a bounded transaction at a time. */
export class HitCountWriter {
  /**
   * The count and last hit time: columns no index holds, so the row alone is rewritten. The
   * LRU index's `last_access` is left to eviction (domain/lru-order.ts): moving the entry there
   * on each hit deleted it from a random page of the index, most of a 1M cache's flush cost.
   */
  private readonly countStmt;
  /** The rows the next step may write (nextRowsPerStep): adapts to what the last step's commit cost. */
  private rowsPerStep = Infinity;

  constructor(
    private readonly db: DB,
    private readonly counters: CacheCounters,
    private readonly counts: HitCounts,
  ) {
    // max: eviction orders by it, and a hit counted out of order (a clock stepped back) must not move it back.
    this.countStmt = db.prepare<[number, number, number]>('UPDATE access SET hits = hits + ?, last_hit = max(COALESCE(last_hit, 0), ?) WHERE id = ?');
  }

  /**
   * One step. Under a budget (the server's pass), the setup of a drain that is due is a step of
   * its own; otherwise one transaction of at most `maxRows` rows of the drain (fewer when the
   * last step's commit ran over, nextRowsPerStep), no row started after `budgetMs`. Without a
   * budget (flush: shutdown, reports, the CLI) neither applies. True when rows of the drain
   * remain. A failed write keeps the rows and totals for the next.
   */
  step(maxRows: number, budgetMs: number): boolean {
    if (budgetMs !== Infinity && this.counts.drainDue) {
      this.counts.beginDrain();
      return true;
    }
    const rows = Math.min(maxRows, this.rowsPerStep);
    const d = this.counts.drain();
    const t0 = performance.now();
    let i = d.from;
    try {
      this.db
        .transaction(() => {
          for (; i < d.ids.length && i - d.from < rows; i++) {
            // The clock is read every 32 rows: a row costs microseconds.
            if ((i - d.from) % 32 === 31 && performance.now() - t0 > budgetMs) break;
            const n = d.ns[i]!;
            if (n === 0) continue;
            this.countStmt.run(n, d.ats[i]!, d.ids[i]!);
          }
          this.counters.addHits(d.hits, d.misses);
        })
        .immediate();
    } catch (err) {
      this.counts.written(d.from, d);
      throw err;
    }
    this.counts.written(i);
    if (budgetMs !== Infinity) this.rowsPerStep = nextRowsPerStep(rows, maxRows, i - d.from, performance.now() - t0, budgetMs);
    return i < d.ids.length;
  }
}

/** The fewest rows a flush step is let down to: below it, each commit's fixed cost dominates. */
export const MIN_ROWS_PER_STEP = 32;

/**
 * How many rows the next flush step may write, from how long this one took, its commit
 * included. The budget bounds a step's row loop as it runs, but not its commit, whose cost is
 * the pages the rows dirtied: at 1M entries, 500 rows at random rowids took ~8 ms to commit
 * after a 4 ms loop (BENCHMARKS.md §9). A step over its budget scales the next down in
 * proportion; a full step well under it lets the next grow back, up to `maxRows`. Pure.
 */
export function nextRowsPerStep(rows: number, maxRows: number, written: number, elapsedMs: number, budgetMs: number): number {
  let next = rows;
  if (elapsedMs > budgetMs) next = Math.floor((rows * budgetMs) / elapsedMs);
  else if (written >= rows && elapsedMs < budgetMs / 2) next = rows * 2;
  return Math.max(MIN_ROWS_PER_STEP, Math.min(maxRows, next));
}
