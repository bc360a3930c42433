import type { CacheEntry, NewEntry } from '../../domain/cache-entry.js';

/** A CacheEntry as the SQLite cache returns it and HotEntries holds it. */
export interface StoredEntry extends CacheEntry {
  /**
   * The row's rowid in cache.db: `access` rows refer to it, and recordHit counts by it (a
   * number, where the key would be a ~100-byte string kept alive until the flush).
   */
  readonly id: number;
}

/**
 * A CacheEntry with its own fields only, in one shape. Entries built here live in memory
 * (CacheStore.put's, and the copies HotEntries.offer takes), apart from the short-lived entries
 * `CacheStore.get` builds (cache-statements.ts rowEntry): see HotEntries.offer for why the
 * allocation sites must differ.
 */
export function entryOf(e: NewEntry, size: number, id: number): StoredEntry {
  return {
    id,
    key: e.key,
    endpoint: e.endpoint,
    identity: e.identity,
    status: e.status,
    data: e.data,
    meta: e.meta,
    errorCode: e.errorCode,
    errorMessage: e.errorMessage,
    storedAt: e.storedAt,
    freshAsOf: e.freshAsOf,
    credits: e.credits,
    size,
  };
}
