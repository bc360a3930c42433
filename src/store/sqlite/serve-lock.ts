import Database from 'better-sqlite3';
import { realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DataDirInUse, StartupError } from '../../domain/startup-error.js';
import { createOwnerOnly, openError, type DB } from './db.js';

/** The lock file in the data directory: a SQLite file holding nothing but the last holder's pid. */
export const SERVE_LOCK_FILE = 'serve.lock';

/**
 * Data directories held by a server of this process, by real path. SQLite sees its own
 * connections' locks within a process too, but the set says so before anything opens the
 * file: closing any descriptor of a file drops every POSIX lock the process holds on it.
 */
const heldHere = new Set<string>();

/**
 * One `serve` per data directory (issue #13). The embedded backend counts short rate windows
 * in memory and writes them behind, so a second server on the same directory would admit
 * every limit again, and would charge the first's calls in flight as a dead process's.
 *
 * The lock is SQLite's own file lock, held for the server's life: `serve.lock` opened in
 * `locking_mode = EXCLUSIVE` and written once, after which the connection keeps its exclusive
 * lock until it closes. It is a POSIX advisory lock, so the OS drops it when the process
 * dies however it dies (`kill -9` leaves nothing that blocks the next start), and — unlike a
 * pid file — it needs no guess at whether a recorded process still runs. Commands (role
 * `cli`) never take it: they run beside a server.
 */
export class ServeLock {
  private constructor(
    private readonly held: string,
    private db: DB | null,
  ) {}

  /** Hold `dataDir` (creating it 0700 and the lock file 0600), or throw DataDirInUse at once. */
  static take(dataDir: string): ServeLock {
    const dir = resolve(dataDir);
    const path = join(dir, SERVE_LOCK_FILE);
    let db: DB | undefined;
    try {
      // Creates with O_EXCL only: an existing file (perhaps locked by this process) is never opened here.
      createOwnerOnly(path);
      const held = realpathSync(dir);
      if (heldHere.has(held)) throw new DataDirInUse(dir);
      db = new Database(path);
      // Never wait: a lock held now is held by a running server, which does not give it up.
      db.pragma('busy_timeout = 0');
      db.pragma('locking_mode = EXCLUSIVE');
      // No journal file beside the lock: its one row may be lost, never the lock.
      db.pragma('journal_mode = MEMORY');
      db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, started_at INTEGER NOT NULL)');
      // The first write takes the exclusive lock, which EXCLUSIVE mode keeps after the commit.
      db.transaction(() => {
        db!.exec('DELETE FROM holder');
        db!.prepare('INSERT INTO holder (pid, started_at) VALUES (?, ?)').run(process.pid, Date.now());
      }).exclusive();
      heldHere.add(held);
      return new ServeLock(held, db);
    } catch (err) {
      db?.close();
      if (err instanceof DataDirInUse) throw err;
      const code = (err as { code?: string }).code ?? '';
      if (/^SQLITE_BUSY/.test(code)) throw new DataDirInUse(dir);
      // Nothing in it is worth keeping, but only the operator knows that nothing else wrote it.
      if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) throw new StartupError(`${path} is not a Tollgate lock file (${code}); remove it`, code);
      throw openError(err, path);
    }
  }

  /** Give the directory up (closing the connection drops the lock). Idempotent. */
  release(): void {
    if (!this.db) return;
    this.db.close();
    this.db = null;
    heldHere.delete(this.held);
  }
}
