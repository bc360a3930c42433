/** One stored provider answer, as CacheStore returns it and HotEntries holds it. */
export interface CacheEntry {
  /**
   * The row's rowid in cache.db: `access` rows refer to it, and recordHit counts by it (a
   * number, where the key would be a ~100-byte string kept alive until the flush).
   */
  readonly id: number;
  readonly key: string;
  readonly endpoint: string;
  readonly identity: string;
  readonly status: number;
  /** The provider's `data`, as JSON text (200 only). */
  readonly data: string | null;
  /** Provider `meta` without `cached` and `credits_used`, as JSON object text (200 only). */
  readonly meta: string | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly storedAt: number;
  readonly freshAsOf: number | null;
  /** What the fetch that stored it cost: the credits each hit saves. */
  readonly credits: number;
  readonly size: number;
}

export type NewEntry = Omit<CacheEntry, 'size' | 'id'>;

/**
 * A CacheEntry with its own fields only, in one shape. Entries built here live in memory
 * (CacheStore.put's, and the copies HotEntries.offer takes), apart from the short-lived entries
 * `CacheStore.get` builds: see HotEntries.offer for why the allocation sites must differ.
 */
export function entryOf(e: NewEntry, size: number, id: number): CacheEntry {
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
