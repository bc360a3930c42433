import Database from 'better-sqlite3';
import { ENTRY_SELECT, PAGE_CACHE_KIB, type RawRow } from './cache-statements.js';

/**
 * The server's hit reads of cache.db, on a connection of their own that never writes, with the
 * SQLite-tier hits of one event-loop turn sharing one read transaction.
 *
 * Why: a read outside a transaction opens and closes one of its own, taking and dropping the
 * WAL read lock (two `fcntl`) and looking at the file (`fstat`): ~9–10 µs of a 1M hit's ~30 µs
 * read, measured alone (BENCHMARKS.md §4, "where a 1M hit's extra CPU goes"). Under load a turn
 * carries many hits; from its second SQLite read on, they run inside one deferred transaction
 * ended at the end of the turn (setImmediate). The first read of a turn runs alone, so a turn
 * that carries one hit (a light load) pays nothing more than before.
 *
 * Why a connection of its own: a transaction held open on the writing connection would take
 * in the writes of the same turn (better-sqlite3 nests them as savepoints of it) or fail them
 * with SQLITE_BUSY_SNAPSHOT. This one only reads, so the snapshot can only be out of date, and
 * CacheStore ends it wherever that would matter:
 * - before each of its own writes to cache.db (a put, a flush step, eviction, a purge), so a
 *   read after the write sees it, and so the snapshot never keeps the writer from restarting
 *   the WAL;
 * - when `PRAGMA data_version` shows another connection's commit (the CLI's purge), so what
 *   the CLI changed is read by the very next request, as without it (data-version.ts).
 * A snapshot lasts one turn at most, so the Checkpointer's worker is never kept out for long.
 */
export class TurnReads {
  private readonly db: Database.Database;
  private readonly get: Database.Statement<[string], RawRow>;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  /** SQLite reads in the current turn: the second one opens the shared transaction. */
  private reads = 0;
  private scheduled = false;

  /** `file`: cache.db, already opened (and migrated) by the writing connection. */
  constructor(file: string, busyTimeoutMs: number) {
    this.db = new Database(file, { fileMustExist: true, timeout: busyTimeoutMs });
    this.db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    this.get = this.db.prepare<[string], RawRow>(ENTRY_SELECT).raw();
    this.begin = this.db.prepare('BEGIN');
    this.commit = this.db.prepare('COMMIT');
  }

  /** `key`'s row, read within this turn's snapshot when the turn has read before. */
  row(key: string): RawRow | undefined {
    if (this.reads++ === 1) this.begin.run();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.endTurn);
    }
    return this.get.get(key);
  }

  /** End the snapshot now: the next read sees every commit made before this call. */
  end(): void {
    this.reads = 0;
    if (this.db.inTransaction) this.commit.run();
  }

  close(): void {
    if (this.db.open) {
      this.end();
      this.db.close();
    }
  }

  private readonly endTurn = (): void => {
    this.scheduled = false;
    if (this.db.open) this.end();
  };
}
