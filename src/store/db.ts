import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type DB = Database.Database;

/** One schema step; applied in order inside a transaction, recorded in PRAGMA user_version. */
export type Migration = (db: DB) => void;

export interface OpenOptions {
  /**
   * false: this connection never checkpoints the WAL itself (`wal_autocheckpoint = 0`), so a
   * commit never pays for a checkpoint's fsyncs; a Checkpointer (checkpointer.ts) must then
   * run them. Default true (SQLite's 1000-page auto-checkpoint), right for short-lived
   * connections such as the CLI's.
   */
  autoCheckpoint?: boolean;
  /**
   * How long a write waits for another connection's lock before SQLITE_BUSY; 5 s by default
   * (right for the CLI, which should wait for the server). The server's own connections use a
   * short one: their writes run on the event loop, so every millisecond waited is a stall of
   * every request, and a WriteGate turns a lock held for long into fast refusals instead.
   */
  busyTimeoutMs?: number;
}

/**
 * Open a SQLite file for the gateway: WAL so the CLI can write while the server reads,
 * a busy timeout so those writers wait rather than fail, and versioned migrations.
 */
export function openDatabase(file: string, migrations: readonly Migration[], opts: OpenOptions = {}): DB {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  if (opts.autoCheckpoint === false) db.pragma('wal_autocheckpoint = 0');
  migrate(db, migrations);
  // Migrations run once, at startup, and may wait for the CLI like any CLI write does.
  if (opts.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${opts.busyTimeoutMs}`);
  return db;
}

function migrate(db: DB, migrations: readonly Migration[]): void {
  // Each step reads the version inside its own IMMEDIATE transaction: two processes starting
  // together (the server and a CLI command) then apply each step once, one after the other.
  const step = db
    .transaction((): boolean => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current > migrations.length) {
        throw new Error(`database schema version ${current} is newer than this Tollgate (${migrations.length}); upgrade Tollgate`);
      }
      if (current === migrations.length) return false;
      migrations[current]!(db);
      db.pragma(`user_version = ${current + 1}`);
      return true;
    })
    .immediate;
  while (step()) {
    /* next step */
  }
}
