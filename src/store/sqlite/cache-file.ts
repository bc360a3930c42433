import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { StorageLog } from '../backend.js';
import { cacheOriginIdentity, checkCacheOrigin, recordCacheOrigin } from './cache-origin.js';
import { CACHE_MIGRATIONS } from './cache-schema.js';
import { openDatabase, type DB, type OpenOptions } from './db.js';

export function cacheDbPath(config: Readonly<Config>): string {
  return join(config.dataDir, 'cache.db');
}

/**
 * cache.db holds only re-fetchable answers, so an unreadable one is moved aside and
 * replaced rather than stopping the gateway.
 */
export function openCacheDb(config: Readonly<Config>, log?: StorageLog, opts?: OpenOptions): DB {
  const file = cacheDbPath(config);
  try {
    return openDatabase(file, CACHE_MIGRATIONS, opts);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (!/^SQLITE_(CORRUPT|NOTADB)/.test(code)) throw err;
    const aside = moveAside(file, 'corrupt');
    log?.warn({ err, aside }, 'cache.db unreadable; moved aside and starting with an empty cache');
    return openDatabase(file, CACHE_MIGRATIONS, { ...opts, mustExist: false });
  }
}

/**
 * The server's cache: entries recorded for another upstream (or of unknown origin) are never
 * served. Such a file is moved aside rather than deleted: refilling it costs credits, and an
 * operator who changed the URL by mistake can change it back and move the file back.
 */
export function openServingCacheDb(config: Readonly<Config>, upstreamUrl: string, log: StorageLog | undefined, opts?: OpenOptions): DB {
  const identity = cacheOriginIdentity(upstreamUrl, config.network.domain);
  let db = openCacheDb(config, log, opts);
  const check = checkCacheOrigin(db, identity);
  if (!check.ok) {
    db.close();
    const aside = moveAside(cacheDbPath(config), 'upstream');
    log?.warn(
      { aside, recorded_upstream: check.recorded ?? 'unknown', upstream: identity },
      `cache.db holds answers from ${check.recorded ?? 'an unrecorded upstream'}, not from ${identity}; moved aside, starting with an empty cache`,
    );
    db = openCacheDb(config, log, opts);
  }
  recordCacheOrigin(db, identity);
  return db;
}

/** Renames the file with its -wal and -shm (a WAL left beside a new file would be replayed into it). */
function moveAside(file: string, why: string): string {
  const aside = `${file}.${why}-${Date.now()}`;
  for (const suffix of ['-wal', '-shm']) if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix);
  renameSync(file, aside);
  return aside;
}
