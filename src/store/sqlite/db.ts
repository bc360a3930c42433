import Database from 'better-sqlite3';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { StartupError, uidText } from '../../domain/startup-error.js';

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
   * true: refuse (StartupError, code ENOENT) when the file does not exist instead of creating
   * an empty database, so a command that reads never reports on a database nobody uses.
   */
  mustExist?: boolean;
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
 * The directory and files it creates are the owner's alone (0700, 0600): they hold key
 * hashes, the ledger and paid-for provider data. Failures an operator fixes outside
 * Tollgate (permissions, a damaged file, a newer schema) are StartupErrors naming the path.
 */
export function openDatabase(file: string, migrations: readonly Migration[], opts: OpenOptions = {}): DB {
  if (file === ':memory:') return configure(new Database(file), migrations, opts);
  const path = resolve(file);
  if (opts.mustExist && !existsSync(path)) throw new StartupError(`no database at ${path}`, 'ENOENT');
  let db: DB | undefined;
  try {
    if (!opts.mustExist) createOwnerOnly(path);
    db = new Database(path, { fileMustExist: opts.mustExist === true });
    return configure(db, migrations, opts);
  } catch (err) {
    db?.close();
    throw openError(err, path);
  }
}

/**
 * SQLite creates files 0644 (less the umask) and gives the -wal and -shm files the mode of
 * the database file, so creating the empty file 0600 first makes all three owner-only.
 */
export function createOwnerOnly(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err;
  }
}

function configure(db: DB, migrations: readonly Migration[], opts: OpenOptions): DB {
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

/** The everyday causes as one line with the path; anything else unchanged (a bug has a stack). */
export function openError(err: unknown, path: string): unknown {
  if (err instanceof StartupError) return err;
  const code = (err as { code?: string }).code ?? '';
  const fix = 'fix its owner or mode, or set --data-dir / TOLLGATE_DATA_DIR';
  // A volume mounted read-only (`-v …:/data:ro`): no owner or mode fixes that. SQLite says
  // only CANTOPEN or READONLY when the files already exist there, so access(2) tells.
  if (code === 'EROFS' || (/^SQLITE_(CANTOPEN|READONLY)/.test(code) && onReadOnlyFs(dirname(path)))) {
    const at = (err as { path?: string }).path ?? path;
    return new StartupError(`data directory ${dirname(path)} is on a read-only file system (${code} on ${at}); mount it read-write, or set --data-dir / TOLLGATE_DATA_DIR`, code);
  }
  if (/^(EACCES|EPERM)$/.test(code)) {
    const at = (err as { path?: string }).path ?? dirname(path);
    return new StartupError(`data directory ${dirname(path)} is not writable by ${uidText()} (${code} on ${at}); ${fix}`, code);
  }
  if (/^SQLITE_(CANTOPEN|READONLY|PERM|AUTH)/.test(code)) {
    return new StartupError(`cannot open ${path} for writing: it or its directory is not writable by ${uidText()} (${code}); ${fix}`, code);
  }
  if (/^(ENOTDIR|EEXIST)$/.test(code)) return new StartupError(`cannot create ${path}: a file is in the way of its directory (${code})`, code);
  if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) return new StartupError(`${path} is damaged or not a SQLite database (${code})`, code);
  return err;
}

function onReadOnlyFs(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return false;
  } catch (err) {
    return (err as { code?: string }).code === 'EROFS';
  }
}

function migrate(db: DB, migrations: readonly Migration[]): void {
  // Each step reads the version inside its own IMMEDIATE transaction: two processes starting
  // together (the server and a CLI command) then apply each step once, one after the other.
  const step = db
    .transaction((): boolean => {
      const current = db.pragma('user_version', { simple: true }) as number;
      if (current > migrations.length) {
        throw new StartupError(`${db.name}: database schema version ${current} is newer than this Tollgate (${migrations.length}); upgrade Tollgate`);
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
