import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StartupError, StorageMissing } from '../../domain/startup-error.js';
import type { InstallationSource } from '../transfer.js';
import { cacheOriginIdentity } from './cache-origin.js';
import { CACHE_MIGRATIONS } from './cache-schema.js';
import type { DB } from './db.js';
import { InstallationReader } from './export-reader.js';
import { MAIN_MIGRATIONS } from './schema.js';

/** An embedded installation opened for copying elsewhere; close it when done. */
export interface SqliteExport extends InstallationSource {
  close(): void;
}

export interface ExportOptions {
  /** Read cache.db too. */
  readonly cache: boolean;
  /** The upstream the target will serve: cache.db's answers must have come from it (see cache-origin.ts). */
  readonly upstreamUrl: string | null;
  /** The network the target will look up (config network.domain): the entries must be of it too. */
  readonly networkDomain: string;
}

/**
 * Open the data directory `dataDir` of an embedded installation for `tollgate migrate-data`.
 *
 * Each file is opened so that this process is its only user for as long as the copy runs:
 * `locking_mode = EXCLUSIVE` takes SQLite's exclusive lock on the database file at the first
 * read, which fails at once (SQLITE_BUSY, refused here) while a server or a command has the
 * file open, and makes a server started meanwhile fail to open it. A copy therefore sees one
 * state, with no write after it lost. `query_only` refuses every write through the
 * connection: nothing of the source is changed (closing still checkpoints the WAL into the
 * file, as every last connection does, which changes no row). Not `readonly`: a read-only
 * file descriptor cannot take the lock that tells whether anyone else has the file open.
 */
export function openSqliteExport(dataDir: string, opts: ExportOptions): SqliteExport {
  const main = openExclusively(join(dataDir, 'tollgate.db'), 'main', MAIN_MIGRATIONS.length, 'keys list');
  try {
    const cacheDb = opts.cache ? openExclusively(join(dataDir, 'cache.db'), 'cache', CACHE_MIGRATIONS.length, 'cache stats') : null;
    try {
      if (cacheDb) checkOrigin(cacheDb, opts.upstreamUrl, opts.networkDomain);
    } catch (err) {
      cacheDb?.close();
      throw err;
    }
    return new InstallationReader(main, cacheDb);
  } catch (err) {
    main.close();
    throw err;
  }
}

function openExclusively(file: string, part: 'main' | 'cache', version: number, upgrade: string): DB {
  const path = resolve(file);
  const name = part === 'main' ? 'tollgate.db' : 'cache.db';
  if (!existsSync(path)) throw new StorageMissing(part, name, path);
  // timeout 0: a lock held by another process is refused at once, not waited for.
  const db = new Database(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('query_only = ON');
    db.pragma('locking_mode = EXCLUSIVE');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    const at = db.pragma('user_version', { simple: true }) as number;
    if (at !== version) {
      const fix = at < version ? `run \`tollgate ${upgrade} --data-dir <dir>\` of this Tollgate once (it upgrades the file), then retry` : 'use the Tollgate that wrote it';
      throw new StartupError(`${path} has schema version ${at}; this Tollgate copies version ${version}: ${fix}`);
    }
    return db;
  } catch (err) {
    db.close();
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY')) {
      throw new StartupError(`${path} is open in another process (a Tollgate server or command on this data directory?): stop it, then retry`, code);
    }
    if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) throw new StartupError(`${path} is damaged or not a SQLite database (${code})`, code);
    throw err;
  }
}

/**
 * Entries are copied with the upstream cache.db recorded, which must be the target's: answers
 * of another upstream (the simulator's synthetic profiles, a staging provider), or of one
 * nobody recorded, would be copied only to be served by no replica, or by the wrong one.
 */
function checkOrigin(db: DB, upstreamUrl: string | null, networkDomain: string): void {
  if (db.prepare('SELECT 1 FROM entries LIMIT 1').get() === undefined) return;
  const recorded = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE name = 'upstream'").get()?.value ?? null;
  const target = upstreamUrl === null ? null : cacheOriginIdentity(upstreamUrl, networkDomain);
  if (recorded !== null && recorded === target) return;
  throw new StartupError(
    `${db.name} holds answers from ${recorded ?? 'an unrecorded upstream'}, ` +
      `${target === null ? 'and upstream.url is not set' : `not from ${target} (upstream.url, network.domain)`}: they are not copied; drop --cache or set upstream.url (and network.domain) to those they came from`,
  );
}

