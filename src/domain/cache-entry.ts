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

/** Entries and bytes stored for one endpoint, and a named counter (hits, misses): what stats are made of. */
export type EndpointTotals = { endpoint: string; n: number; b: number };
export type Counter = { name: string; value: number };

/** The cache's statistics from its per-endpoint totals and its counters. */
export function statsOf(rows: readonly EndpointTotals[], counters: readonly Counter[]): CacheStats {
  const c = Object.fromEntries(counters.map((r) => [r.name, r.value]));
  const hits = c.hits ?? 0;
  const misses = c.misses ?? 0;
  return {
    entries: rows.reduce((a, r) => a + r.n, 0),
    bytes: rows.reduce((a, r) => a + r.b, 0),
    hits,
    misses,
    hitRatio: hits + misses > 0 ? hits / (hits + misses) : null,
    byEndpoint: Object.fromEntries(rows.map((r) => [r.endpoint, { entries: r.n, bytes: r.b }])),
  };
}
