/** One stored provider answer, addressed by its cache key (params.ts cacheKey). */
export interface CacheEntry {
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

export type NewEntry = Omit<CacheEntry, 'size'>;

/** The answers the cache stores: data, and the provider's 404 and 513 for the negative cache. */
export const STORED_STATUSES = [200, 404, 513] as const;

export interface CacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
  hitRatio: number | null;
  byEndpoint: Record<string, { entries: number; bytes: number }>;
}
