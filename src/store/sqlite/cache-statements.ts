import type { CacheEntry } from '../../domain/cache-entry.js';
import type { StoredEntry } from './cache-entry.js';
import type { DB } from './db.js';

/*
 * The statements of CacheStore's hit path and put on cache.db's `entries` and `access`
 * tables, prepared once per connection, and the reading of a stored row into an entry.
 */

/** A row as `get` returns it in raw mode (arrays are cheaper to build than objects). */
export type RawRow = [
  rowid: number,
  endpoint: string,
  identity: string,
  status: number,
  data: string | null,
  meta: string | null,
  errorCode: string | null,
  errorMessage: string | null,
  storedAt: number,
  freshAsOf: number | null,
  credits: number,
  size: number,
];

/**
 * SQLite's page cache on cache.db, in KiB (better-sqlite3's default is 16,000). Hits over a
 * large cache touch leaf pages far beyond any page cache; measured at 1M entries a 1 MB to 64 MB
 * page cache costs the same CPU per read, so a small one keeps the process's memory down.
 */
export const PAGE_CACHE_KIB = 2048;

/** The hit read: the columns rowEntry reads, by key. */
export const ENTRY_SELECT =
  'SELECT rowid, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size FROM entries WHERE key = ?';

/** Size the connection's page cache and prepare the entry statements on it. */
export function prepareCacheStatements(db: DB) {
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  return {
    get: db
      .prepare<[string], RawRow>(ENTRY_SELECT)
      .raw(),
    old: db.prepare<[string], { size: number; storedAt: number; freshAsOf: number | null }>('SELECT size, stored_at AS storedAt, fresh_as_of AS freshAsOf FROM entries WHERE key = ?'),
    // An update in place keeps the rowid, which `access` refers to.
    put: db
      .prepare<[CacheEntry], number>(
        `INSERT INTO entries
          (key, endpoint, identity, status, data, meta, error_code, error_message, stored_at, fresh_as_of, credits, size, last_access)
          VALUES (@key, @endpoint, @identity, @status, @data, @meta, @errorCode, @errorMessage, @storedAt, @freshAsOf, @credits, @size, @storedAt)
        ON CONFLICT (key) DO UPDATE SET endpoint = excluded.endpoint, identity = excluded.identity, status = excluded.status,
          data = excluded.data, meta = excluded.meta, error_code = excluded.error_code, error_message = excluded.error_message,
          stored_at = excluded.stored_at, fresh_as_of = excluded.fresh_as_of, credits = excluded.credits, size = excluded.size
        RETURNING rowid`,
      )
      .pluck(),
    accessPut: db.prepare<[number, number]>('INSERT OR REPLACE INTO access (id, hits, last_hit, last_access) VALUES (?, 0, NULL, ?)'),
  };
}

/**
 * The entry of `key`'s row as `get` read it. Short-lived: CacheStore.get hands it out and
 * HotEntries.offer keeps a copy, for the reason given there (pretenuring).
 */
export function rowEntry(key: string, r: RawRow): StoredEntry {
  return {
    id: r[0],
    key,
    endpoint: r[1],
    identity: r[2],
    status: r[3],
    data: r[4],
    meta: r[5],
    errorCode: r[6],
    errorMessage: r[7],
    storedAt: r[8],
    freshAsOf: r[9],
    credits: r[10],
    size: r[11],
  };
}
