import { isPromise, type MaybePromise, type ResponseCache } from '../ports.js';
import type { NoWaitWrites } from './no-wait.js';
import { DataVersionWatch } from './data-version.js';
import type { DB } from './db.js';
import { entryOf, type StoredEntry } from './cache-entry.js';
import { prepareCacheStatements, rowEntry } from './cache-statements.js';
import { replacesHeld, type CacheEntry, type NewEntry, type CacheStats } from '../../domain/cache-entry.js';
import { HitCountWriter, HitCounts } from './hit-counts.js';
import { DEFAULT_MEMORY_MAX_BYTES, HotEntries } from './hot-entries.js';
import { CachePurger, type PurgeFilter } from './cache-purge.js';
import { CacheCounters } from './cache-counters.js';
import { CacheEviction } from './cache-eviction.js';
import { STATS_SQL, statsOf, type Counter, type EndpointTotals } from './cache-stats.js';
import { MAINTENANCE_STEP, type CacheStoreOptions } from './cache-options.js';
import type { TurnReads } from './turn-reads.js';
import type { ReadWorker } from './read-worker.js';
import { gated, type WriteGate } from '../write-gate.js';
import { walBytes } from './batch-pause.js';

export { CACHE_MIGRATIONS } from './cache-schema.js';
export type { CacheStats } from './cache-stats.js';
export { DEFAULT_MEMORY_MAX_BYTES } from './hot-entries.js';
export { MAINTENANCE_STEP, type CacheStoreOptions } from './cache-options.js';

/**
 * cache.db's response cache: the hit path (get, recordHit, flush), put, and sync with other
 * connections. Eviction, purges and the `counters` table are CacheEviction, CachePurger and
 * CacheCounters, which share the hit counts and the entries held in memory.
 */
export class CacheStore implements ResponseCache {
  private readonly stmts: ReturnType<typeof prepareCacheStatements>;
  private readonly hitWriter: HitCountWriter;
  private readonly dataVersion: DataVersionWatch;
  private readonly counters: CacheCounters;
  private readonly counts = new HitCounts();
  /** Recently read or written entries: dropped whole when another connection commits to the file. */
  private readonly hot: HotEntries;
  private readonly gate: WriteGate | null;
  private readonly reader: ReadWorker | null;
  private readonly reads: TurnReads | null;
  private readonly eviction: CacheEviction;
  private readonly purger: CachePurger;
  private readonly steps: { rows: number; budgetMs: number };
  /** put's transaction, made once: better-sqlite3's transaction() builds four wrappers per call (~10 µs a miss). Null: a fresher entry is held. */
  private readonly writeEntry: (e: NewEntry, size: number) => number | null;

  constructor(
    private readonly db: DB,
    opts: CacheStoreOptions = {},
  ) {
    this.hot = new HotEntries(opts.memoryMaxBytes ?? DEFAULT_MEMORY_MAX_BYTES);
    this.gate = opts.gate ?? null;
    this.reader = opts.reader ?? null;
    this.reads = opts.turnReads ?? null;
    this.steps = opts.maintenanceStep ?? MAINTENANCE_STEP;
    this.stmts = prepareCacheStatements(db);
    this.counters = new CacheCounters(db);
    // IMMEDIATE: the write lock is taken up front. A deferred transaction that reads first and
    // then writes cannot wait for a lock another connection holds (SQLite skips the busy handler
    // on that upgrade, to avoid a deadlock): it failed at once with SQLITE_BUSY.
    this.writeEntry = db.transaction((e: NewEntry, size: number): number | null => {
      this.reads?.end();
      const held = this.stmts.old.get(e.key);
      if (!replacesHeld(held ?? null, e)) return null;
      const rowid = this.stmts.put.get({ ...e, size })!; // calledAt, not a column, is ignored
      this.stmts.accessPut.run(rowid, e.storedAt);
      this.counters.addSize(size - (held?.size ?? 0), held === undefined ? 1 : 0);
      return rowid;
    }).immediate;
    this.hitWriter = new HitCountWriter(db, this.counters, this.counts);
    this.eviction = new CacheEviction(db, this.counters, this.counts, this.hot, opts.evictionHead);
    this.purger = new CachePurger(db, this.counters, this.counts, this.hot);
    // Looked at before the totals are read: a commit in between only costs a re-read.
    this.dataVersion = new DataVersionWatch(db);
    this.counters.read();
  }

  get(key: string): StoredEntry | null {
    // With turn reads, always: a snapshot older than another connection's commit must end.
    if (this.hot.maxBytes > 0 || this.reads) this.sync();
    const held = this.hot.get(key);
    if (held !== undefined) return held;
    const r = this.reads ? this.reads.row(key) : this.stmts.get.get(key);
    if (!r) return null;
    const e = rowEntry(key, r);
    // Never kept itself: `offer` holds a copy, for the reason given there (pretenuring).
    this.hot.offer(e);
    return e;
  }

  put(e: NewEntry): boolean {
    // gated() writes at once: a value, never a promise.
    return this.putWith(e, (write) => gated(this.gate, write)) as boolean;
  }

  /** As put(), through `noWait` (the server's miss path): a promise while another connection holds the lock. */
  putNoWait(e: NewEntry, noWait: NoWaitWrites): MaybePromise<boolean> {
    return this.putWith(e, (write) => noWait.run(write));
  }

  private putWith(e: NewEntry, run: (write: () => number | null) => MaybePromise<number | null>): MaybePromise<boolean> {
    // Bytes of the stored text plus a fixed allowance for the row's other columns and index entries.
    const text = (x: string | null) => (x === null ? 0 : Buffer.byteLength(x));
    const size = text(e.key) * 2 + text(e.identity) + text(e.data) + text(e.meta) + text(e.errorMessage) + 64;
    // rowid null: not stored, a fresher entry is held (what memory holds of the key, if anything).
    const stored = (rowid: number | null): boolean => {
      if (rowid !== null) this.hot.put(entryOf(e, size, rowid));
      return rowid !== null;
    };
    const rowid = run(() => this.writeEntry(e, size));
    return isPromise(rowid) ? rowid.then(stored) : stored(rowid);
  }

  /** Count a hit on an entry `get` returned. */
  recordHit(e: CacheEntry, at: number): void {
    this.counts.hit(e as StoredEntry, at);
  }

  recordMiss(): void {
    this.counts.miss();
  }

  /** Write the batched hit statistics, all of them (shutdown, reports, the CLI). */
  flush(): void {
    while (!this.counts.empty) this.flushStep(Infinity, Infinity);
  }

  /**
   * One transaction of batched hit statistics: at most `maxRows` rows, and no row started
   * after `budgetMs` (the server's maintenance pass yields between steps). True when rows of
   * the drain under way remain. A failed write keeps the rows and totals for the next flush.
   */
  flushStep(maxRows = this.steps.rows, budgetMs = this.steps.budgetMs): boolean {
    if (this.counts.empty) return false;
    this.beforeWrite();
    return this.hitWriter.step(maxRows, budgetMs);
  }

  /**
   * Delete dead entries and, beyond `maxBytes`, least-recently-used ones down to 90% of it,
   * in small transactions so that a request never waits long behind eviction.
   * `deadBefore` gives, per endpoint and status, the stored time before which an entry is dead.
   */
  maintain(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): number {
    let removed = 0;
    for (const n of this.maintainSteps(maxBytes, deadBefore)) removed += n;
    return removed;
  }

  /**
   * maintain() as steps, each one bounded transaction (a chunk of the hit-count flush, a batch
   * of deletions), yielding how many entries it deleted: the server's pass (ServingCache)
   * gives the event loop a turn between two steps.
   */
  *maintainSteps(maxBytes: number, deadBefore: (endpoint: string, status: number) => number): Generator<number, void> {
    while (this.flushStep()) yield 0;
    yield 0;
    this.beforeWrite();
    for (const removed of this.eviction.steps(maxBytes, deadBefore, this.steps.budgetMs)) {
      yield removed;
      // Another connection may have committed meanwhile (the CLI's purge): the totals follow.
      this.beforeWrite();
    }
  }

  /** Every entry of `filter` in one transaction: for the CLI. The server purges in batches (cache-purge.ts). */
  purge(filter: PurgeFilter): number {
    this.reads?.end();
    return this.purger.purge(filter);
  }

  /** False once the database is closed (at shutdown): long batched work stops there. */
  isOpen(): boolean {
    return this.db.open;
  }

  /** The size of cache.db's WAL file now (0 when there is none). */
  walBytes(): number {
    return walBytes(this.db.name);
  }

  /** The highest rowid stored: entries stored later have higher ones. */
  lastRowid(): number {
    return this.purger.lastRowid();
  }

  /** One transaction deleting at most `limit` of `filter`'s entries with rowid ≤ `upTo`; returns how many. */
  purgeBatch(filter: PurgeFilter, upTo: number, limit: number): number {
    this.beforeWrite();
    return this.purger.purgeBatch(filter, upTo, limit);
  }

  totalBytes(): number {
    this.sync();
    return this.counters.bytes;
  }

  entryCount(): number {
    this.sync();
    return this.counters.entries;
  }

  /** The in-memory copy: how many entries it holds, their charged bytes, and its bound. */
  memoryUsage(): { entries: number; bytes: number; maxBytes: number } {
    return this.hot.usage();
  }

  /** Whether `key`'s entry is held in memory (without counting as a use). */
  holds(key: string): boolean {
    return this.hot.has(key);
  }

  stats(): CacheStats {
    this.flush();
    return statsOf(this.db.prepare<[], EndpointTotals>(STATS_SQL[0].sql).all(), this.db.prepare<[], Counter>(STATS_SQL[1].sql).all());
  }

  /** As stats(), read by the worker when there is one: counting a large cache never blocks the server. */
  async readStats(): Promise<CacheStats> {
    if (!this.reader) return this.stats();
    this.flush();
    const [byEndpoint, counters] = await this.reader.read(this.db.name, STATS_SQL);
    return statsOf(byEndpoint as EndpointTotals[], counters as Counter[]);
  }

  /** Before a write of this connection: totals in step with other connections, and the hit reads' snapshot ended so that they see it. */
  private beforeWrite(): void {
    this.sync();
    this.reads?.end();
  }

  /**
   * When another connection (the CLI's purge, another process) has committed to cache.db,
   * every entry held in memory may be stale, and so are the totals. PRAGMA data_version is
   * looked at again once the last look is 10 ms old (DataVersionWatch), and the CLI returns no
   * sooner than that after its commit, so a request sent after it returned never misses what
   * the CLI changed. Called before reading rows that memory will keep, so that a commit
   * landing after the look only costs an extra clear at the next one.
   */
  private sync(): void {
    if (!this.dataVersion.changed()) return;
    this.reads?.end();
    this.hot.clear();
    this.counts.forgetRows(); // recency of a few seconds, not the totals
    this.counters.read();
  }
}
